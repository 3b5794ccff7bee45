-- test/citus/submit.sql -- pgbench script: one submit to one of 8 queues.
-- On the cluster, a top-level call of the distributed function
-- schedq.submit is delegated to the node holding the queue's shard.
\set q random(1, 8)
SELECT schedq.submit('k', queue => 'q:q');
