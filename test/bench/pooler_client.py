#!/usr/bin/env python3
"""test/bench/pooler_client.py -- one side of test/bench/pooler.sh

    pooler_client.py consume DSN QUEUE N     claim(wait => '5 s') and complete
                                            N tasks of QUEUE, one at a time;
                                            print each task's latency (ms)
    pooler_client.py produce DSN QUEUE N GAP_MS
                                            submit N tasks to QUEUE, one every
                                            GAP_MS milliseconds

latency = the consumer's clock when claim() returned the task
        - the producer's clock just before it sent the submit
Both are time.time() on the same machine.  The span holds the submit's
round trip and commit, the wake-up of the waiting claim and the claim's
answer: what a task's start waits for after the application submits it.

Each side is one connection in autocommit mode, with no server-side
prepared statement (prepare_threshold=None), as through a pooler in
transaction mode.  The consumer prints "ready" on stderr once connected,
and exits 3 if a claim waited 5 s for nothing 6 times in a row.
"""

import sys
import time

import psycopg
from psycopg.types.json import Jsonb


def connect(dsn):
    return psycopg.connect(dsn, autocommit=True, prepare_threshold=None)


def consume(dsn, queue, n):
    conn = connect(dsn)
    print("ready", file=sys.stderr, flush=True)
    got, empty = 0, 0
    while got < n:
        row = conn.execute(
            "SELECT token, payload FROM schedq.claim('bench', queues => ARRAY[%s],"
            " wait => '5 s')",
            (queue,),
        ).fetchone()
        now = time.time()
        if row is None:
            empty += 1
            if empty >= 6:
                sys.exit(3)
            continue
        empty = 0
        token, payload = row
        print(f"{(now - payload['t']) * 1000:.3f}", flush=True)
        conn.execute("SELECT schedq.complete(%s)", (token,))
        got += 1


def produce(dsn, queue, n, gap_ms):
    conn = connect(dsn)
    for _ in range(n):
        conn.execute(
            "SELECT schedq.submit('lat', %s, queue => %s)",
            (Jsonb({"t": time.time()}), queue),
        )
        time.sleep(gap_ms / 1000)


def main():
    mode, dsn, queue, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if mode == "consume":
        consume(dsn, queue, n)
    elif mode == "produce":
        produce(dsn, queue, n, float(sys.argv[5]))
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
