"""The worker pool against a real server: once each under concurrency,
retries, progress, a handler's own transaction, lost connections."""

from __future__ import annotations

import collections
import sys
import threading
import time
from typing import Any, Dict, List

import psycopg
import pytest

import schedq
from conftest import poll, value, wait_for


def statuses(admin: Any, queue: str) -> Dict[str, int]:
    return dict(admin.execute(
        "SELECT status, count(*) FROM schedq.task WHERE queue = %s GROUP BY 1",
        (queue,)).fetchall())


def test_each_task_runs_once_under_concurrency(admin: Any, queue: str, start: Any) -> None:
    calls: Dict[int, int] = collections.Counter()
    lock = threading.Lock()
    active = [0, 0]  # now, most at once
    gate = threading.Event()

    def work(task: schedq.Task) -> Any:
        with lock:
            calls[task.id] += 1
            active[0] += 1
            active[1] = max(active[1], active[0])
        gate.wait(0.02)
        with lock:
            active[0] -= 1
        return {"double": task.payload["i"] * 2}

    admin.execute(
        "SELECT schedq.submit_many((SELECT jsonb_agg(jsonb_build_object('kind', 'work',"
        " 'queue', %s::text, 'payload', jsonb_build_object('i', i))) FROM generate_series(1, 300) i))",
        (queue,))
    run = start({"work": work}, concurrency=8, batch=8)
    poll(admin, "SELECT count(*) FROM schedq.task WHERE queue = %s AND status = 'done'", 300,
         queue)
    assert run.stop() is True
    assert len(calls) == 300 and set(calls.values()) == {1}, "each handler ran exactly once"
    assert 1 < active[1] <= 8, f"at most 8 handlers at once, and several: {active[1]}"
    assert value(admin, "SELECT count(*) FROM schedq.task WHERE queue = %s AND attempts = 1"
                 " AND (result->>'double')::int = 2 * (payload->>'i')::int", queue) == 300


def test_a_slow_handler_hands_its_batch_to_other_slots(admin: Any, queue: str, start: Any) -> None:
    """A batch's handlers start one after another in one slot only while
    each is quick: eight handlers that each wait until all eight have
    started all finish (one after another, the first would wait for
    ever)."""
    started = threading.Barrier(8, timeout=20)

    def meet(task: schedq.Task) -> Any:
        started.wait()
        return None

    admin.execute(
        "SELECT schedq.submit_many((SELECT jsonb_agg(jsonb_build_object('kind', 'meet',"
        " 'queue', %s::text)) FROM generate_series(1, 8)))", (queue,))
    run = start({"meet": meet}, concurrency=8, batch=8)
    poll(admin, "SELECT count(*) FROM schedq.task WHERE queue = %s AND status = 'done'", 8,
         queue)
    assert run.stop() is True
    assert statuses(admin, queue) == {"done": 8}


def test_an_outcome_is_not_held_behind_a_slow_handler(admin: Any, queue: str,
                                                      start: Any) -> None:
    """The claim loop runs a batch's handlers itself and moves to a new
    thread behind a slow one: a quick task's completion is committed
    while a slow one of the same batch still runs. On a fresh pool, and
    again once it has waited idle in await_task long enough for its
    watchdog to sleep."""
    release = threading.Event()

    def slow(task: schedq.Task) -> Any:
        release.wait(30)
        return None

    def submit() -> List[int]:  # in one statement: one claim takes both
        return [row[0] for row in admin.execute(
            "SELECT id FROM schedq.submit_many(jsonb_build_array("
            " jsonb_build_object('kind', 'fast', 'queue', %s::text),"  # first in claim order
            " jsonb_build_object('kind', 'slow', 'queue', %s::text)))"
            " WITH ORDINALITY AS s(id, i) ORDER BY i",
            (queue, queue)).fetchall()]

    ids = submit()  # before the pool starts
    run = start({"fast": lambda task: None, "slow": slow}, concurrency=2,
                application_name=queue)
    for round in range(2):
        if round == 1:
            poll(admin, "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
                 " AND query LIKE '%%await_task%%' AND state = 'active'"
                 " AND query_start < now() - interval '300 ms'", 1, queue)
            release.clear()
            ids = submit()
        poll(admin, "SELECT string_agg(status::text, ' ' ORDER BY id = %s) FROM schedq.task"
             " WHERE id = ANY(%s)", "done running", ids[1], ids)
        release.set()
        poll(admin, "SELECT status::text FROM schedq.task WHERE id = %s", "done", ids[1])
    assert run.stop() is True


def test_a_handler_that_exits_fails_its_task_and_the_pool_goes_on(admin: Any, queue: str,
                                                                  start: Any) -> None:
    """What a handler raises, SystemExit too, fails its attempt; it never
    reaches the claim loop (which runs handlers in its own thread)."""

    def bye(task: schedq.Task) -> Any:
        sys.exit(3)

    bad = value(admin, "SELECT schedq.submit('bye', queue => %s, max_attempts => 1)", queue)
    run = start({"bye": bye, "ok": lambda task: None})
    poll(admin, "SELECT status::text || ' ' || last_error FROM schedq.task WHERE id = %s",
         "failed SystemExit: 3", bad)
    good = value(admin, "SELECT schedq.submit('ok', queue => %s)", queue)
    poll(admin, "SELECT status::text FROM schedq.task WHERE id = %s", "done", good)
    assert run.stop() is True


def test_retries_and_back_off(admin: Any, queue: str, start: Any) -> None:
    seen: List[int] = []
    at: List[float] = []

    def flaky(task: schedq.Task) -> Any:
        seen.append(task.attempt)
        at.append(time.monotonic())
        if task.attempt == 1:
            raise schedq.Retry("not yet")  # schedq's back-off: 1 s
        if task.attempt == 2:
            raise ValueError("boom")
        return {"attempt": task.attempt}

    def bad(task: schedq.Task) -> Any:
        raise schedq.Permanent("bad input: never")

    def later(task: schedq.Task) -> Any:
        raise schedq.Retry("in an hour", retry_in=3600)

    ids = [value(admin, "SELECT schedq.submit(%s, queue => %s)", kind, queue)
           for kind in ("flaky", "bad", "later", "nobody")]
    run = start({"flaky": flaky, "bad": bad, "later": later})
    poll(admin, "SELECT status || ' ' || attempts FROM schedq.task WHERE id = %s", "done 3", ids[0])
    run.stop()
    assert seen == [1, 2, 3]
    rows = admin.execute(
        "SELECT status, attempts, last_error, run_at > now() + interval '50 minutes'"
        "  FROM schedq.task WHERE id = ANY(%s) ORDER BY id", (ids,)).fetchall()
    assert rows[0][:3] == ("done", 3, "ValueError: boom")
    assert rows[1][:3] == ("failed", 1, "bad input: never"), "Permanent: no retry"
    assert rows[2] == ("pending", 1, "in an hour", True), "retry_in is kept"
    assert rows[3][:3] == ("failed", 1, "no handler for kind 'nobody'")
    # schedq's back-off: 1 s after the first attempt, doubling, +-25 % jitter.
    assert at[1] - at[0] >= 0.7, "about 1 s after the first failure"
    assert at[2] - at[1] >= 1.45, "about 2 s after the second"


def test_progress_is_visible(admin: Any, queue: str, start: Any) -> None:
    release = threading.Event()
    reported: List[bool] = []

    def slow(task: schedq.Task) -> Any:
        reported.append(task.progress(40, "forty"))
        release.wait(30)
        return None

    task_id = value(admin, "SELECT schedq.submit('slow', queue => %s)", queue)
    run = start({"slow": slow}, lease=3)
    poll(admin, "SELECT progress || ' ' || progress_note FROM schedq.task WHERE id = %s",
         "40 forty", task_id)
    # Heartbeats at a third of the lease keep it running past its lease.
    first = value(admin, "SELECT lease_expires_at FROM schedq.task WHERE id = %s", task_id)
    poll(admin, "SELECT lease_expires_at > %s FROM schedq.task WHERE id = %s", True, first, task_id)
    release.set()
    poll(admin, "SELECT status || ' ' || attempts FROM schedq.task WHERE id = %s", "done 1",
         task_id)
    run.stop()
    assert reported == [True]


def test_handler_in_its_own_transaction(dsn: str, admin: Any, queue: str, start: Any) -> None:
    table = f"effects_{queue}"
    admin.execute(f"CREATE TABLE {table} (task bigint PRIMARY KEY, note text)")
    calls: Dict[int, int] = collections.Counter()

    def write(task: schedq.Task) -> Any:
        calls[task.id] += 1
        with psycopg.connect(dsn) as c, c.transaction():
            c.execute(f"INSERT INTO {table} VALUES (%s, 'written')", (task.id,))
            assert task.complete_in(c, {"wrote": True}) is True
            if task.payload.get("raise"):
                raise RuntimeError("after the write")
        return "ignored: completed in the handler's transaction"

    ok = [value(admin, "SELECT schedq.submit('write', queue => %s)", queue) for _ in range(5)]
    boom = value(admin, "SELECT schedq.submit('write', '{\"raise\": true}', queue => %s,"
                 " max_attempts => 1)", queue)
    run = start({"write": write}, concurrency=3)
    poll(admin, "SELECT count(*) FROM schedq.task WHERE queue = %s"
         " AND status IN ('done', 'failed')", 6, queue)
    run.stop()
    assert value(admin, f"SELECT array_agg(task ORDER BY task) FROM {table}") == ok
    rows = admin.execute("SELECT id, status, result FROM schedq.task WHERE queue = %s ORDER BY id",
                         (queue,)).fetchall()
    assert rows == [(i, "done", {"wrote": True}) for i in ok] + [
        (boom, "failed", None)], "the write and the completion: both or neither"
    assert set(calls.values()) == {1}


def terminate(admin: Any, app: str) -> int:
    return int(value(admin, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                     " WHERE application_name = %s", app))


def test_lost_connections(admin: Any, queue: str, start: Any) -> None:
    app = f"py-{queue}"
    gate = threading.Event()
    calls: Dict[int, int] = collections.Counter()

    def work(task: schedq.Task) -> Any:
        calls[task.id] += 1
        gate.wait(60)
        return task.id

    admin.execute("SELECT schedq.submit('work', queue => %s) FROM generate_series(1, 20)", (queue,))
    run = start({"work": work}, concurrency=4, lease=30, application_name=app)
    poll(admin, "SELECT count(*) FROM schedq.task WHERE queue = %s AND status = 'running'", 4,
         queue)
    # Both connections of the pool (the claim loop's, the heartbeats')
    # once a heartbeat or a progress report made the second one.
    assert terminate(admin, app) >= 1
    poll(admin, "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", 0, app)
    gate.set()
    poll(admin, "SELECT count(*) FROM schedq.task WHERE queue = %s AND status = 'done'", 20, queue)
    # Idle in await_task: cut off again, then new tasks.
    poll(admin, "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
         " AND query LIKE 'CALL schedq.await_task%%' AND state = 'active'", 1, app)
    assert terminate(admin, app) >= 1
    admin.execute("SELECT schedq.submit('work', queue => %s) FROM generate_series(1, 5)", (queue,))
    poll(admin, "SELECT count(*) FROM schedq.task WHERE queue = %s AND status = 'done'", 25, queue)
    assert run.stop() is True
    assert len(calls) == 25 and set(calls.values()) == {1}, "nothing lost, nothing doubled"
    assert value(admin, "SELECT count(*) FROM schedq.task WHERE queue = %s AND attempts = 1"
                 " AND result = to_jsonb(id)", queue) == 25


def test_stop_now_leaves_tasks_to_the_reaper(admin: Any, queue: str, start: Any) -> None:
    started = threading.Event()

    def hang(task: schedq.Task) -> Any:
        started.set()
        threading.Event().wait(120)

    task_id = value(admin, "SELECT schedq.submit('hang', queue => %s)", queue)
    run = start({"hang": hang})
    wait_for(started.is_set, "the handler to start")
    assert run.stop(now=True) is False
    assert value(admin, "SELECT status FROM schedq.task WHERE id = %s", task_id) == "running"


def test_first_connection_failure(queue: str) -> None:
    pool = schedq.Pool("host=/nonexistent-dir port=1", {}, queues=[queue])
    with pytest.raises(schedq.ConnectError) as info:
        pool.run(install_signals=False)
    assert info.value.message.startswith("could not connect")


def test_a_handler_returning_nothing_leaves_no_result(admin: Any, queue: str, start: Any) -> None:
    admin.execute(
        "SELECT schedq.submit_many((SELECT jsonb_agg(jsonb_build_object('kind', k,"
        " 'queue', %s::text)) FROM unnest(ARRAY['nothing', 'null_json']) k))", (queue,))
    run = start({"nothing": lambda task: None, "null_json": lambda task: [None]})
    poll(admin, "SELECT count(*) FROM schedq.task WHERE queue = %s AND status = 'done'", 2, queue)
    run.stop()
    rows = admin.execute("SELECT kind, result IS NULL, result FROM schedq.task WHERE queue = %s"
                         " ORDER BY kind", (queue,)).fetchall()
    assert rows == [("nothing", True, None), ("null_json", False, [None])], \
        "None leaves the result NULL, as in the Go and Node.js libraries"
