-- test/bench/raw_setup.sql
-- The raw baseline: the hand-rolled queue table most applications start
-- with, claimed with FOR UPDATE SKIP LOCKED.  Created once per benchmark
-- server by run.sh; emptied and reloaded before every measured run.
CREATE TABLE raw_job (
    id          bigserial PRIMARY KEY,
    status      text NOT NULL DEFAULT 'available',
    payload     jsonb,
    claimed_by  text,
    locked_at   timestamptz,
    priority    int DEFAULT 0,
    run_at      timestamptz DEFAULT now()
);
CREATE INDEX raw_job_available ON raw_job (priority DESC, run_at, id)
    WHERE status = 'available';
