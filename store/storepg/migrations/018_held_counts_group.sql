-- The run's group on its claim row (017) kept on every claim of the run,
-- held or not. With the group kept on held claims only, a write that
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
