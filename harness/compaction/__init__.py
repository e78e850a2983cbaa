"""Compaction: making a long conversation fit (chapters 04, 05 and 07).

Tier 1 ``microcompact`` clears old tool results; tier 2 (session-memory compaction) comes
with session memory in chapter 07; tier 3 ``summary`` replaces the conversation with a
summary; tier 4 ``auto`` decides, before each request, which tier to use.
"""
