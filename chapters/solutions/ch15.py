"""Chapter 15: background shells, traces and evals."""

from __future__ import annotations

import codecs
from itertools import pairwise


def read_new(log: bytes, offset: int, limit: int, finished: bool = False) -> tuple[str, int]:
    """Exercise 1: the text written since ``offset``, and the offset of the next read."""
    # the decoder keeps back the bytes of a character not yet whole, unless nothing more comes
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text = decoder.decode(log[offset:], final=finished)
    held = len(decoder.getstate()[0])
    if len(text) > limit:  # the newest characters; text[-limit:] would be all of it at 0
        text = f"[{len(text) - limit} characters omitted]\n" + text[len(text) - limit :]
    return text, len(log) - held


def cost_spikes(spans: list[dict], factor: float = 2.0) -> list[tuple[str, str]]:
    """Exercise 2: the model calls whose cost jumped, and why."""
    calls = [
        span
        for span in spans
        if span["attributes"].get("gen_ai.operation.name") == "chat"
        and "harness.cost.usd" in span["attributes"]  # a failed attempt has no usage
        and span["attributes"].get("harness.request.purpose") == "turn"  # not a side request
    ]
    calls.sort(key=lambda span: span["start_time"])  # exporters send spans as they end
    found = []
    for before, call in pairwise(calls):
        cost = call["attributes"]["harness.cost.usd"]
        if cost <= factor * before["attributes"]["harness.cost.usd"]:
            continue
        read = call["attributes"]["gen_ai.usage.cache_read.input_tokens"]
        idle = call["start_time"] - before["end_time"]  # nanoseconds
        if read == 0 and idle > 300 * 10**9:  # the cache lives 5 minutes after its last read
            found.append((call["span_id"], "cache expired"))
        elif read < before["attributes"]["gen_ai.usage.input_tokens"]:
            found.append((call["span_id"], "prefix changed"))
        else:
            found.append((call["span_id"], "new input"))
    return found
