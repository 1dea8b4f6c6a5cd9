-- The run's group on its claim row (017) kept on every claim of the run,
-- held or not, and read under a lock when a run's first claim is taken. With the group kept on held claims only, a write that
-- changed a run's status without its claim (an operator's, unfenced) could
-- race a process taking the claim: the write's trigger saw the claim not
-- held and left it, the taking read the run's status as it was before the
-- uncommitted write, and both committed: the claim was counted under the
-- run's old status until the run's next change. Kept on every claim, the
-- write's trigger updates the claim row (locking it), so whichever of the
-- two comes second waits for the first and sees its result: the taking
-- reads the written status, or the write's trigger updates the claim the
-- taking wrote. A status change of a run whose claim was released writes
-- its claim row too (a run changes status mostly while its claim is held).
--
-- A run's first claim (no claim row yet, so none to lock) reads its run
-- FOR SHARE: it waits for a write of the run in flight and reads what it
-- wrote, and a write that comes after it waits for it and then finds its
-- claim row. The run of a claim created with its run in one statement is
-- not visible yet (nothing to lock; runs_claim_group gives the group), and
-- RunClaimNext has locked its run already. A claim taken again (its row
-- exists: an INSERT that will update it) does not lock the run: the claim
-- row's lock orders it against the run's writes, and a taking-over that
-- locked the run while the previous holder's last write held the claim
-- row FOR SHARE would deadlock with it.
CREATE OR REPLACE FUNCTION {{schema}}.claims_run_group() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF starts_with(NEW.key, 'run:') THEN
		IF TG_OP = 'INSERT' AND NOT EXISTS (SELECT 1 FROM {{schema}}.claims c WHERE c.tenant = NEW.tenant AND c.key = NEW.key) THEN
			SELECT r.status, r.wait_kind INTO NEW.run_status, NEW.run_wait_kind FROM {{schema}}.runs r
			WHERE r.tenant = NEW.tenant AND r.id = substr(NEW.key, 5) FOR SHARE;
		ELSE
			SELECT r.status, r.wait_kind INTO NEW.run_status, NEW.run_wait_kind FROM {{schema}}.runs r
			WHERE r.tenant = NEW.tenant AND r.id = substr(NEW.key, 5);
		END IF;
	END IF;
	RETURN NEW;
END
$$;
CREATE OR REPLACE FUNCTION {{schema}}.runs_claim_group() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'DELETE' THEN
		UPDATE {{schema}}.claims SET run_status = NULL, run_wait_kind = NULL
		WHERE tenant = OLD.tenant AND key = 'run:' || OLD.id AND run_status IS NOT NULL;
	ELSE
		UPDATE {{schema}}.claims SET run_status = NEW.status, run_wait_kind = NEW.wait_kind
		WHERE tenant = NEW.tenant AND key = 'run:' || NEW.id
			AND (run_status, run_wait_kind) IS DISTINCT FROM (NEW.status, NEW.wait_kind);
	END IF;
	RETURN NULL;
END
$$;
