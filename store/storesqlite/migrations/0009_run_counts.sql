-- Counters of the active runs (issue 21): how many runs of a tenant are
-- queued, running or interrupted, by wait kind, kept in the transaction of
-- every write that inserts, removes or changes the status or wait kind of
-- a run (the triggers below), so that the inbox's totals and the store's
-- gauges read a few rows whatever the number of runs. A rolled-back write
-- rolls its counts back with it. Finished runs are not counted.
CREATE TABLE run_counts (
	tenant    TEXT NOT NULL,
	status    TEXT NOT NULL,
	wait_kind TEXT NOT NULL,
	n         INTEGER NOT NULL,
	PRIMARY KEY (tenant, status, wait_kind)
) WITHOUT ROWID;

CREATE TRIGGER run_counts_insert AFTER INSERT ON runs
WHEN NEW.status IN ('queued', 'running', 'interrupted')
BEGIN
	INSERT INTO run_counts (tenant, status, wait_kind, n) VALUES (NEW.tenant, NEW.status, NEW.wait_kind, 1)
	ON CONFLICT (tenant, status, wait_kind) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER run_counts_delete AFTER DELETE ON runs
WHEN OLD.status IN ('queued', 'running', 'interrupted')
BEGIN
	UPDATE run_counts SET n = n - 1 WHERE tenant = OLD.tenant AND status = OLD.status AND wait_kind = OLD.wait_kind;
END;

CREATE TRIGGER run_counts_update AFTER UPDATE OF status, wait_kind ON runs
WHEN (OLD.status <> NEW.status OR OLD.wait_kind <> NEW.wait_kind)
	AND (OLD.status IN ('queued', 'running', 'interrupted') OR NEW.status IN ('queued', 'running', 'interrupted'))
BEGIN
	UPDATE run_counts SET n = n - 1 WHERE tenant = OLD.tenant AND status = OLD.status AND wait_kind = OLD.wait_kind
		AND OLD.status IN ('queued', 'running', 'interrupted');
	INSERT INTO run_counts (tenant, status, wait_kind, n)
		SELECT NEW.tenant, NEW.status, NEW.wait_kind, 1 WHERE NEW.status IN ('queued', 'running', 'interrupted')
	ON CONFLICT (tenant, status, wait_kind) DO UPDATE SET n = n + 1;
END;

-- The runs already stored.
INSERT INTO run_counts (tenant, status, wait_kind, n)
SELECT tenant, status, wait_kind, count(*) FROM runs WHERE status IN ('queued', 'running', 'interrupted')
GROUP BY tenant, status, wait_kind;

-- The totals no longer count the waiting runs' index entries.
DROP INDEX runs_waiting_kind;
