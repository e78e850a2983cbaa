"""ScriptedModel: an offline model that speaks the real SDK's types.

It is what lets every chapter run with no API key, deterministically, in milliseconds. It
is built to be *faithful* rather than convenient: whatever the live API would refuse or
truncate, it refuses or truncates the same way, with the SDK's own classes.

* A script is a list of steps: replies, exceptions to raise, or functions of the request
  returning either. Faults can also be scheduled apart from the script.
* ``usage`` is computed, never typed in, with the prompt split by a prompt-cache simulator
  (``harness.model.cache``, chapter 03); cache diagnostics are answered as the API does.
* It checks each request as the API does, and refuses a malformed one with a 400
  ``BadRequestError`` worded as the API words it.
* A reply longer than ``max_tokens`` is cut; the same request sent again with more room gets
  the same step again, as a model regenerates the same answer.
* ``stream(...)`` is ``client.messages.stream(...)``, offline.
* Ids are counters, so stored notebook outputs never change; ``.requests`` keeps every
  request received; and it answers one request at a time, whatever the threads.

Submodules:

* ``script`` -- the script: replies, tool calls, requests, steps, faults, ``said``.
* ``rules`` -- the API's request rules it enforces, in the API's wording.
* ``replies`` -- how a scripted reply is cut to fit, stopped, and regenerated.
* ``streaming`` -- ``ScriptedStream``, what ``ScriptedModel.stream(...)`` returns.
* ``model`` -- ``ScriptedModel`` itself: the Messages API, offline.
"""

from __future__ import annotations

from harness.model.scripted.model import ScriptedModel
from harness.model.scripted.replies import Content
from harness.model.scripted.script import (
    Fault,
    FaultSchedule,
    Reply,
    Request,
    ScriptExhausted,
    Step,
    ToolCall,
    reply,
    said,
    tool_call,
)
from harness.model.scripted.streaming import ScriptedStream

__all__ = [
    "Content",
    "Fault",
    "FaultSchedule",
    "Reply",
    "Request",
    "ScriptExhausted",
    "ScriptedModel",
    "ScriptedStream",
    "Step",
    "ToolCall",
    "reply",
    "said",
    "tool_call",
]
