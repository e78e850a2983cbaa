"""The snapshot of a call that waits, and a person's decision on it.

:class:`PendingToolCall` is everything needed to apply the call later, in another process:
tool, canonical input, a hash of both (:func:`call_hash`, what an approval is bound to),
where it sits in the session, when it was made and when it expires. It is versioned
(``version: 2``) and strict: an unknown version, a missing one or an unknown field is refused
with the reason, never guessed at. :class:`Decision` is a person's answer to it.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    ValidationError,
    field_validator,
    model_validator,
)

from harness.approvals.errors import ApprovalInvalid
from harness.tools.permissions import ApprovalRequest

SNAPSHOT_VERSION = 2
"""The one snapshot version this code reads (version 1 had no hash: it could not bind an
approval to the exact call, so it is refused rather than upgraded by guesswork)."""


def canonical(value: Any) -> str:
    """The input as one exact string: keys sorted, no spaces, no NaN (so equal inputs hash
    equal, and an input written another way, ``1`` for ``1.0``, does not)."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def call_hash(tool: str, input: Any) -> str:
    """What an approval is bound to: SHA-256 of the tool's name and its canonical input."""
    return hashlib.sha256(f"{tool}\n{canonical(input)}".encode()).hexdigest()


class PendingToolCall(BaseModel):
    """The snapshot of a call that waits for a person: everything needed to apply it later,
    in another process, and to tell whether what is applied is what was approved."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[2]
    approval_id: str
    session_id: str
    """The session whose transcript holds the call (chapter 08)."""
    reply_uuid: str | None
    """The call's place in the session: the last transcript entry written when it asked,
    which is the reply that made it (for a call that waited behind another one and asked
    only at resume, the results entry of that pause)."""
    tool_use_id: str
    tool: str
    input: dict[str, Any]
    call_hash: str
    reason: str
    """Why it asks (the permission rule or mode)."""
    created_at: AwareDatetime
    expires_at: AwareDatetime
    """Times carry their zone: a time without one could mean any of 24 moments."""

    @model_validator(mode="before")
    @classmethod
    def _known_version(cls, data: Any) -> Any:
        if isinstance(data, dict):
            if "version" not in data:
                raise ValueError(
                    f"the snapshot has no version; this harness reads version {SNAPSHOT_VERSION}"
                )
            found = data["version"]
            if type(found) is not int or found != SNAPSHOT_VERSION:  # not True, not 2.0
                raise ValueError(
                    f"snapshot version {found!r} is not supported; this harness reads "
                    f"version {SNAPSHOT_VERSION} only (it will not guess at another layout)"
                )
        return data

    @field_validator("session_id")
    @classmethod
    def _not_a_path(cls, value: str) -> str:
        # The session id names the transcript file resume opens: a path would reach outside
        # the sessions folder (chapter 08's ``Sessions.path`` refuses the same ids).
        problem = session_id_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _hash_matches(self) -> PendingToolCall:
        if self.call_hash != call_hash(self.tool, self.input):
            raise ValueError("call_hash does not match the tool and input it is stored with")
        if self.expires_at <= self.created_at:
            raise ValueError("expires_at must come after created_at")
        return self

    @classmethod
    def parse(cls, raw: str | bytes | dict[str, Any]) -> PendingToolCall:
        """Read a stored snapshot, or raise :class:`ApprovalInvalid` saying what is wrong."""
        try:
            if isinstance(raw, dict):
                return cls.model_validate(raw)
            return cls.model_validate_json(raw)
        except ValidationError as error:
            raise _unreadable(error) from None

    @classmethod
    def of(
        cls,
        request: ApprovalRequest,
        *,
        approval_id: str,
        session_id: str,
        reply_uuid: str | None,
        now: float,
        ttl: float,
    ) -> PendingToolCall:
        """The snapshot of ``request``, or :class:`ApprovalInvalid` saying why it cannot be
        made (a session id that is a path, a ttl that is not positive)."""
        try:
            return cls(
                version=SNAPSHOT_VERSION,
                approval_id=approval_id,
                session_id=session_id,
                reply_uuid=reply_uuid,
                tool_use_id=request.tool_use_id,
                tool=request.tool,
                input=dict(request.input),
                call_hash=call_hash(request.tool, request.input),
                reason=request.reason,
                created_at=_moment(now),
                expires_at=_moment(now + ttl),
            )
        except ValidationError as error:
            raise _unreadable(error, "approval snapshot refused") from None

    def expired(self, now: float) -> bool:
        return now >= self.expires_at.timestamp()


def session_id_problem(session_id: str) -> str | None:
    """Why ``session_id`` cannot name a session's transcript, or None if it can. A session id
    is a file name, never a path: no separator, not ``.`` or ``..``, not empty."""
    if not session_id or session_id in (".", ".."):
        return f"{session_id!r} is not a session id"
    if "/" in session_id or "\\" in session_id or "\x00" in session_id:
        return f"{session_id!r} is not a session id: a session id is never a path"
    return None


def _unreadable(
    error: ValidationError, what: str = "unreadable approval snapshot"
) -> ApprovalInvalid:
    return ApprovalInvalid(f"{what}: {_problems(error, '(snapshot)')}")


def _problems(error: ValidationError, whole: str = "(the whole of it)") -> str:
    """Each problem pydantic found, as ``field: what is wrong``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in issue['loc']) or whole}: {issue['msg']}"
        for issue in error.errors()
    )


class Decision(BaseModel):
    """A person's answer: approve or not, who, and a note (sent to the model with it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    approve: bool
    by: str = "a person"
    note: str = ""

    @classmethod
    def of(cls, value: Decision | Literal["approve", "reject"] | bool) -> Decision:
        if isinstance(value, Decision):
            return value
        if isinstance(value, bool):
            return cls(approve=value)
        if value in ("approve", "reject"):
            return cls(approve=value == "approve")
        raise ApprovalInvalid(f"a decision is 'approve' or 'reject', not {value!r}")


def _moment(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, tz=UTC)
