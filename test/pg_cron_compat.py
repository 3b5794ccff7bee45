#!/usr/bin/env python3
"""test/pg_cron_compat.py: run pg_cron's own regression test against schedq_cron.

    python3 test/pg_cron_compat.py PG_CRON_CHECKOUT [DBNAME]

PG_CRON_CHECKOUT is a checkout of pg_cron (its sql/pg_cron-test.sql and
expected/pg_cron-test.out are read; nothing is fetched).  The test runs in
DBNAME (default pg_cron_compat, created afresh with schedq installed) of the
server that psql reaches with the PG* environment variables, as a superuser.

Only mechanical substitutions are made, to the test and to its expected
output alike: the extension's name (pg_cron -> schedq_cron in CREATE, ALTER
and DROP EXTENSION and in extname), VERSION clauses dropped, UPDATE TO
clauses dropped.  Each statement's output is then compared with pg_cron's
expected output for it; the script prints each statement that differs, with
both outputs, and ends with "N of M statements match pg_cron's expected
output".  It exits 0 whatever the count: the count is the result.
"""
import os
import re
import subprocess
import sys


def substitute(text):
    # statements only: a job's command that names pg_cron stays as it is
    text = re.sub(r"^(\s*(?:CREATE|ALTER|DROP)\s+EXTENSION\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?)pg_cron\b",
                  r"\1schedq_cron", text, flags=re.M | re.I)
    text = re.sub(r"extname\s*=\s*'pg_cron'", "extname='schedq_cron'", text)
    text = re.sub(r"\s+VERSION\s+'[^']*'", "", text)
    text = re.sub(r"(ALTER EXTENSION schedq_cron UPDATE)\s+TO\s+'[^']*'", r"\1", text)
    return text


def statements(sql):
    """The statements of the file, each as the lines psql -a echoes for it."""
    out, cur = [], []
    for line in sql.splitlines():
        cur.append(line)
        stripped = line.strip()
        if stripped.endswith(";") and not stripped.startswith("--"):
            out.append(cur)
            cur = []
    return out


def split_output(output, stmts):
    """The output of each statement: what follows its echo up to the next."""
    lines = output.splitlines()
    results, pos = [], 0
    # the echo of a statement: its lines without comments and blank lines
    echoes = [[l for l in s if l.strip() and not l.strip().startswith("--")] for s in stmts]
    starts = []
    for echo in echoes:
        first = echo[0]
        while pos < len(lines) and lines[pos] != first:
            pos += 1
        starts.append(pos)
        pos += len(echo)
    for i, echo in enumerate(echoes):
        begin = starts[i] + len(echo)
        end = starts[i + 1] if i + 1 < len(starts) else len(lines)
        body = [l for l in lines[begin:end] if l.strip() and not l.strip().startswith("--")]
        results.append("\n".join(body))
    return results


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    checkout = sys.argv[1]
    db = sys.argv[2] if len(sys.argv) > 2 else "pg_cron_compat"
    with open(os.path.join(checkout, "sql", "pg_cron-test.sql")) as f:
        sql = substitute(f.read())
    with open(os.path.join(checkout, "expected", "pg_cron-test.out")) as f:
        expected = substitute(f.read())

    psql = os.environ.get("PSQL", "psql")
    subprocess.run([psql, "-X", "-q", "-d", "postgres", "-c", f'DROP DATABASE IF EXISTS "{db}"'], check=True)
    subprocess.run([psql, "-X", "-q", "-d", "postgres", "-c", f'CREATE DATABASE "{db}"'], check=True)
    subprocess.run([psql, "-X", "-q", "-d", db, "-c", "CREATE EXTENSION schedq"], check=True)
    # errors interleaved with results, as pg_regress has them
    run = subprocess.run([psql, "-X", "-a", "-q", "-d", db], input=sql, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    actual = run.stdout

    stmts = statements(sql)
    got = split_output(actual, stmts)
    want = split_output(expected, stmts)
    match = 0
    for i, s in enumerate(stmts):
        text = " ".join(l.strip() for l in s if l.strip() and not l.strip().startswith("--"))
        if got[i] == want[i]:
            match += 1
        else:
            print(f"--- statement {i + 1}: {text}")
            print("  pg_cron:     " + (want[i].replace("\n", "\n               ") or "(nothing)"))
            print("  schedq_cron: " + (got[i].replace("\n", "\n               ") or "(nothing)"))
    subprocess.run([psql, "-X", "-q", "-d", "postgres", "-c", f'DROP DATABASE IF EXISTS "{db}"'])
    print(f"{match} of {len(stmts)} statements match pg_cron's expected output")


if __name__ == "__main__":
    main()
