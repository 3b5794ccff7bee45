"""schedq's SQLSTATEs as named exceptions.

Every call of this package raises a subclass of SchedqError for an error
the server reports; it keeps the SQLSTATE, the server's message, detail
and hint, and the driver's exception as ``cause`` (also ``__cause__``).
"""

from __future__ import annotations

from typing import Dict, Optional, Type

import psycopg


class SchedqError(Exception):
    """An error from schedq (or from PostgreSQL running a schedq call)."""

    sqlstate: Optional[str]
    message: str
    detail: Optional[str]
    hint: Optional[str]
    cause: Optional[BaseException]

    def __init__(
        self,
        message: str,
        sqlstate: Optional[str] = None,
        detail: Optional[str] = None,
        hint: Optional[str] = None,
        cause: Optional[BaseException] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.sqlstate = sqlstate
        self.detail = detail
        self.hint = hint
        self.cause = cause

    def __str__(self) -> str:
        text = self.message
        if self.sqlstate:
            text = f"{text} (SQLSTATE {self.sqlstate})"
        return text


class NullValue(SchedqError):
    """22004: a NULL where a value is needed."""


class InvalidArgument(SchedqError):
    """22023: a value out of range or otherwise invalid."""


class ArrayDimension(SchedqError):
    """2202E: an array argument with more than one dimension."""


class MalformedToken(SchedqError):
    """22P02: a malformed token."""


class ForgedToken(SchedqError):
    """28000: a token with a bad signature."""


class LimitExceeded(SchedqError):
    """54000: a name, text, array or payload over its limit."""


class PermissionDenied(SchedqError):
    """42501: the caller may not act for that owner, or lacks a grant."""


class NotFound(SchedqError):
    """42704: a budget that does not exist; schedq not installed."""


class MissingReference(SchedqError):
    """23503: a run or a dependency that does not exist."""


class DedupConflict(SchedqError):
    """23505: retry would give a dedup_key a second live task."""


class SerializationFailure(SchedqError):
    """40001: a dedup_key kept changing hands: retry the call."""


class WrongState(SchedqError):
    """55000: object_not_in_prerequisite_state (a finished run, schedq not
    preloaded, no signing key)."""


class FeatureNotSupported(SchedqError):
    """0A000: e.g. a waiting claim outside READ COMMITTED."""


class InTransaction(SchedqError):
    """25001: await_task inside a transaction block."""


class ReadOnly(SchedqError):
    """25006: the server is (or became) read-only."""


class QueryCanceled(SchedqError):
    """57014: statement timeout or cancel."""


class ConnectError(SchedqError):
    """The worker pool's first connection failed."""


class UnsupportedVersion(SchedqError):
    """The database's schedq is older than this library supports."""


# Aliases with the names PostgreSQL gives the conditions.
ObjectNotInPrerequisiteState = WrongState
StaleToken = WrongState

_BY_SQLSTATE: Dict[str, Type[SchedqError]] = {
    "22004": NullValue,
    "22023": InvalidArgument,
    "2202E": ArrayDimension,
    "22P02": MalformedToken,
    "28000": ForgedToken,
    "54000": LimitExceeded,
    "42501": PermissionDenied,
    "42704": NotFound,
    "3F000": NotFound,
    "23503": MissingReference,
    "23505": DedupConflict,
    "40001": SerializationFailure,
    "55000": WrongState,
    "0A000": FeatureNotSupported,
    "25001": InTransaction,
    "25006": ReadOnly,
    "57014": QueryCanceled,
}


def from_psycopg(error: psycopg.Error) -> SchedqError:
    """The named error for a psycopg error (SchedqError when unnamed)."""
    diag = error.diag
    sqlstate = error.sqlstate
    message = diag.message_primary or str(error).strip() or type(error).__name__
    cls = _BY_SQLSTATE.get(sqlstate or "", SchedqError)
    return cls(
        message,
        sqlstate=sqlstate,
        detail=diag.message_detail,
        hint=diag.message_hint,
        cause=error,
    )
