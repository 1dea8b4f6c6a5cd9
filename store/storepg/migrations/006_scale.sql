-- Production scale (issue 21): every claim, list and inbox query reads an
-- index whose rows are the ones it answers with, never the finished runs.
--
-- wait_kind is what an interrupted run waits for (the kind of its first
-- open question), written with the status by run_write (recreated below
-- with one more parameter); the inbox counts by it. Runs interrupted
-- before this migration get it from their checkpoint (a checkpoint that
-- is not JSON leaves it empty).
ALTER TABLE {{schema}}.runs ADD COLUMN wait_kind text NOT NULL DEFAULT '';
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT tenant, id, checkpoint FROM {{schema}}.runs WHERE status = 'interrupted' LOOP
		BEGIN
			UPDATE {{schema}}.runs SET wait_kind = coalesce(r.checkpoint::json -> 'interruptions' -> 0 ->> 'kind', '')
			WHERE tenant = r.tenant AND id = r.id;
		EXCEPTION WHEN others THEN
			NULL;
		END;
	END LOOP;
END
$$;

-- Claims: the queued and running runs, oldest first (RunClaimNext); it
-- replaces runs_queued.
CREATE INDEX runs_active ON {{schema}}.runs (tenant, created_at, id) WHERE status IN ('queued', 'running');
DROP INDEX {{schema}}.runs_queued;
-- Lists by status, newest first.
CREATE INDEX runs_by_status ON {{schema}}.runs (tenant, status, created_at DESC, id DESC);
-- The inbox: interrupted and running (stalled) runs, waiting longest
-- first, with the wait kind so that counting reads the index alone.
CREATE INDEX runs_waiting ON {{schema}}.runs (tenant, updated_at, id) INCLUDE (status, wait_kind)
	WHERE status IN ('interrupted', 'running');
-- Retention: finished runs, oldest write first.
CREATE INDEX runs_finished ON {{schema}}.runs (tenant, updated_at, id) WHERE status IN ('completed', 'failed', 'cancelled');
-- A session's runs (retention's session rule).
CREATE INDEX runs_by_session ON {{schema}}.runs (tenant, session_id, status, updated_at) WHERE session_id <> '';

DROP FUNCTION {{schema}}.run_write(text, text, timestamptz, text, text, bigint, bigint, text, text, text,
	int[], text[], bigint[], bigint[], bigint[], text[], text[], text[], text[], bigint[], text[],
	text[], text[], text[], text[], text[], text[], bigint[], timestamptz[], timestamptz[],
	text[], text[], text[], text[], text[], timestamptz[], text[]);

CREATE FUNCTION {{schema}}.run_write(
	p_tenant text, p_run text, p_now timestamptz,
	p_fence_key text, p_fence_holder text, p_fence_epoch bigint,
	p_run_rev bigint, p_status text, p_checkpoint text, p_meta text,
	l_ord int[], l_call text[], l_exp bigint[], l_turn bigint[], l_idx bigint[], l_tool text[],
	l_effect text[], l_state text[], l_key text[], l_attempt bigint[], l_digest text[],
	l_args text[], l_result text[], l_error text[], l_approval text[], l_resolution text[],
	l_holder text[], l_epoch bigint[], l_started timestamptz[], l_committed timestamptz[],
	e_id text[], e_parent text[], e_trace text[], e_span text[], e_type text[], e_time timestamptz[], e_data text[],
	p_wait_kind text,
	OUT o_parent text, OUT o_session text, OUT o_agent text, OUT o_digest text, OUT o_meta text,
	OUT o_deadline timestamptz, OUT o_revision bigint, OUT o_created timestamptz,
	OUT o_first_seq bigint, OUT o_ledger_created timestamptz[])
LANGUAGE plpgsql AS $$
DECLARE
	cur_rev bigint;
	f_holder text;
	f_epoch bigint;
	last_seq bigint;
	n_ev int := coalesce(array_length(e_id, 1), 0);
	n_l int := coalesce(array_length(l_call, 1), 0);
	created timestamptz;
	miss int;
	miss_i int;
	actual bigint;
BEGIN
	PERFORM pg_advisory_xact_lock(hashtextextended('actoviq-run/' || p_tenant || '/' || p_run, 0));
	SELECT revision INTO cur_rev FROM {{schema}}.runs WHERE tenant = p_tenant AND id = p_run;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'actoviq: run not found' USING ERRCODE = 'AVNF0';
	END IF;
	IF p_fence_key IS NOT NULL THEN
		-- FOR SHARE: a takeover (which updates the claim row) waits for this
		-- write to end, so no fenced write commits after a takeover did.
		SELECT holder, epoch INTO f_holder, f_epoch FROM {{schema}}.claims
		WHERE tenant = p_tenant AND key = p_fence_key FOR SHARE;
		IF NOT FOUND OR f_holder <> p_fence_holder OR f_epoch <> p_fence_epoch THEN
			RAISE EXCEPTION 'actoviq: fenced' USING ERRCODE = 'AVFN0',
				DETAIL = json_build_object('found', FOUND, 'holder', f_holder, 'epoch', f_epoch)::text;
		END IF;
	END IF;
	SELECT coalesce(max(seq), 0) INTO last_seq FROM {{schema}}.events WHERE tenant = p_tenant AND run_id = p_run;
	IF p_run_rev IS NOT NULL THEN
		UPDATE {{schema}}.runs SET status = p_status,
			wait_kind = CASE WHEN p_status = 'interrupted' THEN coalesce(p_wait_kind, '') ELSE '' END,
			checkpoint = p_checkpoint, meta = coalesce(p_meta, meta),
			revision = revision + 1, event_seq = greatest(event_seq, last_seq + n_ev), updated_at = p_now
		WHERE tenant = p_tenant AND id = p_run AND revision = p_run_rev
		RETURNING parent_id, session_id, agent_id, agent_digest, meta, deadline, revision, created_at
		INTO o_parent, o_session, o_agent, o_digest, o_meta, o_deadline, o_revision, o_created;
		IF NOT FOUND THEN
			SELECT revision INTO actual FROM {{schema}}.runs WHERE tenant = p_tenant AND id = p_run;
			RAISE EXCEPTION 'actoviq: run revision conflict' USING ERRCODE = 'AVCF0',
				DETAIL = json_build_object('kind', 'run', 'id', p_run, 'expected', p_run_rev, 'actual', coalesce(actual, 0))::text;
		END IF;
	END IF;
	o_ledger_created := array_fill(NULL::timestamptz, ARRAY[n_l]);
	FOR i IN 1 .. n_l LOOP
		IF l_exp[i] = 0 THEN
			INSERT INTO {{schema}}.ledger (tenant, run_id, call_id, turn, idx, tool, effect, state, idempotency_key,
				attempt, args_digest, args, result, error, approval, resolution, holder, epoch,
				revision, created_at, updated_at, started_at, committed_at)
			VALUES (p_tenant, p_run, l_call[i], l_turn[i], l_idx[i], l_tool[i], l_effect[i], l_state[i], l_key[i],
				l_attempt[i], l_digest[i], l_args[i], l_result[i], l_error[i], l_approval[i], l_resolution[i],
				l_holder[i], l_epoch[i], 1, p_now, p_now, l_started[i], l_committed[i])
			ON CONFLICT (tenant, run_id, call_id) DO NOTHING
			RETURNING created_at INTO created;
		ELSE
			UPDATE {{schema}}.ledger SET turn = l_turn[i], idx = l_idx[i], tool = l_tool[i], effect = l_effect[i],
				state = l_state[i], idempotency_key = l_key[i], attempt = l_attempt[i], args_digest = l_digest[i],
				args = l_args[i], result = l_result[i], error = l_error[i], approval = l_approval[i],
				resolution = l_resolution[i], holder = l_holder[i], epoch = l_epoch[i], revision = revision + 1,
				updated_at = p_now, started_at = l_started[i], committed_at = l_committed[i]
			WHERE tenant = p_tenant AND run_id = p_run AND call_id = l_call[i] AND revision = l_exp[i]
			RETURNING created_at INTO created;
		END IF;
		IF FOUND THEN
			o_ledger_created[i] := created;
		ELSIF miss IS NULL OR l_ord[i] < miss THEN
			miss := l_ord[i];
			miss_i := i;
		END IF;
	END LOOP;
	IF miss IS NOT NULL THEN
		SELECT revision INTO actual FROM {{schema}}.ledger
		WHERE tenant = p_tenant AND run_id = p_run AND call_id = l_call[miss_i];
		RAISE EXCEPTION 'actoviq: ledger revision conflict' USING ERRCODE = 'AVCF0',
			DETAIL = json_build_object('kind', 'ledger', 'id', l_call[miss_i], 'expected', l_exp[miss_i],
				'actual', coalesce(actual, 0))::text;
	END IF;
	IF n_ev > 0 THEN
		INSERT INTO {{schema}}.events (tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time, data)
		SELECT p_tenant, p_run, last_seq + e.ord, e.id, e.parent, e.trace, e.span, e.type, e.time, e.data
		FROM unnest(e_id, e_parent, e_trace, e_span, e_type, e_time, e_data)
			WITH ORDINALITY AS e(id, parent, trace, span, type, time, data, ord);
	END IF;
	o_first_seq := last_seq + 1;
END
$$;
