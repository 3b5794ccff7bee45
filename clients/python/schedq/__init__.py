"""schedq for Python: submit tasks in your transaction, run a worker pool.

A thin typed layer over schedq's SQL API (psycopg 3). Supports schedq 1.2.
"""

from .client import (
    Conn,
    Interval,
    cancel,
    cancel_run,
    check_version,
    create_run,
    pause_queue,
    resume_queue,
    retry,
    schedule,
    schedule_sql,
    set_concurrency_limit,
    set_schedule_enabled,
    submit,
    submit_many,
    submit_sql,
    unschedule,
)
from .errors import (
    ArrayDimension,
    ConnectError,
    DedupConflict,
    FeatureNotSupported,
    ForgedToken,
    InTransaction,
    InvalidArgument,
    LimitExceeded,
    MalformedToken,
    MissingReference,
    NotFound,
    NullValue,
    ObjectNotInPrerequisiteState,
    PermissionDenied,
    QueryCanceled,
    ReadOnly,
    SchedqError,
    SerializationFailure,
    StaleToken,
    UnsupportedVersion,
    WrongState,
)
from .main import main
from .worker import Handler, Permanent, Pool, Retry, Task

__version__ = "1.2.0"

__all__ = [
    "ArrayDimension", "Conn", "ConnectError", "DedupConflict", "FeatureNotSupported",
    "ForgedToken", "Handler", "InTransaction", "Interval", "InvalidArgument",
    "LimitExceeded", "MalformedToken", "MissingReference", "NotFound", "NullValue",
    "ObjectNotInPrerequisiteState", "Permanent", "PermissionDenied", "Pool",
    "QueryCanceled", "ReadOnly", "Retry", "SchedqError", "SerializationFailure",
    "StaleToken", "Task", "UnsupportedVersion", "WrongState", "cancel", "cancel_run",
    "check_version", "create_run", "main", "pause_queue", "resume_queue", "retry",
    "schedule", "schedule_sql", "set_concurrency_limit", "set_schedule_enabled",
    "submit", "submit_many", "submit_sql", "unschedule",
]
