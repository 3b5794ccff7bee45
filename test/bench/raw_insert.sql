-- test/bench/raw_insert.sql -- raw baseline of schedq_submit.sql: one INSERT
-- per transaction into raw_job (a primary key and one index, raw_setup.sql).
-- Run with pgbench -M prepared (submit.sh).
INSERT INTO raw_job (payload) VALUES (jsonb_build_object('c', :client_id::int));
