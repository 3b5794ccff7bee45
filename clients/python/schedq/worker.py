"""A worker pool in one process: handlers by kind, one claim loop.

The loop claims for every free handler slot at once and reports the
successes of the handlers that finished since its last call together
with the next claim, in one statement (schedq.complete_and_claim); a
success counts as done only once that statement has committed. Failures
are reported at once (schedq.fail). When there is nothing to claim the
loop waits in schedq.await_task, holding nothing. Heartbeats go out
every third of the lease for every running task, in one statement, on a
second connection, which also carries progress reports and failures.
A claimed batch's handlers run one after another in the loop's own
thread; a watchdog hands the rest of the batch to the handler threads,
and the loop to a new thread, once the batch has run for one to two
ticks of HANDOFF.
"""

from __future__ import annotations

import logging
import queue as queue_mod
import random
import signal
import socket
import os
import threading
import time
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import psycopg
from psycopg.rows import tuple_row
from psycopg.types.json import Jsonb

from . import client
from .errors import ConnectError, from_psycopg

log = logging.getLogger("schedq.worker")
task_log = logging.getLogger("schedq.tasks")

# Lost connections, and a server turned read-only (a primary fenced off in
# a failover): connect again.
_TRANSIENT = (psycopg.OperationalError, psycopg.errors.ReadOnlySqlTransaction)



def _result(value: Any) -> Optional[Jsonb]:
    """A handler's return as the task's result: None leaves it NULL."""
    return None if value is None else Jsonb(value)

class Retry(Exception):
    """Raised by a handler: a temporary failure. The task runs again after
    retry_in seconds, or after schedq's back-off when None, while attempts
    remain."""

    def __init__(self, message: str, retry_in: Optional[float] = None) -> None:
        super().__init__(message)
        self.retry_in = retry_in


class Permanent(Exception):
    """Raised by a handler: the task can never succeed; fail it without
    retrying."""


@dataclass
class Task:
    """A claimed task, as a handler sees it."""

    id: int
    attempt: int
    queue: str
    kind: str
    payload: Any
    priority: int
    run_id: Optional[int]
    token: str
    _pool: "Pool" = field(repr=False)
    _completed_in: bool = field(default=False, repr=False)
    _stale: bool = field(default=False, repr=False)
    _started: float = field(default=0.0, repr=False)

    @property
    def stale(self) -> bool:
        """True once a heartbeat found the task no longer this attempt's
        (canceled, taken back): its outcome will change nothing."""
        return self._stale

    def progress(self, percent: Optional[float], note: Optional[str] = None) -> bool:
        """schedq.progress: records how far the task has come (0 to 100)
        and extends its lease; False when the token is stale or the
        report could not be sent (the connection is being made again)."""
        return self._pool._progress(self, percent, note)

    def complete_in(self, conn: client.Conn, result: Any = None) -> bool:
        """Completes the task on the caller's connection, in the caller's
        transaction (schedq.complete): the handler's writes and the
        completion commit together, or neither does. The pool then does
        not complete it again. False when the token is stale."""
        done = client._one(
            conn, "SELECT schedq.complete(%s::text, %s::jsonb)", (self.token, _result(result))
        )
        self._completed_in = True
        return bool(done)


Handler = Callable[[Task], Any]

# The watchdog's tick (Pool._watchdog): a batch seen running in the loop's
# thread at two ticks in a row is handed off. It sleeps after IDLE_TICKS
# ticks without a batch.
HANDOFF = 0.001
IDLE_TICKS = 100


class _HandedOff(Exception):
    """The claim loop goes on in another thread (Pool._hand_off)."""


class _Batch:
    """The tasks of one claim, run one after another by the claim loop's
    thread, which costs short handlers least (no thread to wake for each
    batch, no switch of the GIL); once handed off, the handler slots take
    its remaining tasks."""

    def __init__(self, tasks: List[Task], conn: "psycopg.Connection[Tuple[Any, ...]]") -> None:
        self.tasks = tasks
        self.conn = conn  # the claim loop's, for the thread it is handed to
        self.next = 0  # the next task not yet started
        self.handed = False  # handed off
        self.ran = False  # ran to its end in the loop's thread
        self.lock = threading.Lock()

    def take(self) -> Optional[Task]:
        with self.lock:
            if self.next >= len(self.tasks):
                return None
            self.next += 1
            return self.tasks[self.next - 1]


def reason(error: BaseException) -> str:
    """The server's words for an error (after libpq's "FATAL:" when it
    refused the connection), else the error's first line."""
    diag = getattr(error, "diag", None)
    if diag is not None and diag.message_primary:
        return str(diag.message_primary)
    text = str(error).strip()
    if "FATAL:" in text:
        return text.rsplit("FATAL:", 1)[1].strip().splitlines()[0]
    return first_line(error)


def _clip(text: str, limit: int) -> str:
    """text cut to at most limit bytes of UTF-8."""
    return text.encode()[:limit].decode("utf-8", "ignore")


def first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


class _Aux:
    """The second connection: heartbeats, progress, failures. Made again
    on demand after it was lost; psycopg runs one statement at a time."""

    def __init__(self, pool: "Pool") -> None:
        self.pool = pool
        self.lock = threading.Lock()
        self.conn: Optional[psycopg.Connection[Tuple[Any, ...]]] = None

    def call(self, sql: str, params: Sequence[Any], retry: bool) -> List[Tuple[Any, ...]]:
        backoff = 0.1
        while True:
            try:
                with self.lock:
                    if self.conn is None or self.conn.closed:
                        self.conn = self.pool._connect()
                    return self.conn.execute(sql, params).fetchall()
            except _TRANSIENT as e:
                self.close()
                if not retry or self.pool._hard.is_set():
                    raise
                log.info("report failed (%s); retrying in %.1f s", first_line(e), backoff)
                self.pool._hard.wait(backoff * random.uniform(0.75, 1.25))
                backoff = min(backoff * 2, 2.0)

    def close(self) -> None:
        with self.lock:
            if self.conn is not None:
                self.conn.close()
                self.conn = None


class Pool:
    """Runs handlers for claimed tasks, `concurrency` at a time.

    conninfo: a libpq connection string or URI ("" for the PG* environment
    and ~/.pgpass); queues: None for every queue; caps: the worker's
    capabilities; batch: most tasks per claim (default: concurrency);
    lease and wait in seconds; name: recorded in claimed_by.
    """

    def __init__(
        self,
        conninfo: str = "",
        handlers: Optional[Mapping[str, Handler]] = None,
        *,
        queues: Optional[Sequence[str]] = None,
        caps: Sequence[str] = (),
        concurrency: int = 10,
        batch: Optional[int] = None,
        lease: float = 30.0,
        wait: float = 30.0,
        name: Optional[str] = None,
        application_name: str = "schedq-worker",
        connect_kwargs: Optional[Mapping[str, Any]] = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.conninfo = conninfo
        self.handlers: Dict[str, Handler] = dict(handlers or {})
        self.queues = list(queues) if queues is not None else None
        self.caps = list(caps)
        self.concurrency = concurrency
        self.batch = min(batch or concurrency, 1000)
        self.lease = float(lease)
        self.wait = float(wait)
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        self.application_name = application_name
        self.connect_kwargs = dict(connect_kwargs or {})
        self._cond = threading.Condition(threading.RLock())
        self._stopping = threading.Event()
        self._hard = threading.Event()
        self._busy = 0  # handler slots in use
        self._running: Dict[str, Task] = {}  # claimed and not yet reported
        self._done: List[Tuple[Task, Any]] = []  # successes not yet committed
        self._work: "queue_mod.SimpleQueue[Optional[_Batch]]" = queue_mod.SimpleQueue()
        self._watch = threading.Condition()  # the watchdog's
        self._inline: Optional[_Batch] = None  # the batch the loop's thread runs
        self._dog_asleep = False
        # run() returns: the claim loop ended, wherever it ran (its error
        # in _error), or stop(now=True).
        self._release = threading.Event()
        self._error: Optional[BaseException] = None
        self._waiting: Optional[psycopg.Connection[Any]] = None  # in await_task
        self._woken = False
        self._aux = _Aux(self)
        self._signals = 0
        self._sleeping = False  # the loop waits on _cond
        self.statements = 0  # complete_and_claim calls made
        self._gather = float(os.environ.get("SCHEDQ_GATHER", "0.001"))

    # --- registration and control

    def handler(self, kind: str) -> Callable[[Handler], Handler]:
        """A decorator: @pool.handler("email.send")."""

        def register(fn: Handler) -> Handler:
            self.handlers[kind] = fn
            return fn

        return register

    def stop(self, now: bool = False) -> None:
        """Stop claiming and let the running handlers finish (now: leave
        them; their tasks go back to the queue after their lease). Safe
        from a signal handler or another thread."""
        self._stopping.set()
        if now:
            self._hard.set()
            self._release.set()
        self._wake()

    def _on_signal(self, signum: int, frame: Optional[FrameType]) -> None:
        self._signals += 1
        name = signal.Signals(signum).name
        if self._signals == 1:
            log.info("%s: finishing the tasks in hand", name)
            self.stop()
        else:
            log.info("%s again: stopping now; the tasks in hand go back after their lease", name)
            self.stop(now=True)

    def _wake(self) -> None:
        """Ends the loop's await_task early, and its wait for a slot."""
        with self._cond:
            self._wake_locked(True)

    def _wake_locked(self, always: bool) -> None:
        """_wake, holding _cond. After a handler (always False) only when
        the loop has something to do: its first outcome since the loop
        last took them (the loop then waits at most _gather for others),
        a batch's worth of free slots, none busy, or a stop. Fewer
        wake-ups of the loop's thread, fewer switches of the GIL."""
        if self._sleeping and (always or len(self._done) == 1 or self._busy == 0
                               or self.concurrency - self._busy >= self.batch
                               or self._stopping.is_set()):
            self._cond.notify_all()
        conn = self._waiting
        if conn is not None and not self._woken:
            self._woken = True
            try:
                conn.cancel()
            except psycopg.Error:
                pass

    # --- connections

    def _connect(self) -> "psycopg.Connection[Tuple[Any, ...]]":
        kwargs: Dict[str, Any] = dict(
            autocommit=True,
            application_name=self.application_name,
            prepare_threshold=None,  # poolers: no server-side prepare
            row_factory=tuple_row,
        )
        kwargs.update(self.connect_kwargs)
        return psycopg.connect(self.conninfo, **kwargs)

    # --- running

    def run(self, install_signals: bool = True) -> bool:
        """Works until stop() (or SIGTERM/SIGINT, when called in the main
        thread with install_signals): True when every task in hand was
        reported, False after a stop at once. Raises ConnectError when the
        first connection fails, and the named error of a fatal one
        (PermissionDenied for a missing grant)."""
        if install_signals and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._on_signal)
            signal.signal(signal.SIGINT, self._on_signal)
        threads = [threading.Thread(target=self._slot, daemon=True, name=f"schedq-{i}")
                   for i in range(self.concurrency)]
        for t in threads:
            t.start()
        beat = threading.Thread(target=self._heartbeats, daemon=True, name="schedq-heartbeat")
        beat.start()
        watchdog = threading.Thread(target=self._watchdog, daemon=True, name="schedq-watchdog")
        watchdog.start()
        # The claim loop runs in a thread of its own (it runs handlers, and
        # moves to a new thread behind a slow one): this one waits, and
        # takes the signals.
        threading.Thread(target=self._own_loop, daemon=True, name="schedq-loop").start()
        try:
            while not self._release.wait(1.0):
                pass
            if self._error is not None:
                raise self._error
        finally:
            self._stopping.set()
            for _ in threads:
                self._work.put(None)
            if not self._hard.is_set():
                for t in threads:
                    t.join()
            self._hard.set()  # the heartbeats and the watchdog end
            with self._watch:
                self._watch.notify_all()
            beat.join(timeout=5)
            watchdog.join(timeout=5)
            self._aux.close()
        with self._cond:
            left = len(self._running)
        if left:
            log.info("stopping with %d tasks not reported: they run again after their lease", left)
        log.info("stopped")
        return left == 0

    def _own_loop(self, conn: "Optional[psycopg.Connection[Tuple[Any, ...]]]" = None) -> None:
        """Runs the claim loop in this thread until it ends (_release, its
        error in _error) or is handed to another thread."""
        try:
            if self._main(conn):
                return
        except BaseException as e:
            self._error = e
        self._release.set()

    def _main(self, conn: "Optional[psycopg.Connection[Tuple[Any, ...]]]" = None) -> bool:
        """The claim loop, connecting again after a lost connection; conn:
        the loop's, when it is handed over. True when it was handed off."""
        backoff = 0.1
        connected = conn is not None
        while not self._hard.is_set():
            if conn is None:
                try:
                    conn = self._connect()
                except psycopg.OperationalError as e:
                    if not connected:
                        raise ConnectError(f"could not connect: {reason(e)}", cause=e) from e
                    self._pause(f"connection failed ({first_line(e)})", backoff)
                    backoff = min(backoff * 2, 2.0)
                    continue
                log.info("connected to %s:%s", conn.info.host, conn.info.port)
            handed = False
            try:
                if not connected:
                    client.check_version(conn)
                connected = True
                backoff = 0.1
                self._loop(conn)
                return False
            except _HandedOff:
                handed = True
                return True
            except _TRANSIENT as e:
                if self._hard.is_set():
                    return False
                lost = "server read-only" if e.sqlstate == "25006" else "connection lost"
                self._pause(f"{lost} ({first_line(e)})", backoff)
                backoff = min(backoff * 2, 2.0)
            except psycopg.errors.QueryCanceled as e:
                # A wake-up that came late, or a statement_timeout: the
                # statement changed nothing; its completions are sent again.
                self._pause(f"statement canceled ({first_line(e)})", backoff)
                backoff = min(backoff * 2, 2.0)
            except psycopg.Error as e:
                self._hard.set()
                raise from_psycopg(e) from e
            finally:
                if not handed:
                    conn.close()
                    conn = None
        return False

    def _pause(self, what: str, backoff: float) -> None:
        delay = backoff * random.uniform(0.75, 1.25)
        log.info("%s; retrying in %.1f s", what, delay)
        self._hard.wait(delay)

    def _loop(self, conn: "psycopg.Connection[Tuple[Any, ...]]") -> None:
        while not self._hard.is_set():
            with self._cond:
                done = list(self._done)
                free = self.concurrency - self._busy
                busy = self._busy
            if self._stopping.is_set():
                if done:
                    self._complete_many(conn, done)
                    continue
                if busy == 0:
                    return
                with self._cond:
                    if not self._done and self._busy > 0 and not self._hard.is_set():
                        self._sleep(1.0)
                continue
            if free == 0:
                with self._cond:
                    if self._busy >= self.concurrency and not self._stopping.is_set():
                        self._sleep(1.0)
                continue
            if busy and free < self.batch and done and self._gather:
                # Handlers finishing together: one statement for them all,
                # once a batch's worth of slots is free, or after _gather.
                with self._cond:
                    until = time.monotonic() + self._gather
                    while (self._busy and self.concurrency - self._busy < self.batch
                           and not self._stopping.is_set()):
                        left = until - time.monotonic()
                        if left <= 0:
                            break
                        self._sleep(left)
                    done = list(self._done)
                    free = self.concurrency - self._busy
            n = min(free, self.batch)
            rows = conn.execute(
                "SELECT id, attempt, queue, kind, payload, priority, run_id, token"
                "  FROM schedq.complete_and_claim(%s::text[], %s::text, %s::jsonb[],"
                "       queues => %s::text[], caps => %s::text[], n => %s::integer,"
                "       lease => make_interval(secs => %s))",
                ([t.token for t, _ in done], self.name, [_result(r) for _, r in done],
                 self.queues, self.caps, n, self.lease),
            ).fetchall()
            self.statements += 1
            self._acked(done)
            self._dispatch(conn, rows)
            if rows or done:
                continue
            self._await(conn)

    def _sleep(self, timeout: float) -> None:
        """Waits (holding _cond) for a handler to finish, or a stop."""
        self._sleeping = True
        try:
            self._cond.wait(timeout)
        finally:
            self._sleeping = False

    def _await(self, conn: "psycopg.Connection[Tuple[Any, ...]]") -> None:
        with self._cond:
            if self._done or self._stopping.is_set():
                return
            # While handlers run, wake up at least every third of the
            # lease, in case a wake-up came before the wait began.
            wait = min(self.wait, self.lease / 3) if self._busy else self.wait
            self._waiting, self._woken = conn, False
        try:
            conn.execute(
                "CALL schedq.await_task(queues => %s::text[], caps => %s::text[],"
                " wait => make_interval(secs => %s))",
                (self.queues, self.caps, wait),
            )
        except psycopg.errors.QueryCanceled:
            if not self._woken:
                raise
        finally:
            with self._cond:
                self._waiting = None

    def _complete_many(self, conn: "psycopg.Connection[Tuple[Any, ...]]",
                       done: List[Tuple[Task, Any]]) -> None:
        conn.execute(
            "SELECT schedq.complete_many(%s::text[], %s::jsonb[])",
            ([t.token for t, _ in done], [_result(r) for _, r in done]),
        )
        self._acked(done)

    def _acked(self, done: List[Tuple[Task, Any]]) -> None:
        """The completions of `done` have committed."""
        with self._cond:
            del self._done[: len(done)]
            for task, _ in done:
                self._running.pop(task.token, None)
        for task, _ in done:
            self._outcome(task, "stale" if task._stale else "done")

    def _dispatch(self, conn: "psycopg.Connection[Tuple[Any, ...]]",
                  rows: List[Tuple[Any, ...]]) -> None:
        """Runs the claimed tasks' handlers in this thread, the loop's;
        raises _HandedOff when the loop went on in another thread
        meanwhile (this one then ends)."""
        tasks = [Task(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], self) for r in rows]
        if not tasks:
            return
        with self._cond:
            self._busy += len(tasks)
            for task in tasks:
                self._running[task.token] = task
        batch = _Batch(tasks, conn)
        self._inline = batch
        if self._dog_asleep:
            with self._watch:
                self._dog_asleep = False
                self._watch.notify()
        try:
            job = batch.take()
            while job is not None and not self._hard.is_set():
                self._run_task(job)
                job = batch.take()
        finally:
            with batch.lock:
                if self._inline is batch:
                    self._inline = None
                batch.ran = not batch.handed
        if not batch.ran:
            raise _HandedOff()

    def _hand_off(self, batch: _Batch) -> None:
        """The batch's tasks not yet started go to the handler slots, and
        the claim loop to a new thread, unless the batch already ran."""
        with batch.lock:
            if batch.ran or batch.handed:
                return
            batch.handed = True
            left = len(batch.tasks) - batch.next
            if self._inline is batch:  # the watchdog may sleep meanwhile
                self._inline = None
        for _ in range(left):
            self._work.put(batch)
        threading.Thread(target=self._own_loop, args=(batch.conn,), daemon=True,
                         name="schedq-loop").start()

    # --- handler slots

    def _slot(self) -> None:
        while True:
            batch = self._work.get()
            if batch is None:
                return
            task = batch.take()
            while task is not None:
                self._run_task(task)
                task = batch.take()

    def _watchdog(self) -> None:
        """Hands off a batch seen running in the loop's thread at two ticks
        in a row. It ticks only while batches come (a wake-up of this
        thread for each batch cost the pool a tenth of its rate), and
        sleeps after IDLE_TICKS ticks without one, until _dispatch wakes
        it."""
        seen: Optional[_Batch] = None
        idle = 0
        with self._watch:
            while not self._hard.is_set():
                if idle < IDLE_TICKS:
                    self._watch.wait(HANDOFF)
                else:
                    self._dog_asleep = True
                    if self._inline is None:  # else _dispatch may have missed it
                        self._watch.wait()
                    self._dog_asleep = False
                    idle = 0
                batch = self._inline
                if batch is not None and batch is seen:
                    self._hand_off(batch)
                seen = batch
                idle = 0 if batch is not None else idle + 1

    def _run_task(self, task: Task) -> None:
        task._started = time.monotonic()
        handler = self.handlers.get(task.kind)
        retry_in: Optional[float] = None
        permanent = False
        try:
            if handler is None:
                raise Permanent(f"no handler for kind {task.kind!r}")
            result = handler(task)
        except Retry as e:
            error, retry_in = str(e), e.retry_in
        except Permanent as e:
            error, permanent = str(e), True
        except BaseException as e:  # a bug or an outage: schedq's back-off
            # (SystemExit, a CancelledError too: the attempt fails, the
            # pool goes on; nothing a handler raises reaches the loop)
            error = f"{type(e).__name__}: {e}"
        else:
            with self._cond:
                self._busy -= 1
                if task._completed_in:
                    self._running.pop(task.token, None)
                else:
                    self._done.append((task, result))
                self._wake_locked(False)
            if task._completed_in:
                self._outcome(task, "done")
            return
        self._fail(task, error, retry_in, permanent)

    def _fail(self, task: Task, error: str, retry_in: Optional[float], permanent: bool) -> None:
        status: Optional[str] = None
        given_up = False
        try:
            rows = self._aux.call(
                "SELECT schedq.fail(%s::text, %s::text,"
                " retry_in => make_interval(secs => %s), permanent => %s::boolean)",
                (task.token, _clip(error, 65536), retry_in, permanent),
                retry=True,
            )
            status = rows[0][0]
        except _TRANSIENT as e:
            log.info("task %d: failure not reported (%s)", task.id, first_line(e))
        except psycopg.Error as e:
            # Not for a retry: the reaper takes the task back after its lease.
            log.warning("task %d: failure not reported: %s", task.id, reason(e))
            given_up = True
        with self._cond:
            self._busy -= 1
            if status is not None or given_up:
                self._running.pop(task.token, None)
        if status is not None:
            outcome = {"failed": "failed", "stale": "stale"}.get(status, "retry")
            self._outcome(task, outcome, error)
        self._wake()

    def _outcome(self, task: Task, outcome: str, error: Optional[str] = None) -> None:
        if not task_log.isEnabledFor(logging.INFO):
            return
        ms = int((time.monotonic() - task._started) * 1000)
        if error:
            task_log.info("task=%d kind=%s attempt=%d outcome=%s ms=%d error=%r",
                          task.id, task.kind, task.attempt, outcome, ms, error)
        else:
            task_log.info("task=%d kind=%s attempt=%d outcome=%s ms=%d",
                          task.id, task.kind, task.attempt, outcome, ms)

    def _progress(self, task: Task, percent: Optional[float], note: Optional[str]) -> bool:
        try:
            rows = self._aux.call(
                "SELECT schedq.progress(%s::text, %s::real, %s::text)",
                (task.token, percent, note), retry=False,
            )
        except _TRANSIENT as e:
            log.info("task %d: progress not reported (%s)", task.id, first_line(e))
            return False
        except psycopg.Error as e:
            raise from_psycopg(e) from e
        if rows[0][0] is None:
            task._stale = True
            return False
        return True

    def _heartbeats(self) -> None:
        while not self._hard.wait(self.lease / 3):
            with self._cond:
                tokens = list(self._running)
            if not tokens:
                continue
            try:
                rows = self._aux.call(
                    "SELECT t, schedq.heartbeat(t) FROM unnest(%s::text[]) AS t",
                    (tokens,), retry=False,
                )
            except psycopg.Error as e:
                log.info("heartbeat failed: %s", first_line(e))
                continue
            with self._cond:
                for token, expires in rows:
                    task = self._running.get(token)
                    if expires is None and task is not None:
                        task._stale = True
