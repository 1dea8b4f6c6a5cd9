-- Counters of held run claims (left over from issue 21): the inbox's idle
-- count (the waiting runs that no live claim holds) no longer reads one
-- claim and one run per run driven anywhere.
--
-- A claim is held from the write that takes or extends it (held = 1) to
-- the write that releases it (held = 0); expiry is not a write, so a held
-- claim whose lease expired stays held here. held_counts counts, by the
-- status and wait kind of the claim's run (queued, running, interrupted),
-- the runs whose claim is held; the triggers below keep it in the
-- transaction of every write that takes or releases a run's claim, or
-- inserts, removes or changes the status or wait kind of a run whose
-- claim is held (SQLite fires them row by row, each reading the other
-- table as it stands, so each keeps the count exact).
--
-- The live claims at a time t are then the held ones, less the held ones
-- expired by t, plus the released ones whose expiry is after t (a release
-- sets the expiry to the time of the release: none, for a t that is not
-- in the past): claims_held serves both from the claims of runs by
-- (held, expiry), so a count costs the counters and the claims that
-- expired without a release (stalled drives), not the runs being driven.
-- The flag is only where a claim is looked for: a claim in the wrong
-- class would cost a row, never a wrong count.
ALTER TABLE claims ADD COLUMN held INTEGER NOT NULL DEFAULT 1;

-- Claims stored before: a released claim looks like one that expired.
-- Those expired more than an hour ago are taken as released (they are
-- not live for any clock but one an hour behind this one), the others
-- as held.
UPDATE claims SET held = 0
WHERE expires_at <= heartbeat_at
	OR expires_at <= CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER) - 3600000000;

CREATE INDEX claims_held ON claims (tenant, held, expires_at, key) WHERE substr(key, 1, 4) = 'run:';

CREATE TABLE held_counts (
	tenant    TEXT NOT NULL,
	status    TEXT NOT NULL,
	wait_kind TEXT NOT NULL,
	n         INTEGER NOT NULL,
	PRIMARY KEY (tenant, status, wait_kind)
) WITHOUT ROWID;

-- A run's claim taken, released or removed: its run's group, if counted.
CREATE TRIGGER held_counts_claim_insert AFTER INSERT ON claims
WHEN NEW.held = 1 AND substr(NEW.key, 1, 4) = 'run:'
BEGIN
	INSERT INTO held_counts (tenant, status, wait_kind, n)
	SELECT r.tenant, r.status, r.wait_kind, 1 FROM runs r
	WHERE r.tenant = NEW.tenant AND r.id = substr(NEW.key, 5) AND r.status IN ('queued', 'running', 'interrupted')
	ON CONFLICT (tenant, status, wait_kind) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER held_counts_claim_update AFTER UPDATE OF held ON claims
WHEN OLD.held <> NEW.held AND substr(NEW.key, 1, 4) = 'run:'
BEGIN
	INSERT INTO held_counts (tenant, status, wait_kind, n)
	SELECT r.tenant, r.status, r.wait_kind, NEW.held - OLD.held FROM runs r
	WHERE r.tenant = NEW.tenant AND r.id = substr(NEW.key, 5) AND r.status IN ('queued', 'running', 'interrupted')
	ON CONFLICT (tenant, status, wait_kind) DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER held_counts_claim_delete AFTER DELETE ON claims
WHEN OLD.held = 1 AND substr(OLD.key, 1, 4) = 'run:'
BEGIN
	UPDATE held_counts SET n = n - 1 WHERE (tenant, status, wait_kind) IN (SELECT r.tenant, r.status, r.wait_kind FROM runs r
		WHERE r.tenant = OLD.tenant AND r.id = substr(OLD.key, 5) AND r.status IN ('queued', 'running', 'interrupted'));
END;

-- A run inserted, removed or moved to another group while its claim is held.
CREATE TRIGGER held_counts_run_insert AFTER INSERT ON runs
WHEN NEW.status IN ('queued', 'running', 'interrupted')
BEGIN
	INSERT INTO held_counts (tenant, status, wait_kind, n)
	SELECT NEW.tenant, NEW.status, NEW.wait_kind, 1 FROM claims c
	WHERE c.tenant = NEW.tenant AND c.key = 'run:' || NEW.id AND c.held = 1
	ON CONFLICT (tenant, status, wait_kind) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER held_counts_run_delete AFTER DELETE ON runs
WHEN OLD.status IN ('queued', 'running', 'interrupted')
BEGIN
	UPDATE held_counts SET n = n - 1 WHERE tenant = OLD.tenant AND status = OLD.status AND wait_kind = OLD.wait_kind
		AND EXISTS (SELECT 1 FROM claims c WHERE c.tenant = OLD.tenant AND c.key = 'run:' || OLD.id AND c.held = 1);
END;

CREATE TRIGGER held_counts_run_update AFTER UPDATE OF status, wait_kind ON runs
WHEN (OLD.status <> NEW.status OR OLD.wait_kind <> NEW.wait_kind)
	AND (OLD.status IN ('queued', 'running', 'interrupted') OR NEW.status IN ('queued', 'running', 'interrupted'))
	AND EXISTS (SELECT 1 FROM claims c WHERE c.tenant = NEW.tenant AND c.key = 'run:' || NEW.id AND c.held = 1)
BEGIN
	UPDATE held_counts SET n = n - 1 WHERE tenant = OLD.tenant AND status = OLD.status AND wait_kind = OLD.wait_kind
		AND OLD.status IN ('queued', 'running', 'interrupted');
	INSERT INTO held_counts (tenant, status, wait_kind, n)
		SELECT NEW.tenant, NEW.status, NEW.wait_kind, 1 WHERE NEW.status IN ('queued', 'running', 'interrupted')
	ON CONFLICT (tenant, status, wait_kind) DO UPDATE SET n = n + 1;
END;

-- The runs whose claim is held now.
INSERT INTO held_counts (tenant, status, wait_kind, n)
SELECT r.tenant, r.status, r.wait_kind, count(*) FROM claims c CROSS JOIN runs r
WHERE c.held = 1 AND substr(c.key, 1, 4) = 'run:' AND r.tenant = c.tenant AND r.id = substr(c.key, 5)
	AND r.status IN ('queued', 'running', 'interrupted')
GROUP BY r.tenant, r.status, r.wait_kind;
