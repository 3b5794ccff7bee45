"""SQLSTATEs as named errors, keeping what the server said."""

from __future__ import annotations

from typing import Any, Callable, Type

import psycopg
import pytest

import schedq
from conftest import value

CASES = [
    ("empty queue", lambda c, q: schedq.submit(c, "k", queue=""), schedq.InvalidArgument, "22023"),
    ("zero attempts", lambda c, q: schedq.submit(c, "k", queue=q, max_attempts=0),
     schedq.InvalidArgument, "22023"),
    ("negative timeout", lambda c, q: schedq.submit(c, "k", queue=q, timeout=-5),
     schedq.InvalidArgument, "22023"),
    ("unknown budget", lambda c, q: schedq.submit(c, "k", queue=q, budgets=["no-such"]),
     schedq.NotFound, "42704"),
    ("missing run", lambda c, q: schedq.submit(c, "k", queue=q, run_id=987654321),
     schedq.MissingReference, "23503"),
    ("long kind", lambda c, q: schedq.submit(c, "k" * 300, queue=q), schedq.LimitExceeded, "54000"),
    ("bad policy", lambda c, q: schedq.create_run(c, failure_policy="sometimes"),
     schedq.InvalidArgument, "22023"),
    ("bad schedule", lambda c, q: schedq.schedule(c, "bad-" + q, "61 * * * *", "k"),
     schedq.InvalidArgument, "22023"),
    ("null name", lambda c, q: schedq.unschedule(c, None),  # type: ignore[arg-type]
     schedq.NullValue, "22004"),
]


@pytest.mark.parametrize("what,call,error,sqlstate", CASES, ids=[c[0] for c in CASES])
def test_named_error(conn: Any, admin: Any, queue: str, what: str,
                     call: Callable[[Any, str], Any], error: Type[schedq.SchedqError],
                     sqlstate: str) -> None:
    with pytest.raises(error) as info:
        call(conn, queue)
    conn.rollback()
    e = info.value
    assert isinstance(e, schedq.SchedqError)
    assert e.sqlstate == sqlstate
    assert e.message and sqlstate in str(e)
    assert isinstance(e.cause, psycopg.Error) and e.__cause__ is e.cause
    assert e.cause.sqlstate == sqlstate
    assert value(admin, "SELECT count(*) FROM schedq.task WHERE queue = %s", queue) == 0


def test_permission_denied_keeps_detail_and_hint(conn: Any, admin: Any, queue: str) -> None:
    task_id = schedq.submit(conn, "k", queue=queue)
    conn.commit()
    conn.execute("SET ROLE app")
    with pytest.raises(schedq.PermissionDenied) as info:
        schedq.cancel(conn, task_id)
    conn.rollback()
    assert info.value.sqlstate == "42501"
    e = info.value
    assert isinstance(e.cause, psycopg.Error)
    assert (e.message, e.detail, e.hint) == (
        e.cause.diag.message_primary, e.cause.diag.message_detail, e.cause.diag.message_hint)
    assert value(admin, "SELECT status FROM schedq.task WHERE id = %s", task_id) == "available"


def test_forged_token(conn: Any, admin: Any, queue: str) -> None:
    task_id = schedq.submit(conn, "k", queue=queue)
    conn.commit()
    token = value(admin, "SELECT token FROM schedq.claim('t', queues => %s)", [queue])
    forged = token[:-4] + ("0000" if not token.endswith("0000") else "1111")
    task = schedq.Task(task_id, 1, queue, "k", {}, 0, None, forged, None)  # type: ignore[arg-type]
    with pytest.raises(schedq.ForgedToken) as info:
        task.complete_in(conn, {"x": 1})
    conn.rollback()
    assert info.value.sqlstate == "28000"
    bad = schedq.Task(task_id, 1, queue, "k", {}, 0, None, "nonsense", None)  # type: ignore[arg-type]
    with pytest.raises(schedq.MalformedToken):
        bad.complete_in(conn)
    conn.rollback()
    assert value(admin, "SELECT status FROM schedq.task WHERE id = %s", task_id) == "running"
