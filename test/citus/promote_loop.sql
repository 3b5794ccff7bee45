-- test/citus/promote_loop.sql -- pgbench script: one per-node promotion pass (passes.sql).
SELECT schedq_citus.promote_local();
