"""The recovery events: one line for each thing recovery did, from a retry to giving up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.events import Event


@dataclass(frozen=True)
class Retrying(Event):
    """A call failed and will be sent again after ``delay`` seconds."""

    attempt: int
    """The attempt that failed (1 is the first)."""
    max_attempts: int
    delay: float
    source: Literal["retry-after", "backoff"]
    cause: str
    model: str
    purpose: str
    at: float
    """The agent's clock when the wait began."""

    def __str__(self) -> str:
        side = "" if self.purpose == "turn" else f" ({self.purpose} request)"
        return (
            f"↻ {self.cause} on attempt {self.attempt} of {self.max_attempts}{side}: "
            f"waiting {self.delay:.2f} s ({self.source})"
        )


@dataclass(frozen=True)
class FellBack(Event):
    """Too many consecutive 529s: the rest of the session uses the fallback model."""

    from_model: str
    to_model: str
    overloaded: int

    def __str__(self) -> str:
        return (
            f"⇄ {self.overloaded} consecutive 529s: switched from {self.from_model} to "
            f"{self.to_model}"
        )


@dataclass(frozen=True)
class Escalated(Event):
    """A reply cut at ``max_tokens`` was thrown away; the same request goes again with more."""

    cut_at: int
    to: int

    def __str__(self) -> str:
        return (
            f"⇡ reply cut at {self.cut_at:,} output tokens: discarded, asking again with "
            f"{self.to:,}"
        )


@dataclass(frozen=True)
class Continued(Event):
    """A reply cut even after escalation was kept, and the model asked to continue."""

    continuation: int
    max_continuations: int
    output_tokens: int

    def __str__(self) -> str:
        return (
            f"… reply cut at {self.output_tokens:,} output tokens: kept, asking the model to "
            f"continue ({self.continuation} of {self.max_continuations})"
        )


@dataclass(frozen=True)
class StoppedContinuing(Event):
    """No more continuations: the limit was reached, or they stopped adding anything."""

    reason: str

    def __str__(self) -> str:
        return f"■ no more continuations: {self.reason}"


@dataclass(frozen=True)
class PromptTooLong(Event):
    """A request of the loop was too long; a reactive compaction follows."""

    tokens: int
    maximum: int

    def __str__(self) -> str:
        return (
            f"⚠ prompt too long ({self.tokens:,} > {self.maximum:,} tokens): compacting once, "
            "then sending it again"
        )


@dataclass(frozen=True)
class WindowExceeded(Event):
    """A reply of the loop ran into the end of the context window (stop reason
    ``model_context_window_exceeded``): cut, never an answer. It is thrown away (billed) and a
    reactive compaction follows, then the same turn is asked again."""

    prompt_tokens: int
    output_tokens: int

    def __str__(self) -> str:
        return (
            f"⚠ reply cut at the end of the context window ({self.prompt_tokens:,} prompt + "
            f"{self.output_tokens:,} output tokens): discarded, compacting once, then asking again"
        )


@dataclass(frozen=True)
class GaveUp(Event):
    """The run ended because a model call could not be made to work."""

    kind: str
    cause: str
    reason: str
    """Why recovery stopped trying (not retryable, attempts used up, ...)."""
    advice: str
    """What to fix."""

    def __str__(self) -> str:
        return f"■ gave up: {self.cause}, {self.reason}. {self.advice}"
