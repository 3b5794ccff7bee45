"""SIGTERM: a worker process drains its handlers, claims nothing more and
exits 0; nothing lost, nothing doubled. A second signal stops at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any, Dict, List

import psycopg
import pytest

from conftest import DEADLINE, poll, value, wait_for

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child_worker.py")


def spawn(dsn: str, queue: str, effects: str, log: str) -> "subprocess.Popen[bytes]":
    env = dict(os.environ, SCHEDQ_DSN=dsn, SCHEDQ_QUEUES=queue, SCHEDQ_CONCURRENCY="4",
               SCHEDQ_BATCH="4", SCHEDQ_LEASE="6", SCHEDQ_WAIT="20", EFFECTS=effects)
    out = open(log, "ab")
    return subprocess.Popen([sys.executable, CHILD], env=env, stdout=out, stderr=out)


def effects(path: str) -> List[str]:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().split("\n")[:-1]


def test_sigterm_drains_and_nothing_is_lost_or_doubled(dsn: str, admin: Any, queue: str,
                                                        tmp_path: Any) -> None:
    eff, log = str(tmp_path / "effects"), str(tmp_path / "log")
    ids = [r[0] for r in admin.execute(
        "SELECT schedq.submit('slow', '{\"seconds\": 1}', queue => %s) FROM generate_series(1, 12)",
        (queue,)).fetchall()]
    child = spawn(dsn, queue, eff, log)
    poll(admin, "SELECT count(*) FROM schedq.task WHERE queue = %s AND status = 'running'", 4, queue)
    child.send_signal(signal.SIGTERM)
    assert child.wait(DEADLINE) == 0, open(log).read()
    after = dict(admin.execute("SELECT status, count(*) FROM schedq.task WHERE queue = %s"
                               " GROUP BY 1", (queue,)).fetchall())
    done = len(effects(eff))
    assert done >= 4 and after.get("done") == done, (after, open(log).read())
    assert after.get("available") == 12 - done and "running" not in after, \
        "the tasks in hand were finished and no more claimed"
    child = spawn(dsn, queue, eff, log)
    poll(admin, "SELECT count(*) FROM schedq.task WHERE queue = %s AND status = 'done'", 12, queue)
    child.send_signal(signal.SIGTERM)
    assert child.wait(DEADLINE) == 0
    lines = effects(eff)
    assert sorted(lines) == sorted(f"{i} 1" for i in ids), "each handler ran once, on attempt 1"
    text = open(log).read()
    assert text.count("outcome=done") == 12
    assert "SIGTERM: finishing the tasks in hand" in text


def test_second_signal_stops_at_once(dsn: str, admin: Any, queue: str, tmp_path: Any) -> None:
    eff, log = str(tmp_path / "effects"), str(tmp_path / "log")
    task_id = value(admin, "SELECT schedq.submit('slow', '{\"seconds\": 60}', queue => %s)", queue)
    child = spawn(dsn, queue, eff, log)
    poll(admin, "SELECT status FROM schedq.task WHERE id = %s", "running", task_id)
    child.send_signal(signal.SIGTERM)
    wait_for(lambda: "finishing the tasks in hand" in open(log).read(), "the first signal's line")
    child.send_signal(signal.SIGTERM)
    assert child.wait(15) == 1, open(log).read()
    assert value(admin, "SELECT status FROM schedq.task WHERE id = %s", task_id) == "running", \
        "left to the reaper after its lease"
    assert effects(eff) == []
    assert "again: stopping now" in open(log).read()
