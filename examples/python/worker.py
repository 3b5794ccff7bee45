#!/usr/bin/env python3
"""A schedq worker on the Python library (clients/python): handlers by
kind; the pool claims, heartbeats, reports, waits and reconnects (see
clients/python/README.md for the settings it reads from the environment).

    PGHOST=... PGUSER=worker SCHEDQ_QUEUES=default python3 worker.py
"""
import os, sys, time

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../clients/python"))
import schedq  # noqa: E402  (pip install ./clients/python, or the repository's copy)


def add(task):
    numbers = task.payload.get("numbers") if isinstance(task.payload, dict) else None
    if not isinstance(numbers, list) or not all(type(x) in (int, float) for x in numbers):
        raise schedq.Permanent('bad input: add needs {"numbers": [n, ...]}')
    return {"sum": sum(numbers)}


def flaky(task):
    if task.attempt == 1:
        raise schedq.Retry("flaky: the first attempt always fails")
    return {"attempt": task.attempt}


def sleep(task):
    seconds = task.payload.get("seconds") if isinstance(task.payload, dict) else None
    if type(seconds) not in (int, float) or not 0 <= seconds <= 3600:
        raise schedq.Permanent('bad input: sleep needs {"seconds": 0..3600}')
    time.sleep(seconds)
    return {"slept": seconds}


sys.exit(schedq.main({"add": add, "flaky": flaky, "sleep": sleep}))
