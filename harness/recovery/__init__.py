"""Error recovery (chapter 06): what the harness does when a model call fails or is cut short.

:class:`Recovery` is a :class:`~harness.loop.Plugin` that wraps every model call (the loop
itself does not change). For each way a call can go wrong it does what Claude Code does
(numbers as observed in third-party analyses of the CLI; the SDK's from its source):

* **A passing failure** (429 rate limit, 529 overloaded, other 5xx, 408, 409, a dropped
  connection, a reply whose stream was cut before its end, a timeout): wait and send the
  same request again, at most 10 attempts. The wait is ``min(0.5 · 2^(n-1), 32)`` seconds
  plus 0-25 % jitter, unless the API said how long (``retry-after-ms``, then ``retry-after``
  in seconds or as an HTTP date), which always wins; an ``x-should-retry`` header overrides
  the status code either way. Waits go through the agent's ``Clock``: with a ``FakeClock``
  nothing really sleeps.
* **Overloaded, again and again**: after 3 consecutive 529s, switch to the fallback model (if
  one is configured), with an event. The cost meter prices each call at the model that
  served it.
* **A mistake in the request** (400 other than prompt-too-long, 401, 403, 404, 413, 422):
  retrying sends the same mistake, so the run ends at once with an event that says what to
  fix.
* **Prompt too long**: compact the conversation once (chapter 05's full compaction) and send
  it again; a second prompt-too-long in the same turn ends the run.
* **A reply cut at the end of the context window** (stop reason
  ``model_context_window_exceeded``): never an answer. It is thrown away (billed), the
  conversation is compacted once as for a prompt too long, and the turn is asked again; cut
  there a second time in the same turn, the run ends with :class:`GaveUp`.
* **A reply cut at max_tokens**: the reply is thrown away (billed, never appended) and the
  same request is sent once more with 64K of room. If that is cut too, it is kept and the
  model is asked to continue, at most 3 times, stopping early when continuations stop adding
  anything (3 in a row under 500 tokens each). A tool call cut in the middle never runs: the
  loop keeps tool calls only from a reply that stopped to make them.

Side requests (a compaction's summary, a memory extraction) go through the same path, so they
get the same retries and fallback; they never compact or escalate, and when they fail the
API's error goes back to the code that sent them. Every transition is an event of this module,
one line each; a run that cannot go on ends with :class:`GaveUp` instead of an exception.

Put ``Recovery`` first in ``plugins=[...]``: the first plugin is the outermost layer, so each
retry goes through every other layer (cache breakpoints, say) again.

The pieces:

* ``policy``: :class:`RecoveryPolicy`, the numbers, and the continuation prompt;
* ``failures``: :func:`classify` and :func:`retry_after`, reading a failed call;
* ``events``: the events recovery emits, from :class:`Retrying` to :class:`GaveUp`;
* ``plugin``: :class:`Recovery` itself, and the :class:`Attempt` it records.
"""

from __future__ import annotations

from harness.recovery.events import (
    Continued,
    Escalated,
    FellBack,
    GaveUp,
    PromptTooLong,
    Retrying,
    StoppedContinuing,
    WindowExceeded,
)
from harness.recovery.failures import Failure, classify, is_prompt_too_long, retry_after
from harness.recovery.plugin import Attempt, Recovery
from harness.recovery.policy import CONTINUATION_PROMPT, RecoveryPolicy

__all__ = [
    "CONTINUATION_PROMPT",
    "Attempt",
    "Continued",
    "Escalated",
    "Failure",
    "FellBack",
    "GaveUp",
    "PromptTooLong",
    "Recovery",
    "RecoveryPolicy",
    "Retrying",
    "StoppedContinuing",
    "WindowExceeded",
    "classify",
    "is_prompt_too_long",
    "retry_after",
]
