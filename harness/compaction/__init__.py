"""Compaction: making a long conversation fit.

Tier 1 ``microcompact`` clears old tool results; tier 2, session-memory compaction, plugs
into auto-compact (``session_memory=``); tier 3 ``summary`` replaces the conversation with a
summary; tier 4 ``auto`` decides, before each request, which tier to use.
"""
