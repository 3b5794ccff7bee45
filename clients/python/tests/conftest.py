"""Fixtures: a real server with schedq 1.2, named by SCHEDQ_TEST_DSN (a
superuser's connection string; the TAP test t/090_client_python.pl sets
it). Each test works in a queue of its own."""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid
from typing import Any, Callable, Iterator, List, Optional

import psycopg
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import schedq  # noqa: E402

DEADLINE = 60.0


@pytest.fixture(scope="session")
def dsn() -> str:
    value = os.environ.get("SCHEDQ_TEST_DSN")
    if value is None:
        pytest.fail("SCHEDQ_TEST_DSN names no server (run through t/090_client_python.pl)")
    return value


@pytest.fixture
def admin(dsn: str) -> Iterator["psycopg.Connection[Any]"]:
    """An autocommit superuser connection, to look."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield conn


@pytest.fixture
def conn(dsn: str) -> Iterator["psycopg.Connection[Any]"]:
    """A connection in transaction mode, as an application has."""
    with psycopg.connect(dsn) as c:
        yield c


@pytest.fixture
def queue() -> str:
    return "q_" + uuid.uuid4().hex[:12]


def value(admin: "psycopg.Connection[Any]", sql: str, *params: Any) -> Any:
    row = admin.execute(sql, params).fetchone()
    return None if row is None else row[0]


def poll(admin: "psycopg.Connection[Any]", sql: str, expected: Any, *params: Any,
         timeout: float = DEADLINE) -> Any:
    """Runs sql until it returns expected (or a callable of it says so);
    the last value. Waits on a condition with a deadline."""
    end = time.monotonic() + timeout
    while True:
        got = value(admin, sql, *params)
        ok = expected(got) if callable(expected) else got == expected
        if ok:
            return got
        if time.monotonic() > end:
            pytest.fail(f"waited {timeout} s for {sql!r} to be {expected!r}; last {got!r}")
        time.sleep(0.05)


def wait_for(cond: Callable[[], bool], what: str, timeout: float = DEADLINE) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            pytest.fail(f"waited {timeout} s for {what}")
        time.sleep(0.02)


class Running:
    """A Pool running in a thread of the test."""

    def __init__(self, pool: schedq.Pool) -> None:
        self.pool = pool
        self.result: List[Optional[bool]] = [None]
        self.error: List[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.result[0] = self.pool.run(install_signals=False)
        except BaseException as e:  # noqa: BLE001 - reported by stop()
            self.error.append(e)

    def stop(self, now: bool = False) -> Optional[bool]:
        self.pool.stop(now=now)
        self.thread.join(DEADLINE)
        assert not self.thread.is_alive(), "the pool did not stop"
        if self.error:
            raise self.error[0]
        return self.result[0]


@pytest.fixture
def start(dsn: str, queue: str) -> Iterator[Callable[..., Running]]:
    runs: List[Running] = []

    def starter(handlers: Any, **options: Any) -> Running:
        options.setdefault("queues", [queue])
        options.setdefault("wait", 5)
        run = Running(schedq.Pool(dsn, handlers, **options))
        runs.append(run)
        return run

    yield starter
    for run in runs:
        if run.thread.is_alive():
            run.pool.stop(now=True)
            run.thread.join(10)
