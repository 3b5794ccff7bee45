-- test/bench/schedq_submit.sql -- schedq, one submit per transaction:
-- one ungated no-op task (inserted 'available'), as an application
-- enqueues work.  Run with pgbench -M prepared (submit.sh).
SELECT schedq.submit('noop', payload => jsonb_build_object('c', :client_id::int));
