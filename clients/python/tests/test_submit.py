"""Submitting in the caller's transaction, with every option."""

from __future__ import annotations

import datetime as dt
from typing import Any

import psycopg
import pytest

import schedq
from conftest import value


def count(admin: "psycopg.Connection[Any]", queue: str) -> int:
    return int(value(admin, "SELECT count(*) FROM schedq.task WHERE queue = %s", queue))


def test_rolled_back_submit_creates_nothing(conn: Any, admin: Any, queue: str) -> None:
    with pytest.raises(RuntimeError):
        with conn.transaction():
            conn.execute("CREATE TEMP TABLE app_write (x int)")
            schedq.submit(conn, "email.send", {"to": "ann"}, queue=queue)
            raise RuntimeError("the application's write fails")
    conn.commit()
    assert count(admin, queue) == 0


def test_committed_submit_creates_exactly_one(conn: Any, admin: Any, queue: str) -> None:
    with conn.transaction():
        task_id = schedq.submit(conn, "email.send", {"to": "ann"}, queue=queue)
        assert count(admin, queue) == 0, "not visible before the commit"
    conn.commit()
    assert count(admin, queue) == 1
    assert value(admin, "SELECT kind || ' ' || (payload->>'to') FROM schedq.task WHERE id = %s",
                 task_id) == "email.send ann"


def test_submit_on_a_cursor(conn: Any, admin: Any, queue: str) -> None:
    with conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        task_id = schedq.submit(cur, "k", queue=queue)
        conn.rollback()
    assert count(admin, queue) == 0
    with conn.cursor() as cur:
        task_id = schedq.submit(cur, "k", queue=queue)
    conn.commit()
    assert value(admin, "SELECT queue FROM schedq.task WHERE id = %s", task_id) == queue


def test_every_option(conn: Any, admin: Any, queue: str) -> None:
    admin.execute("SELECT schedq.set_budget('py_budget', 100)")
    run_id = schedq.create_run(conn, "py run", failure_policy="continue")
    first = schedq.submit(conn, "first", queue=queue, run_id=run_id)
    at = dt.datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    task_id = schedq.submit(
        conn, "second", {"n": [1, 2]}, queue=queue, priority=7, run_at=at, max_attempts=3,
        timeout=dt.timedelta(minutes=2), lock_key="lk", version=42, concurrency_key="ck",
        required_caps=["gpu", "big"], budgets=["py_budget"], cost=2.5, run_id=run_id,
        depends_on=[first], dedup_key=f"dk-{queue}",
    )
    again = schedq.submit(conn, "second", queue=queue, dedup_key=f"dk-{queue}", timeout=90)
    conn.commit()
    assert again == task_id, "a live task holds the dedup_key"
    row = admin.execute(
        "SELECT payload, priority, run_at, max_attempts, timeout, lock_key, version,"
        "       concurrency_key, required_caps, budgets, cost, run_id, depends_on, dedup_key"
        "  FROM schedq.task WHERE id = %s", (task_id,)).fetchone()
    assert row == ({"n": [1, 2]}, 7, at, 3, dt.timedelta(minutes=2), "lk", 42, "ck",
                   ["gpu", "big"], ["py_budget"], pytest.approx(2.5), run_id, [first], f"dk-{queue}")


def test_timeout_in_seconds(conn: Any, admin: Any, queue: str) -> None:
    task_id = schedq.submit(conn, "k", queue=queue, timeout=90)
    conn.commit()
    assert value(admin, "SELECT timeout FROM schedq.task WHERE id = %s",
                 task_id) == dt.timedelta(seconds=90)


def test_submit_many_in_order_all_or_none(conn: Any, admin: Any, queue: str) -> None:
    ids = schedq.submit_many(conn, [
        {"kind": "a", "queue": queue, "payload": {"i": 1}},
        {"kind": "b", "queue": queue, "priority": 3, "timeout": dt.timedelta(seconds=30),
         "run_at": dt.datetime(2031, 1, 1, tzinfo=dt.timezone.utc)},
        {"kind": "c", "queue": queue, "required_caps": ("x",)},
    ])
    conn.commit()
    assert len(ids) == 3 and ids == sorted(ids)
    rows = admin.execute(
        "SELECT kind, priority, timeout, required_caps FROM schedq.task"
        " WHERE queue = %s ORDER BY id", (queue,)).fetchall()
    assert rows == [("a", 0, None, []), ("b", 3, dt.timedelta(seconds=30), []),
                    ("c", 0, None, ["x"])]
    with pytest.raises(schedq.InvalidArgument) as info:
        schedq.submit_many(conn, [{"kind": "ok", "queue": queue}, {"kind": "x", "bogus": 1}])
    conn.rollback()
    assert info.value.sqlstate == "22023"
    assert count(admin, queue) == 3, "nothing of a refused batch is submitted"


def test_submit_sql(conn: Any, admin: Any, queue: str) -> None:
    task_id = schedq.submit_sql(conn, "SELECT 1", queue=queue, priority=2)
    conn.commit()
    assert admin.execute(
        "SELECT kind, payload->>'command', 'sql' = ANY(required_caps), priority"
        "  FROM schedq.task WHERE id = %s", (task_id,)).fetchone() == ("sql", "SELECT 1", True, 2)
    with pytest.raises(TypeError):
        schedq.submit_sql(conn, "SELECT 1", colour="red")
