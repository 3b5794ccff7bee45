"""The driver of test/bench/client_python.sh: drains the queue 'bench'
(N no-op tasks, loaded by the script) one of two ways, in this process,
and exits when every task is done:

  lib   schedq.Pool, 8 no-op handlers, claims of 8 (clients/python)
  raw   the same statements without the library: one loop that calls
        complete_and_claim with the tokens of the batch it just ran (8
        no-op handlers, called in turn) and claims the next 8; await_task
        when the queue is empty

Usage: python3 client_python.py lib|raw N   (the connection: PG* variables)
"""

import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../clients/python"))

import psycopg  # noqa: E402
from psycopg.types.json import Jsonb  # noqa: E402

import schedq  # noqa: E402

HANDLERS = 8


def noop(task):
    return None


def lib(n):
    count = [0]
    lock = threading.Lock()
    pool = schedq.Pool("", {}, queues=["bench"], concurrency=HANDLERS, batch=HANDLERS,
                       name="bench-lib")

    def handler(task):
        with lock:
            count[0] += 1
            if count[0] == n:
                pool.stop()  # drains: the last batch is completed
        return noop(task)

    pool.handlers["noop"] = handler
    pool.run(install_signals=False)
    print(f"{pool.statements} complete_and_claim statements", file=sys.stderr)


def raw(n):
    conn = psycopg.connect("", autocommit=True, prepare_threshold=None)
    handlers = {"noop": noop}
    tokens, results, done = [], [], 0
    while True:
        rows = conn.execute(
            "SELECT id, attempt, queue, kind, payload, priority, run_id, token"
            "  FROM schedq.complete_and_claim(%s::text[], %s::text, %s::jsonb[],"
            "       queues => %s::text[], caps => %s::text[], n => %s::integer,"
            "       lease => make_interval(secs => %s))",
            (tokens, "bench-raw", results, ["bench"], [], HANDLERS, 30.0),
        ).fetchall()
        done += len(tokens)
        tokens, results = [], []
        if not rows:
            if done >= n:
                return
            conn.execute("CALL schedq.await_task(queues => %s::text[], wait => make_interval(secs => 1))",
                         (["bench"],))
            continue
        for row in rows:
            results.append(Jsonb(handlers[row[3]](row)))
            tokens.append(row[7])


if __name__ == "__main__":
    {"lib": lib, "raw": raw}[sys.argv[1]](int(sys.argv[2]))
