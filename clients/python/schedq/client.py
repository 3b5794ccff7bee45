"""Submitting and managing tasks: one function per schedq call.

Each function takes the caller's psycopg connection or cursor and runs
one statement on it, in the caller's transaction: it never commits. A
task submitted in a transaction that rolls back was never submitted.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from typing import Any, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import psycopg
from psycopg.rows import tuple_row
from psycopg.types.json import Jsonb

from .errors import NotFound, UnsupportedVersion, from_psycopg

# A connection or a cursor of the caller: statements run in its transaction.
Conn = Union["psycopg.Connection[Any]", "psycopg.Cursor[Any]"]
# An interval: a timedelta, or seconds.
Interval = Union[dt.timedelta, int, float]

SUPPORTED = (1, 2)


def _cursor(conn: Conn) -> "psycopg.Cursor[Tuple[Any, ...]]":
    base = conn if isinstance(conn, psycopg.Connection) else conn.connection
    return base.cursor(row_factory=tuple_row)


@contextlib.contextmanager
def mapped() -> Iterator[None]:
    """Raise psycopg's errors as schedq's named errors."""
    try:
        yield
    except psycopg.Error as e:
        raise from_psycopg(e) from e


def _one(conn: Conn, sql: str, params: Sequence[Any]) -> Any:
    with mapped(), _cursor(conn) as cur:
        row = cur.execute(sql, params).fetchone()
        return row[0] if row is not None else None


def _interval(value: Interval) -> dt.timedelta:
    if isinstance(value, dt.timedelta):
        return value
    return dt.timedelta(seconds=float(value))


# submit's options: name -> the SQL cast of its placeholder.
_SUBMIT_OPTIONS = {
    "queue": "text",
    "priority": "integer",
    "run_at": "timestamptz",
    "max_attempts": "integer",
    "timeout": "interval",
    "lock_key": "text",
    "version": "bigint",
    "concurrency_key": "text",
    "required_caps": "text[]",
    "budgets": "text[]",
    "cost": "numeric",
    "run_id": "bigint",
    "depends_on": "bigint[]",
    "dedup_key": "text",
}


def _call(function: str, first: Sequence[Tuple[str, Any]], options: Mapping[str, Any],
          casts: Mapping[str, str]) -> Tuple[str, List[Any]]:
    """SQL calling schedq.<function> with the positional arguments first
    and the options that are not None by name (the others keep their
    defaults)."""
    args: List[str] = []
    params: List[Any] = []
    for cast, value in first:
        args.append(f"%s::{cast}")
        params.append(value)
    for name, value in options.items():
        if value is None:
            continue
        cast = casts[name]
        if cast == "interval":
            value = _interval(value)
        elif cast == "jsonb":
            value = Jsonb(value)
        elif cast.endswith("[]"):
            value = list(value)
        args.append(f"{name} => %s::{cast}")
        params.append(value)
    return f"SELECT schedq.{function}({', '.join(args)})", params


def submit(
    conn: Conn,
    kind: str,
    payload: Any = None,
    *,
    queue: Optional[str] = None,
    priority: Optional[int] = None,
    run_at: Optional[dt.datetime] = None,
    max_attempts: Optional[int] = None,
    timeout: Optional[Interval] = None,
    lock_key: Optional[str] = None,
    version: Optional[int] = None,
    concurrency_key: Optional[str] = None,
    required_caps: Optional[Sequence[str]] = None,
    budgets: Optional[Sequence[str]] = None,
    cost: Optional[float] = None,
    run_id: Optional[int] = None,
    depends_on: Optional[Sequence[int]] = None,
    dedup_key: Optional[str] = None,
) -> int:
    """schedq.submit: one task; its id (with a dedup_key held by a live
    task, that task's id). Options left None take schedq's defaults."""
    options = dict(
        queue=queue, priority=priority, run_at=run_at, max_attempts=max_attempts,
        timeout=timeout, lock_key=lock_key, version=version,
        concurrency_key=concurrency_key, required_caps=required_caps,
        budgets=budgets, cost=cost, run_id=run_id, depends_on=depends_on,
        dedup_key=dedup_key,
    )
    first: List[Tuple[str, Any]] = [("text", kind)]
    if payload is not None:
        first.append(("jsonb", Jsonb(payload)))
    sql, params = _call("submit", first, options, _SUBMIT_OPTIONS)
    return int(_one(conn, sql, params))


def submit_sql(conn: Conn, command: str, **options: Any) -> int:
    """schedq.submit_sql: a task the SQL executor runs; submit's options."""
    unknown = set(options) - set(_SUBMIT_OPTIONS)
    if unknown:
        raise TypeError(f"submit_sql: unknown options {sorted(unknown)}")
    sql, params = _call("submit_sql", [("text", command)], options, _SUBMIT_OPTIONS)
    return int(_one(conn, sql, params))


def _json_value(value: Any) -> Any:
    if isinstance(value, dt.timedelta):
        return f"{value.total_seconds()} seconds"
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    return value


def submit_many(conn: Conn, tasks: Sequence[Mapping[str, Any]]) -> List[int]:
    """schedq.submit_many: every task in one statement, all or none; the
    ids in order. Each task is a mapping of submit's argument names
    (kind, payload, queue, ...); intervals may be timedeltas."""
    body = [{k: _json_value(v) for k, v in t.items() if v is not None} for t in tasks]
    with mapped(), _cursor(conn) as cur:
        rows = cur.execute(
            "SELECT schedq.submit_many(%s::jsonb)", (json.dumps(body),)
        ).fetchall()
    return [int(r[0]) for r in rows]


_SCHEDULE_OPTIONS = {
    "payload": "jsonb",
    "timezone": "text",
    "enabled": "boolean",
    "queue": "text",
    "priority": "integer",
    "max_attempts": "integer",
    "timeout": "interval",
    "lock_key": "text",
    "concurrency_key": "text",
    "required_caps": "text[]",
    "budgets": "text[]",
    "cost": "numeric",
}


def schedule(
    conn: Conn,
    name: str,
    schedule: str,
    kind: str,
    payload: Any = None,
    *,
    timezone: Optional[str] = None,
    enabled: Optional[bool] = None,
    queue: Optional[str] = None,
    priority: Optional[int] = None,
    max_attempts: Optional[int] = None,
    timeout: Optional[Interval] = None,
    lock_key: Optional[str] = None,
    concurrency_key: Optional[str] = None,
    required_caps: Optional[Sequence[str]] = None,
    budgets: Optional[Sequence[str]] = None,
    cost: Optional[float] = None,
) -> str:
    """schedq.schedule: creates or replaces a periodic task; its name."""
    options = dict(
        payload=payload, timezone=timezone, enabled=enabled, queue=queue,
        priority=priority, max_attempts=max_attempts, timeout=timeout,
        lock_key=lock_key, concurrency_key=concurrency_key,
        required_caps=required_caps, budgets=budgets, cost=cost,
    )
    sql, params = _call(
        "schedule", [("text", name), ("text", schedule), ("text", kind)], options,
        _SCHEDULE_OPTIONS,
    )
    return str(_one(conn, sql, params))


def schedule_sql(conn: Conn, name: str, schedule: str, command: str, **options: Any) -> str:
    """schedq.schedule_sql: a schedule whose task runs `command`
    (options: timezone, enabled, priority, max_attempts, timeout, lock_key)."""
    allowed = ("timezone", "enabled", "priority", "max_attempts", "timeout", "lock_key")
    unknown = set(options) - set(allowed)
    if unknown:
        raise TypeError(f"schedule_sql: unknown options {sorted(unknown)}")
    sql, params = _call(
        "schedule_sql", [("text", name), ("text", schedule), ("text", command)],
        options, _SCHEDULE_OPTIONS,
    )
    return str(_one(conn, sql, params))


def unschedule(conn: Conn, name: str) -> bool:
    """schedq.unschedule: false when there is no such schedule."""
    return bool(_one(conn, "SELECT schedq.unschedule(%s::text)", (name,)))


def set_schedule_enabled(conn: Conn, name: str, enabled: bool) -> bool:
    """schedq.set_schedule_enabled: false when there is no such schedule."""
    return bool(
        _one(conn, "SELECT schedq.set_schedule_enabled(%s::text, %s::boolean)", (name, enabled))
    )


def create_run(conn: Conn, name: Optional[str] = None,
               failure_policy: Optional[str] = None) -> int:
    """schedq.create_run: a workflow run (failure_policy 'halt' or
    'continue'); its id. Submit its tasks with run_id and depends_on."""
    sql, params = _call(
        "create_run", [], {"name": name, "failure_policy": failure_policy},
        {"name": "text", "failure_policy": "text"},
    )
    return int(_one(conn, sql, params))


def cancel_run(conn: Conn, run_id: int) -> bool:
    """schedq.cancel_run: false for a finished or missing run."""
    return bool(_one(conn, "SELECT schedq.cancel_run(%s::bigint)", (run_id,)))


def cancel(conn: Conn, task_id: int) -> bool:
    """schedq.cancel: false for a terminal or missing task."""
    return bool(_one(conn, "SELECT schedq.cancel(%s::bigint)", (task_id,)))


def retry(conn: Conn, task_id: int) -> bool:
    """schedq.retry: false for a live or missing task."""
    return bool(_one(conn, "SELECT schedq.retry(%s::bigint)", (task_id,)))


def pause_queue(conn: Conn, queue: str) -> None:
    """schedq.pause_queue."""
    _one(conn, "SELECT schedq.pause_queue(%s::text)", (queue,))


def resume_queue(conn: Conn, queue: str) -> None:
    """schedq.resume_queue."""
    _one(conn, "SELECT schedq.resume_queue(%s::text)", (queue,))


def set_concurrency_limit(conn: Conn, key: str, max_active: Optional[int]) -> None:
    """schedq.set_concurrency_limit: None removes the limit."""
    _one(conn, "SELECT schedq.set_concurrency_limit(%s::text, %s::integer)", (key, max_active))


def check_version(conn: Conn) -> str:
    """The version of schedq in the connection's database; raises NotFound
    when it is not installed and UnsupportedVersion when older than 1.2."""
    version = _one(conn, "SELECT extversion FROM pg_extension WHERE extname = 'schedq'", ())
    if version is None:
        raise NotFound("schedq is not installed in this database", sqlstate="42704")
    try:
        parts = tuple(int(p) for p in str(version).split(".")[:2])
    except ValueError:
        parts = (0,)
    if parts < SUPPORTED:
        raise UnsupportedVersion(
            f"schedq {version} is installed; this library needs schedq 1.2 or later",
            hint="ALTER EXTENSION schedq UPDATE",
        )
    return str(version)
