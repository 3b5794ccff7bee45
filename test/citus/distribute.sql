-- test/citus/distribute.sql
--   The prototype distribution of schedq on Citus (docs/scale-out.md,
--   "The prototype").  Run on the coordinator, as a superuser, after
--   CREATE EXTENSION schedq on every node (with citus.enable_ddl_propagation
--   off: see the document for why) and citus_add_node for the workers.
--   Changes schedq's own schema where Citus requires it; this is a
--   prototype of what a supported schedq.distribute() would do, not an
--   interface.
\set ON_ERROR_STOP 1

-- Task ids must be unique in the cluster, and every node's schedq has its
-- own task_id_seq (the extension creates it; Citus leaves extension-owned
-- sequences alone).  Give each node a range of 2^48 ids of its own, as
-- Citus does for the sequences it creates.
SELECT run_command_on_all_nodes(format(
	$$SELECT setval('schedq.task_id_seq', %s, false), setval('schedq.run_id_seq', %s, false)$$,
	'(SELECT groupid::bigint << 48 FROM pg_dist_local_group) + 1',
	'(SELECT groupid::bigint << 48 FROM pg_dist_local_group) + 1'));

-- The small tables: one copy on every node.
SELECT create_reference_table('schedq.queue');
SELECT create_reference_table('schedq.concurrency_limit');
SELECT create_reference_table('schedq.budget');
SELECT create_reference_table('schedq.periodic');

-- The task table, by queue.  Citus refuses any unique index without the
-- distribution column: the primary key becomes (queue, id), id keeps an
-- index of its own, and dedup keys become unique per (owner, queue).
ALTER TABLE schedq.task DROP CONSTRAINT task_pkey;
ALTER TABLE schedq.task ADD PRIMARY KEY (queue, id);
CREATE INDEX task_id_idx ON schedq.task (id);
DROP INDEX schedq.task_dedup_idx;
CREATE UNIQUE INDEX task_dedup_idx ON schedq.task (owner, dedup_key, queue)
	WHERE dedup_key IS NOT NULL AND status IN ('pending', 'available', 'running');
SELECT create_distributed_table('schedq.task', 'queue', shard_count => 8);

-- submit runs on the node that holds its queue's shard.
SELECT create_distributed_function(
	'schedq.submit(text,jsonb,text,integer,timestamptz,integer,interval,text,bigint,text,text[],text[],numeric,bigint,bigint[],text)',
	distribution_arg_name => 'queue', colocate_with => 'schedq.task');
