"""The errors of approvals: each says what a person should be shown, and the HTTP status.

:class:`ApprovalConflict` (409: decided otherwise, or being applied elsewhere),
:class:`ApprovalExpired` (410), :class:`ApprovalInvalid` (422: a snapshot or store this code
cannot read), :class:`ApprovalStoreBusy` (503: the store stayed locked) and
:class:`ApprovalNotFound` (404). The status numbers are the HTTP codes an implementation
plan for approvals maps them to, for a caller that serves approvals over the web.
"""

from __future__ import annotations


class ApprovalError(Exception):
    """Something a person asked of an approval that cannot be done, and why."""

    status = 400


class ApprovalNotFound(ApprovalError, LookupError):
    status = 404


class ApprovalConflict(ApprovalError):
    """Decided the other way already, not decided yet, or being applied by another resumer."""

    status = 409


class ApprovalExpired(ApprovalError):
    status = 410


class ApprovalInvalid(ApprovalError):
    """A snapshot (or a store) this code cannot read: the message says what was found."""

    status = 422


class ApprovalStoreBusy(ApprovalInvalid):
    """The store stayed locked by another process past the busy timeout: try again later
    (unlike the other problems of a store, this one passes)."""

    status = 503
