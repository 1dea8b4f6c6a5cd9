-- Counters of held run claims (left over from issue 21): the inbox's idle
-- count (the waiting runs that no live claim holds) no longer reads one
-- claim and one run per run driven anywhere.
--
-- A claim is held from the write that takes or extends it (held) to the
-- write that releases it (not held); expiry is not a write, so a held
-- claim whose lease expired stays held here. held_counts counts, by the
-- status and wait kind of the claim's run (queued, running, interrupted),
-- the runs whose claim is held.
--
-- Each count comes from one claims row alone: a held claim of a run
-- carries its run's status and wait kind (run_status, run_wait_kind),
-- filled when the claim becomes held (claims_run_group, from the run as it
-- stands) and kept by the run's writes (runs_claim_group, when a run with
-- a held claim is inserted, removed, or changes status or wait kind). The
-- counter triggers then need nothing but the claim row's old and new
-- versions, so they can run at COMMIT, as run_counts' do (009, 010), and
-- stay exact when one statement writes the run and its claim (a claimed
-- create) or a transaction writes both in any order.
--
-- The live claims at a time t are the held ones, less the held ones
-- expired by t, plus the released ones whose expiry is after t (a release
-- sets the expiry to the time of the release: none, for a t that is not
-- in the past): claims_held serves both, so a count costs the counters and
-- the claims that expired without a release (stalled drives), not the
-- runs being driven. The flag is only where a claim is looked for: a
-- claim in the wrong class would cost a row, never a wrong count.
ALTER TABLE {{schema}}.claims ADD COLUMN held boolean NOT NULL DEFAULT false,
	ADD COLUMN run_status text, ADD COLUMN run_wait_kind text;

-- Claims stored before: a released claim looks like one that expired.
-- Those expired more than an hour ago are taken as released (they are not
-- live for any clock but one an hour behind this one), the others as
-- held; only those rows are written.
UPDATE {{schema}}.claims c SET held = true, run_status = r.status, run_wait_kind = r.wait_kind
FROM (SELECT c.tenant, c.key, r.status, r.wait_kind FROM {{schema}}.claims c
	LEFT JOIN {{schema}}.runs r ON starts_with(c.key, 'run:') AND r.tenant = c.tenant AND r.id = substr(c.key, 5)
	WHERE c.expires_at > c.heartbeat_at AND c.expires_at > now() - interval '1 hour') r
WHERE c.tenant = r.tenant AND c.key = r.key;
ALTER TABLE {{schema}}.claims ALTER COLUMN held SET DEFAULT true;

CREATE INDEX claims_held ON {{schema}}.claims (tenant, held, expires_at) WHERE starts_with(key, 'run:');

CREATE TABLE {{schema}}.held_counts (
	tenant    text NOT NULL,
	status    text NOT NULL,
	wait_kind text NOT NULL,
	slot      int NOT NULL,
	n         bigint NOT NULL,
	PRIMARY KEY (tenant, status, wait_kind, slot)
);

-- A claim of a run that becomes held takes its run's group as the run
-- stands (none when the run is not visible yet: a run created with its
-- claim in one statement gets it from runs_claim_group).
CREATE FUNCTION {{schema}}.claims_run_group() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF starts_with(NEW.key, 'run:') THEN
		SELECT r.status, r.wait_kind INTO NEW.run_status, NEW.run_wait_kind FROM {{schema}}.runs r
		WHERE r.tenant = NEW.tenant AND r.id = substr(NEW.key, 5);
	END IF;
	RETURN NEW;
END
$$;

CREATE TRIGGER claims_run_group_insert BEFORE INSERT ON {{schema}}.claims
	FOR EACH ROW WHEN (NEW.held)
	EXECUTE FUNCTION {{schema}}.claims_run_group();
CREATE TRIGGER claims_run_group_update BEFORE UPDATE ON {{schema}}.claims
	FOR EACH ROW WHEN (NEW.held AND NOT OLD.held)
	EXECUTE FUNCTION {{schema}}.claims_run_group();

-- A run's writes keep its held claim's group.
CREATE FUNCTION {{schema}}.runs_claim_group() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'DELETE' THEN
		UPDATE {{schema}}.claims SET run_status = NULL, run_wait_kind = NULL
		WHERE tenant = OLD.tenant AND key = 'run:' || OLD.id AND held AND run_status IS NOT NULL;
	ELSE
		UPDATE {{schema}}.claims SET run_status = NEW.status, run_wait_kind = NEW.wait_kind
		WHERE tenant = NEW.tenant AND key = 'run:' || NEW.id AND held
			AND (run_status, run_wait_kind) IS DISTINCT FROM (NEW.status, NEW.wait_kind);
	END IF;
	RETURN NULL;
END
$$;

CREATE TRIGGER runs_claim_group_insert AFTER INSERT ON {{schema}}.runs
	FOR EACH ROW EXECUTE FUNCTION {{schema}}.runs_claim_group();
CREATE TRIGGER runs_claim_group_delete AFTER DELETE ON {{schema}}.runs
	FOR EACH ROW EXECUTE FUNCTION {{schema}}.runs_claim_group();
CREATE TRIGGER runs_claim_group_update AFTER UPDATE OF status, wait_kind ON {{schema}}.runs
	FOR EACH ROW WHEN ((OLD.status, OLD.wait_kind) IS DISTINCT FROM (NEW.status, NEW.wait_kind))
	EXECUTE FUNCTION {{schema}}.runs_claim_group();

-- The counters, from the claim row's old and new versions, spread over 64
-- slots and applied at COMMIT in one statement in key order, as
-- run_counts' (010).
CREATE FUNCTION {{schema}}.held_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO {{schema}}.held_counts AS c (tenant, status, wait_kind, slot, n)
	SELECT d.tenant, d.status, d.wait_kind, pg_backend_pid() % 64, sum(d.n) FROM (
		SELECT OLD.tenant, OLD.run_status, OLD.run_wait_kind, -1
		WHERE TG_OP <> 'INSERT' AND OLD.held AND OLD.run_status IN ('queued', 'running', 'interrupted')
		UNION ALL
		SELECT NEW.tenant, NEW.run_status, NEW.run_wait_kind, 1
		WHERE TG_OP <> 'DELETE' AND NEW.held AND NEW.run_status IN ('queued', 'running', 'interrupted')
	) d (tenant, status, wait_kind, n)
	GROUP BY d.tenant, d.status, d.wait_kind
	ORDER BY d.tenant, d.status, d.wait_kind
	ON CONFLICT (tenant, status, wait_kind, slot) DO UPDATE SET n = c.n + excluded.n;
	RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER held_counts_insert AFTER INSERT ON {{schema}}.claims
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
	WHEN (NEW.held AND NEW.run_status IN ('queued', 'running', 'interrupted'))
	EXECUTE FUNCTION {{schema}}.held_counts_apply();
CREATE CONSTRAINT TRIGGER held_counts_delete AFTER DELETE ON {{schema}}.claims
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
	WHEN (OLD.held AND OLD.run_status IN ('queued', 'running', 'interrupted'))
	EXECUTE FUNCTION {{schema}}.held_counts_apply();
CREATE CONSTRAINT TRIGGER held_counts_update AFTER UPDATE ON {{schema}}.claims
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
	WHEN ((OLD.held, OLD.run_status, OLD.run_wait_kind) IS DISTINCT FROM (NEW.held, NEW.run_status, NEW.run_wait_kind)
		AND ((OLD.held AND OLD.run_status IN ('queued', 'running', 'interrupted'))
			OR (NEW.held AND NEW.run_status IN ('queued', 'running', 'interrupted'))))
	EXECUTE FUNCTION {{schema}}.held_counts_apply();

-- The runs whose claim is held now (after the triggers: a write that
-- commits after this migration is counted by them; the migration's lock on
-- the claims table waited for the writes before it, which this count sees).
INSERT INTO {{schema}}.held_counts (tenant, status, wait_kind, slot, n)
SELECT tenant, run_status, run_wait_kind, 0, count(*) FROM {{schema}}.claims
WHERE held AND run_status IN ('queued', 'running', 'interrupted')
GROUP BY tenant, run_status, run_wait_kind;
