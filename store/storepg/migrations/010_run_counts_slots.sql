-- The active-run counters (009) in 64 slots instead of 8. A counter row is
-- locked from the trigger that changes it until its transaction's commit
-- has reached the disk; with 8 slots, connections whose backend pids were
-- equal modulo 8 waited for one another's commits (a run's creation
-- behind another's, a group commit's batch behind both: 4.6 ms a trigger
-- on average with 64 concurrent runs, fsync on). With 64 slots, the
-- connections of one pool (pids close together) seldom share one. A
-- reader sums the slots, so nothing stored moves.
CREATE OR REPLACE FUNCTION {{schema}}.run_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO {{schema}}.run_counts AS c (tenant, status, wait_kind, slot, n)
	SELECT d.tenant, d.status, d.wait_kind, pg_backend_pid() % 64, sum(d.n) FROM (
		SELECT OLD.tenant, OLD.status, OLD.wait_kind, -1 WHERE TG_OP <> 'INSERT' AND OLD.status IN ('queued', 'running', 'interrupted')
		UNION ALL
		SELECT NEW.tenant, NEW.status, NEW.wait_kind, 1 WHERE TG_OP <> 'DELETE' AND NEW.status IN ('queued', 'running', 'interrupted')
	) d (tenant, status, wait_kind, n)
	GROUP BY d.tenant, d.status, d.wait_kind
	ORDER BY d.tenant, d.status, d.wait_kind
	ON CONFLICT (tenant, status, wait_kind, slot) DO UPDATE SET n = c.n + excluded.n;
	RETURN NULL;
END
$$;
