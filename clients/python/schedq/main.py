"""A worker program in one call: schedq.main(handlers).

Settings from the environment, as the example workers read them: the
connection the libpq way (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD
or ~/.pgpass, PGSERVICE, PGTARGETSESSIONATTRS ...) or a conninfo string
or URI in SCHEDQ_DSN; SCHEDQ_QUEUES and SCHEDQ_CAPS (comma lists; default
every queue, no capability); SCHEDQ_CONCURRENCY (handlers at once, 10);
SCHEDQ_BATCH (tasks per claim, 10); SCHEDQ_LEASE (seconds, 30);
SCHEDQ_WAIT (longest await_task, seconds, 30); SCHEDQ_WORKER (the name in
claimed_by, host:pid).

Logs "schedq-worker: ..." lines and one line per attempt on stdout
("task=ID kind=K attempt=N outcome=done|retry|failed|stale ms=...").
Exits 0 after SIGTERM or SIGINT (the tasks in hand finished; a second
signal stops at once, exit 1); 3 when the first connection fails; 4 when
a privilege is missing; one line on stderr for either.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import List, Mapping, Optional

from .errors import ConnectError, NotFound, PermissionDenied
from .worker import Handler, Pool


def _env_list(name: str) -> List[str]:
    return [v.strip() for v in os.environ.get(name, "").split(",") if v.strip()]


def _fatal(code: int, message: str) -> int:
    print(f"schedq-worker: {message}", file=sys.stderr, flush=True)
    return code


def pool_from_env(handlers: Mapping[str, Handler]) -> Pool:
    """A Pool with the settings of the environment (see the module)."""
    batch = int(os.environ.get("SCHEDQ_BATCH", "10"))
    return Pool(
        os.environ.get("SCHEDQ_DSN", ""),
        handlers,
        queues=_env_list("SCHEDQ_QUEUES") or None,
        caps=_env_list("SCHEDQ_CAPS"),
        concurrency=int(os.environ.get("SCHEDQ_CONCURRENCY", str(batch))),
        batch=batch,
        lease=float(os.environ.get("SCHEDQ_LEASE", "30")),
        wait=float(os.environ.get("SCHEDQ_WAIT", "30")),
        name=os.environ.get("SCHEDQ_WORKER") or None,
    )


def main(handlers: Mapping[str, Handler], argv: Optional[List[str]] = None) -> int:
    """Runs a pool with `handlers` until SIGTERM; the exit status."""
    out = logging.StreamHandler(sys.stdout)
    out.setFormatter(logging.Formatter("schedq-worker: %(message)s"))
    tasks = logging.StreamHandler(sys.stdout)
    tasks.setFormatter(logging.Formatter("%(message)s"))
    for name, handler in (("schedq.worker", out), ("schedq.tasks", tasks)):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    pool = pool_from_env(handlers)
    queues = ",".join(pool.queues) if pool.queues else "all"
    logging.getLogger("schedq.worker").info(
        "%s: queues %s, %d handlers, batches of %d", pool.name, queues, pool.concurrency,
        pool.batch)
    try:
        drained = pool.run()
    except ConnectError as e:
        return _fatal(3, e.message)
    except (PermissionDenied, NotFound) as e:
        return _fatal(4, f"missing privilege: {e.message} (see docs/security.md#roles)")
    return 0 if drained else 1
