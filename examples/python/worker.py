#!/usr/bin/env python3
"""A schedq worker in Python, with psycopg 3.

    PGHOST=... PGUSER=worker SCHEDQ_QUEUES=default python3 worker.py

Copy it into your application and replace HANDLERS with your own code.

The protocol, in the order this loop follows it:

1. schedq.complete_and_claim(tokens, worker, ..., n, lease) hands out up
   to n tasks (with no tokens it is schedq.claim without a wait),
   each with a token: the signed grant of this attempt of this task.  Every
   later call about the task carries the token, from any session.
   Grants are fenced: the token of an attempt that is no longer running
   (its lease expired and the reaper took the task back, it was canceled,
   it already finished) is stale, and a call with it changes nothing and
   says so (heartbeat returns NULL, fail 'stale', complete_many false).  A slow
   or cut-off worker can never overwrite a newer attempt, and repeating a
   report that may or may not have reached the server is safe.
2. Nothing to claim: CALL schedq.await_task(...) sleeps until a task this
   worker could claim is available, or `wait` passes, holding no snapshot
   and no lock (so VACUUM is not held back by idle workers); then claim
   again, since another worker may have been quicker.  It must run outside
   a transaction block: the connection is in autocommit mode.
3. While a task runs, schedq.heartbeat(token) extends its lease.  Beating
   every third of the lease keeps it alive through a missed beat.
4. schedq.fail(token, error, retry_in, permanent) at once for a failure:
   it retries the task with backoff while attempts remain (after retry_in
   if given); permanent => true for input that can never succeed.
5. The batch done, schedq.complete_and_claim(tokens, worker, results,
   queues, caps, n, lease) completes its successes and claims the next
   batch in one statement and one commit (the first call passes no
   tokens; it is then a plain claim).  It says nothing of a stale token
   (it changes nothing), so a task canceled after its last heartbeat is
   logged done.  When it claims nothing, wait (step 2).  While stopping,
   schedq.complete_many(tokens, results) completes them and claims nothing.

Delivery is at least once: if a worker dies mid-task, or stays cut off
from the server longer than the lease, the reaper takes its task back when
the lease expires and the task runs again.  Handlers must be idempotent.

Settings, from the environment: the connection the libpq way (PGHOST,
PGPORT, PGUSER, PGDATABASE, PGPASSWORD or ~/.pgpass, PGSERVICE ...), or a
conninfo string or URI in SCHEDQ_DSN; SCHEDQ_QUEUES and SCHEDQ_CAPS, comma
lists (default: every queue, no capability); SCHEDQ_BATCH, tasks per claim
(10); SCHEDQ_LEASE, seconds (30); SCHEDQ_WAIT, longest await_task, seconds
(30); SCHEDQ_WORKER, the name recorded in claimed_by (host:pid).

SIGTERM or SIGINT: finish the tasks claimed, claim no more, exit 0.  A
second signal exits at once (the reaper takes the tasks back after their
lease).  Logs one line per attempt on stdout.

Failures, as schedqctl's: the first connection fails (a wrong password,
say): one line on stderr, exit 3.  A privilege is missing: one line, exit
4.  A connection lost later: reconnect after 0.1 s, doubling up to 2 s,
each delay jittered by +-25 %, so that a restart or a failover costs about
a second once the server takes connections again.

Several servers: libpq's multi-host strings work as they are, in
SCHEDQ_DSN ("host=db1,db2 port=5432,5432 target_session_attrs=read-write")
or in PGHOST, PGPORT and PGTARGETSESSIONATTRS; each (re)connection tries
them in turn, and the worker logs the host and port it reached.

Connection poolers (PgBouncer in transaction mode): each statement here
is a transaction of its own, and psycopg is told never to prepare
statements on the server (prepare_threshold=None), since the next
statement may run on another server connection of the pool.
"""

import os
import random
import signal
import socket
import sys
import threading
import time

import psycopg
from psycopg.types.json import Jsonb


class Retry(Exception):
    """A temporary failure: try again after retry_in seconds, or after
    schedq's backoff (1 s, doubling, capped at an hour) when None."""

    def __init__(self, message, retry_in=None):
        super().__init__(message)
        self.retry_in = retry_in


class BadInput(Exception):
    """Input that can never succeed: fail the task without retrying."""


# --- Handlers: kind -> function(payload, attempt) returning a JSON result.


def add(payload, attempt):
    numbers = payload.get("numbers") if isinstance(payload, dict) else None
    if not isinstance(numbers, list) or not all(
        isinstance(x, (int, float)) and not isinstance(x, bool) for x in numbers
    ):
        raise BadInput('add needs {"numbers": [n, ...]}')
    return {"sum": sum(numbers)}


def flaky(payload, attempt):
    if attempt == 1:
        raise Retry("flaky: the first attempt always fails")
    return {"attempt": attempt}


def sleep(payload, attempt):
    seconds = payload.get("seconds") if isinstance(payload, dict) else None
    if not isinstance(seconds, (int, float)) or not 0 <= seconds <= 3600:
        raise BadInput('sleep needs {"seconds": 0..3600}')
    time.sleep(seconds)
    return {"slept": seconds}


HANDLERS = {"add": add, "flaky": flaky, "sleep": sleep}


# --- The loop.


def env_list(name):
    value = os.environ.get(name, "")
    return [v.strip() for v in value.split(",") if v.strip()]


class Worker:
    def __init__(self):
        self.dsn = os.environ.get("SCHEDQ_DSN", "")
        self.name = os.environ.get(
            "SCHEDQ_WORKER", f"{socket.gethostname()}:{os.getpid()}"
        )
        self.queues = env_list("SCHEDQ_QUEUES") or None  # None: every queue
        self.caps = env_list("SCHEDQ_CAPS")
        self.batch = int(os.environ.get("SCHEDQ_BATCH", "10"))
        self.lease = float(os.environ.get("SCHEDQ_LEASE", "30"))
        self.wait = float(os.environ.get("SCHEDQ_WAIT", "30"))
        self.stopping = threading.Event()
        self.waiting_on = None  # the connection while it is in await_task
        self.unreported = []  # (task, outcome) of failures not yet reported
        self.pending = []  # (task, outcome) of successes not yet completed

    def on_signal(self, signum, frame):
        # A second signal takes the default action: the process ends.
        signal.signal(signum, signal.SIG_DFL)
        log(f"{signal.Signals(signum).name}: finishing the tasks in hand")
        self.stopping.set()
        conn = self.waiting_on
        if conn is not None:
            conn.cancel()  # ends await_task at once; it holds nothing

    def run(self):
        backoff = 0.1
        connected = False  # once: later failures are retried
        while not self.stopping.is_set():
            try:
                try:
                    conn = psycopg.connect(
                        self.dsn,
                        autocommit=True,
                        application_name="schedq-worker",
                        prepare_threshold=None,  # poolers: no server-side prepare
                    )
                except psycopg.OperationalError as e:
                    if not connected:
                        fatal(3, f"could not connect: {reason(e)}")
                    raise
                log(f"connected to {conn.info.host}:{conn.info.port}")
                connected = True
                with conn:
                    backoff = 0.1
                    self.work(conn)
            except (
                psycopg.errors.InsufficientPrivilege,
                psycopg.errors.InvalidSchemaName,
            ) as e:
                fatal(4, f"missing privilege: {reason(e)} (see docs/security.md#roles)")
            except psycopg.OperationalError as e:
                if self.stopping.is_set():
                    if self.unreported or self.pending:
                        n = len(self.unreported) + len(self.pending)
                        log(
                            f"stopping with {n} outcomes not"
                            f" reported ({first_line(e)}): their tasks run"
                            " again after their lease"
                        )
                    break
                delay = backoff * random.uniform(0.75, 1.25)
                log(f"connection lost ({first_line(e)}); retrying in {delay:.1f} s")
                self.stopping.wait(delay)
                backoff = min(backoff * 2, 2)
        log("stopped")

    def work(self, conn):
        # Reports cut off by a lost connection: a token works from any
        # session, and a stale one changes nothing.
        while self.unreported:
            self.report(conn, *self.unreported[0])
            self.unreported.pop(0)

        while not self.stopping.is_set():
            tasks = self.complete_and_claim(conn)
            if tasks:
                self.run_batch(conn, tasks)
                continue
            self.waiting_on = conn
            try:
                if self.stopping.is_set():
                    break
                conn.execute(
                    "CALL schedq.await_task(queues => %s::text[], caps => %s::text[],"
                    "                       wait => make_interval(secs => %s))",
                    (self.queues, self.caps, self.wait),
                )
            except psycopg.errors.QueryCanceled:
                if not self.stopping.is_set():
                    raise
            finally:
                self.waiting_on = None
        if self.pending:  # stopping: complete, claim nothing
            tokens = [task[4] for task, _ in self.pending]
            results = [Jsonb(outcome["result"]) for _, outcome in self.pending]
            oks = conn.execute(
                "SELECT schedq.complete_many(%s::text[], %s::jsonb[])", (tokens, results)
            ).fetchone()[0]
            for (task, outcome), ok in zip(self.pending, oks):
                log_task(task, "done" if ok else "stale", outcome["ms"])
            self.pending = []

    def complete_and_claim(self, conn):
        """Complete the successes of the last batch and claim the next one:
        one statement, one commit.  Sent again after a lost connection."""
        tokens = [task[4] for task, _ in self.pending]
        results = [Jsonb(outcome["result"]) for _, outcome in self.pending]
        tasks = conn.execute(
            "SELECT id, attempt, kind, payload, token"
            "  FROM schedq.complete_and_claim(%s::text[], %s, %s::jsonb[],"
            "       queues => %s::text[], caps => %s::text[], n => %s,"
            "       lease => make_interval(secs => %s))",
            (tokens, self.name, results, self.queues, self.caps, self.batch, self.lease),
        ).fetchall()
        for task, outcome in self.pending:
            log_task(task, "done", outcome["ms"])
        self.pending = []
        return tasks

    def run_batch(self, conn, tasks):
        live = {token for _, _, _, _, token in tasks}
        beat = Heartbeat(conn, live, self.lease / 3)
        beat.start()
        try:
            for task in tasks:
                task_id, attempt, kind, payload, token = task
                if token not in live:
                    # Taken back before we got to it (canceled, say).
                    log_task(task, "stale", 0)
                    continue
                started = time.monotonic()
                outcome = handle(kind, payload, attempt)
                outcome["ms"] = int((time.monotonic() - started) * 1000)
                if "result" in outcome:
                    self.pending.append((task, outcome))  # still heartbeaten
                    continue
                try:
                    self.report(conn, task, outcome)
                except psycopg.OperationalError:
                    self.unreported.append((task, outcome))
                    raise
                live.discard(token)
        finally:
            beat.stop()
        # Those the heartbeat found no longer ours: not completed.
        for task, outcome in [p for p in self.pending if p[0][4] not in live]:
            log_task(task, "stale", outcome["ms"])
        self.pending = [p for p in self.pending if p[0][4] in live]

    def report(self, conn, task, outcome):
        status = conn.execute(
            "SELECT schedq.fail(%s, %s, retry_in => make_interval(secs => %s),"
            "                   permanent => %s)",
            (task[4], outcome["error"], outcome.get("retry_in"), outcome["permanent"]),
        ).fetchone()[0]
        # 'pending' or 'available': it will run again; 'failed': it won't.
        status = {"failed": "failed", "stale": "stale"}.get(status, "retry")
        log_task(task, status, outcome["ms"], outcome["error"])


def handle(kind, payload, attempt):
    """Run the handler of kind; what to report, as a dict."""
    handler = HANDLERS.get(kind)
    try:
        if handler is None:
            raise BadInput(f"no handler for kind {kind!r}")
        return {"result": handler(payload, attempt)}
    except BadInput as e:
        return {"error": f"bad input: {e}", "permanent": True}
    except Retry as e:
        return {"error": str(e), "retry_in": e.retry_in, "permanent": False}
    except Exception as e:  # a bug or an outage: retry with backoff
        return {"error": f"{type(e).__name__}: {e}", "permanent": False}


class Heartbeat(threading.Thread):
    """Extends the leases of the tokens in `live` every `interval` seconds.
    It shares the worker's connection: psycopg runs one statement at a time
    on it, and the handlers do not use it."""

    def __init__(self, conn, live, interval):
        super().__init__(daemon=True)
        self.conn, self.live, self.interval = conn, live, interval
        self.done = threading.Event()

    def run(self):
        while not self.done.wait(self.interval):
            tokens = list(self.live)
            if not tokens:
                continue
            try:
                rows = self.conn.execute(
                    "SELECT t, schedq.heartbeat(t) FROM unnest(%s::text[]) AS t",
                    (tokens,),
                ).fetchall()
            except psycopg.Error as e:
                log(f"heartbeat failed: {first_line(e)}")
                return  # the main loop sees the broken connection too
            for token, expires in rows:
                if expires is None:  # no longer ours: do not report it
                    self.live.discard(token)

    def stop(self):
        self.done.set()
        self.join()


def first_line(error):
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def reason(error):
    """The server's words for an error (after libpq's "FATAL:" when it
    refused the connection), else the error's first line."""
    diag = getattr(error, "diag", None)
    if diag is not None and diag.message_primary:
        return diag.message_primary
    text = str(error).strip()
    if "FATAL:" in text:
        return text.rsplit("FATAL:", 1)[1].strip().splitlines()[0]
    return first_line(error)


def fatal(code, message):
    """One line on stderr, and the exit status schedqctl has for it."""
    print(f"schedq-worker: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def log(message):
    print(f"schedq-worker: {message}", flush=True)


def log_task(task, outcome, ms, error=None):
    task_id, attempt, kind = task[0], task[1], task[2]
    line = f"task={task_id} kind={kind} attempt={attempt} outcome={outcome} ms={ms}"
    if error:
        line += f" error={error!r}"
    print(line, flush=True)


def main():
    worker = Worker()
    signal.signal(signal.SIGTERM, worker.on_signal)
    signal.signal(signal.SIGINT, worker.on_signal)
    queues = ",".join(worker.queues) if worker.queues else "all"
    log(f"{worker.name}: queues {queues}, batches of {worker.batch}")
    worker.run()


if __name__ == "__main__":
    sys.exit(main())
