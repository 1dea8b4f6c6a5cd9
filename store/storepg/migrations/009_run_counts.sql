-- Counters of the active runs (issue 21): how many runs of a tenant are
-- queued, running or interrupted, by wait kind, kept in the transaction of
-- every write that inserts, removes or changes the status or wait kind of
-- a run (the triggers below), so that the inbox's totals and the store's
-- gauges read a few rows whatever the number of runs. A rolled-back write
-- rolls its counts back with it. Finished runs are not counted.
--
-- A count is spread over 8 slots (a connection adds to the slot of its
-- backend's pid), so that concurrent writers seldom wait for one another
-- on a counter row; a reader sums the slots. The triggers are deferred:
-- they run at COMMIT, after every other lock of the transaction is taken,
-- and each takes its counter rows in one statement in key order, so two
-- writers never wait for each other in a cycle over them.
CREATE TABLE {{schema}}.run_counts (
	tenant    text NOT NULL,
	status    text NOT NULL,
	wait_kind text NOT NULL,
	slot      int NOT NULL,
	n         bigint NOT NULL,
	PRIMARY KEY (tenant, status, wait_kind, slot)
);

CREATE FUNCTION {{schema}}.run_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO {{schema}}.run_counts AS c (tenant, status, wait_kind, slot, n)
	SELECT d.tenant, d.status, d.wait_kind, pg_backend_pid() % 8, sum(d.n) FROM (
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

CREATE CONSTRAINT TRIGGER run_counts_insert AFTER INSERT ON {{schema}}.runs
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
	WHEN (NEW.status IN ('queued', 'running', 'interrupted'))
	EXECUTE FUNCTION {{schema}}.run_counts_apply();
CREATE CONSTRAINT TRIGGER run_counts_delete AFTER DELETE ON {{schema}}.runs
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
	WHEN (OLD.status IN ('queued', 'running', 'interrupted'))
	EXECUTE FUNCTION {{schema}}.run_counts_apply();
CREATE CONSTRAINT TRIGGER run_counts_update AFTER UPDATE OF status, wait_kind ON {{schema}}.runs
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
	WHEN ((OLD.status, OLD.wait_kind) IS DISTINCT FROM (NEW.status, NEW.wait_kind)
		AND (OLD.status IN ('queued', 'running', 'interrupted') OR NEW.status IN ('queued', 'running', 'interrupted')))
	EXECUTE FUNCTION {{schema}}.run_counts_apply();

-- The runs already stored (after the triggers: a write that commits after
-- this migration is counted by them; CREATE TRIGGER waited for the writes
-- before it, which this count sees).
INSERT INTO {{schema}}.run_counts (tenant, status, wait_kind, slot, n)
SELECT tenant, status, wait_kind, 0, count(*) FROM {{schema}}.runs WHERE status IN ('queued', 'running', 'interrupted')
GROUP BY tenant, status, wait_kind;

-- The totals no longer count the waiting runs' index entries.
DROP INDEX {{schema}}.runs_waiting_kind;
