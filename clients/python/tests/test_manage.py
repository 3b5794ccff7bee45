"""Schedules, workflows, cancel, retry, queues, limits: one call each."""

from __future__ import annotations

from typing import Any

import schedq
from conftest import value


def test_schedules(conn: Any, admin: Any, queue: str) -> None:
    name = f"py-{queue}"
    assert schedq.schedule(conn, name, "@every 1 hour", "report", {"x": 1}, queue=queue,
                           timezone="Europe/Paris", priority=4, timeout=60) == name
    conn.commit()
    assert admin.execute(
        "SELECT schedule, timezone, enabled FROM schedq.periodic WHERE name = %s",
        (name,)).fetchone() == ("@every 1 hour", "Europe/Paris", True)
    assert schedq.set_schedule_enabled(conn, name, False) is True
    conn.commit()
    assert value(admin, "SELECT enabled FROM schedq.periodic WHERE name = %s", name) is False
    assert schedq.unschedule(conn, name) is True
    assert schedq.unschedule(conn, name) is False
    assert schedq.set_schedule_enabled(conn, name, True) is False
    sql_name = schedq.schedule_sql(conn, name + "-sql", "0 3 * * *", "SELECT 1", max_attempts=2)
    assert schedq.unschedule(conn, sql_name) is True
    conn.commit()


def test_workflow_run_and_cancel(conn: Any, admin: Any, queue: str) -> None:
    run_id = schedq.create_run(conn, "nightly")
    a = schedq.submit(conn, "a", queue=queue, run_id=run_id)
    b = schedq.submit(conn, "b", queue=queue, run_id=run_id, depends_on=[a])
    conn.commit()
    assert value(admin, "SELECT status FROM schedq.task WHERE id = %s", b) == "pending"
    assert schedq.cancel_run(conn, run_id) is True
    conn.commit()
    assert value(admin, "SELECT status FROM schedq.run WHERE id = %s", run_id) == "canceled"
    assert schedq.cancel_run(conn, run_id) is False


def test_cancel_and_retry(conn: Any, admin: Any, queue: str) -> None:
    task_id = schedq.submit(conn, "k", queue=queue)
    assert schedq.cancel(conn, task_id) is True
    assert schedq.cancel(conn, task_id) is False
    assert schedq.retry(conn, task_id) is True
    conn.commit()
    assert value(admin, "SELECT status FROM schedq.task WHERE id = %s", task_id) == "available"


def test_pause_resume_and_limits(conn: Any, admin: Any, queue: str) -> None:
    schedq.pause_queue(conn, queue)
    conn.commit()
    assert value(admin, "SELECT paused FROM schedq.queue WHERE name = %s", queue) is True
    schedq.resume_queue(conn, queue)
    schedq.set_concurrency_limit(conn, f"ck-{queue}", 3)
    conn.commit()
    assert value(admin, "SELECT coalesce((SELECT paused FROM schedq.queue WHERE name = %s),"
                        " false)", queue) is False
    assert value(admin, "SELECT max_active FROM schedq.concurrency_limit WHERE key = %s",
                 f"ck-{queue}") == 3
    schedq.set_concurrency_limit(conn, f"ck-{queue}", None)
    conn.commit()
    assert value(admin, "SELECT count(*) FROM schedq.concurrency_limit WHERE key = %s",
                 f"ck-{queue}") == 0


def test_version(conn: Any) -> None:
    assert schedq.check_version(conn).startswith("1.")
    assert schedq.__version__ == "1.2.0"
