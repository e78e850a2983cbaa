"""Resume: pick a session up from its transcript, and the pointers that find it.

* :class:`Sessions` is one workspace's folder of transcripts, laid out as Claude Code lays
  out ``~/.claude/projects/<folder>/<session-id>.jsonl``, with a small index that maps names
  (``latest``, a workflow step) to session ids.
* The **flush gate**: :meth:`Sessions.bind` refuses to point a name at a session whose
  transcript does not hold a complete message on disk. A pointer written first and a crash
  before the transcript would leave a name that leads nowhere, and the next start would
  begin again with no memory (a reviewed pull request in an agent gateway added such a gate
  before persisting a session binding).
* :func:`resume` loads a session, repairs it, puts it in the agent and keeps writing the
  same file. Tools that finished have their results in the conversation (or in the tool
  journal beside it), so they never run again; a call a crash cut off in the middle is
  answered that it may have run, one that never started as interrupted.
* :func:`run_step` is a workflow step with an output check. When the check fails, it
  resumes the step's session and sends a short correction, instead of running the whole
  step again (a post-mortem of a workflow runner's resume tells of a failed format check
  that threw away the step's finished work).

The submodules:

* ``sessions``: :class:`Sessions`, the folder and its index, and the flush gate.
* ``resuming``: :func:`resume`, :func:`resume_with` and :func:`continue_run`.
* ``steps``: :func:`run_step`, a workflow step that corrects its own session.
"""

from __future__ import annotations

from harness.resume.resuming import (
    CONTINUE_PROMPT,
    Resumable,
    Resume,
    Resumed,
    continue_run,
    journaled_answers,
    resume,
    resume_with,
)
from harness.resume.sessions import INDEX, NotFlushed, SessionNotFound, Sessions, is_flushed
from harness.resume.steps import Check, StepRun, correction_prompt, final_text, run_step

__all__ = [
    "CONTINUE_PROMPT",
    "INDEX",
    "Check",
    "NotFlushed",
    "Resumable",
    "Resume",
    "Resumed",
    "SessionNotFound",
    "Sessions",
    "StepRun",
    "continue_run",
    "correction_prompt",
    "final_text",
    "is_flushed",
    "journaled_answers",
    "resume",
    "resume_with",
    "run_step",
]
