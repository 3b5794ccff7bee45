"""A worker process for test_signals.py: schedq.main with one handler,
'slow', which sleeps payload.seconds and then appends "id attempt" to the
file in $EFFECTS (the side effect a real handler would have)."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import schedq  # noqa: E402


def slow(task: schedq.Task) -> object:
    time.sleep(float(task.payload.get("seconds", 0)))
    with open(os.environ["EFFECTS"], "a") as f:
        f.write(f"{task.id} {task.attempt}\n")
    return {"slept": True}


sys.exit(schedq.main({"slow": slow}))
