"""MCP: tools from servers the user configures, over stdio with the official SDK (chapter 14)."""
