-- A holder that released its claim writes nothing more under it.
--
-- run_write, as in 014, with one condition more in its fence check: the
-- claim must still be held (held, 017), not only have the fence's holder
-- and epoch. A claim its holder gave up (ClaimRelease, or a run write's
-- Release) and nobody took since fenced nothing before: a write made
-- after the writer's own release was accepted, while
-- store.RunWriteParams says the claim must still be held. Expiry alone
-- still does not fence (held stays true until a release). The fenced
-- error's detail says whether the claim was released. The same row is
-- read, under the same FOR SHARE: nothing else changes.

CREATE OR REPLACE FUNCTION {{schema}}.run_write(
	p_tenant text, p_run text, p_now timestamptz,
	p_fence_key text, p_fence_holder text, p_fence_epoch bigint,
	p_run_rev bigint, p_status text, p_checkpoint text, p_meta text,
	p_append text, p_append_n bigint, p_append_crc bigint,
	l_ord int[], l_call text[], l_exp bigint[], l_turn bigint[], l_idx bigint[], l_tool text[],
	l_effect text[], l_state text[], l_key text[], l_attempt bigint[], l_digest text[],
	l_args text[], l_result text[], l_error text[], l_approval text[], l_resolution text[],
	l_holder text[], l_epoch bigint[], l_started timestamptz[], l_committed timestamptz[], l_ev int[],
	p_n_plain int,
	e_id text[], e_parent text[], e_trace text[], e_span text[], e_type text[], e_time timestamptz[], e_data text[],
	p_wait_kind text,
	p_more text, p_more_crc bigint, p_more_calls text[],
	OUT o_parent text, OUT o_session text, OUT o_agent text, OUT o_digest text, OUT o_meta text,
	OUT o_deadline timestamptz, OUT o_revision bigint, OUT o_created timestamptz,
	OUT o_first_seq bigint, OUT o_ledger_created timestamptz[], OUT o_log_len bigint, OUT o_log_seq bigint)
LANGUAGE plpgsql AS $$
DECLARE
	cur_rev bigint;
	f_holder text;
	f_epoch bigint;
	f_held boolean;
	last_seq bigint;
	n_ev int := coalesce(array_length(e_id, 1), 0);
	n_l int := coalesce(array_length(l_call, 1), 0);
	created timestamptz;
	r_ev bigint;
	c_ev timestamptz;
	r_l bigint;
	c_l timestamptz;
	miss int;
	miss_i int;
	miss_actual bigint;
	actual bigint;
	k int;
	r_m bigint;
	c_m timestamptz;
	first_i int;
BEGIN
	PERFORM pg_advisory_xact_lock(hashtextextended('actoviq-run/' || p_tenant || '/' || p_run, 0));
	SELECT revision INTO cur_rev FROM {{schema}}.runs WHERE tenant = p_tenant AND id = p_run;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'actoviq: run not found' USING ERRCODE = 'AVNF0';
	END IF;
	IF p_fence_key IS NOT NULL THEN
		-- FOR SHARE: a takeover (which updates the claim row) waits for this
		-- write to end, so no fenced write commits after a takeover did.
		SELECT holder, epoch, held INTO f_holder, f_epoch, f_held FROM {{schema}}.claims
		WHERE tenant = p_tenant AND key = p_fence_key FOR SHARE;
		IF NOT FOUND OR f_holder <> p_fence_holder OR f_epoch <> p_fence_epoch OR NOT f_held THEN
			RAISE EXCEPTION 'actoviq: fenced' USING ERRCODE = 'AVFN0',
				DETAIL = json_build_object('found', FOUND, 'holder', f_holder, 'epoch', f_epoch, 'released', FOUND AND NOT f_held)::text;
		END IF;
	END IF;
	SELECT coalesce(max(seq), 0) INTO last_seq FROM {{schema}}.events WHERE tenant = p_tenant AND run_id = p_run;
	IF p_run_rev IS NOT NULL THEN
		UPDATE {{schema}}.runs SET status = p_status,
			wait_kind = CASE WHEN p_status = 'interrupted' THEN coalesce(p_wait_kind, '') ELSE '' END,
			checkpoint = p_checkpoint, meta = coalesce(p_meta, meta),
			revision = revision + 1, event_seq = greatest(event_seq, last_seq + n_ev), updated_at = p_now,
			log_len = log_len + coalesce(p_append_n, 0),
			log_seq = log_seq + CASE WHEN coalesce(p_append_n, 0) > 0 THEN 1 ELSE 0 END
		WHERE tenant = p_tenant AND id = p_run AND revision = p_run_rev
		RETURNING parent_id, session_id, agent_id, agent_digest, meta, deadline, revision, created_at, log_len, log_seq
		INTO o_parent, o_session, o_agent, o_digest, o_meta, o_deadline, o_revision, o_created, o_log_len, o_log_seq;
		IF NOT FOUND THEN
			SELECT revision INTO actual FROM {{schema}}.runs WHERE tenant = p_tenant AND id = p_run;
			RAISE EXCEPTION 'actoviq: run revision conflict' USING ERRCODE = 'AVCF0',
				DETAIL = json_build_object('kind', 'run', 'id', p_run, 'expected', p_run_rev, 'actual', coalesce(actual, 0))::text;
		END IF;
		IF coalesce(p_append_n, 0) > 0 THEN
			INSERT INTO {{schema}}.run_log (tenant, run_id, seq, first, n, crc, items)
			VALUES (p_tenant, p_run, o_log_seq, o_log_len - p_append_n, p_append_n, p_append_crc, p_append);
		END IF;
	END IF;
	o_ledger_created := array_fill(NULL::timestamptz, ARRAY[n_l]);
	FOR i IN 1 .. n_l LOOP
		-- The call's current revision: its latest record in events, or its
		-- ledger table row, whichever is newer.
		r_ev := NULL; c_ev := NULL; r_l := NULL; c_l := NULL; r_m := NULL; c_m := NULL;
		SELECT entry_rev, entry_created INTO r_ev, c_ev FROM {{schema}}.events
		WHERE tenant = p_tenant AND run_id = p_run AND call_id = l_call[i] ORDER BY seq DESC LIMIT 1;
		-- A row holding the call in more holds it at revision 1, created at
		-- the row's entry_updated: looked for only when the call has no
		-- later record.
		IF coalesce(r_ev, 0) < 2 THEN
			SELECT 1, entry_updated INTO r_m, c_m FROM {{schema}}.events
			WHERE more_calls IS NOT NULL
				AND {{schema}}.event_call_keys(tenant, run_id, more_calls) @> {{schema}}.event_call_keys(p_tenant, p_run, ARRAY[l_call[i]])
			ORDER BY seq DESC LIMIT 1;
			IF r_m IS NOT NULL AND coalesce(r_ev, 0) < r_m THEN
				r_ev := r_m; c_ev := c_m;
			END IF;
		END IF;
		SELECT revision, created_at INTO r_l, c_l FROM {{schema}}.ledger
		WHERE tenant = p_tenant AND run_id = p_run AND call_id = l_call[i];
		IF coalesce(r_ev, 0) >= coalesce(r_l, 0) THEN
			actual := coalesce(r_ev, 0); created := c_ev;
		ELSE
			actual := r_l; created := c_l;
		END IF;
		IF actual <> l_exp[i] THEN
			IF miss IS NULL OR l_ord[i] < miss THEN
				miss := l_ord[i];
				miss_i := i;
				miss_actual := actual;
			END IF;
			CONTINUE;
		END IF;
		created := coalesce(created, p_now);
		o_ledger_created[i] := created;
		k := l_ev[i];
		IF k > 0 AND p_more IS NOT NULL THEN
			-- The record goes in the write's one events row, below.
			CONTINUE;
		ELSIF k > 0 THEN
			INSERT INTO {{schema}}.events (tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time, data,
				call_id, turn, idx, tool, effect, state, idempotency_key, attempt, args_digest, args, result, error,
				approval, resolution, holder, epoch, entry_rev, entry_created, entry_updated, started_at, committed_at)
			VALUES (p_tenant, p_run, last_seq + k, e_id[k], e_parent[k], e_trace[k], e_span[k], e_type[k], e_time[k], e_data[k],
				l_call[i], l_turn[i], l_idx[i], l_tool[i], l_effect[i], l_state[i], l_key[i], l_attempt[i], l_digest[i],
				l_args[i], l_result[i], l_error[i], l_approval[i], l_resolution[i], l_holder[i], l_epoch[i],
				l_exp[i] + 1, created, p_now, l_started[i], l_committed[i]);
		ELSE
			INSERT INTO {{schema}}.ledger (tenant, run_id, call_id, turn, idx, tool, effect, state, idempotency_key,
				attempt, args_digest, args, result, error, approval, resolution, holder, epoch,
				revision, created_at, updated_at, started_at, committed_at)
			VALUES (p_tenant, p_run, l_call[i], l_turn[i], l_idx[i], l_tool[i], l_effect[i], l_state[i], l_key[i],
				l_attempt[i], l_digest[i], l_args[i], l_result[i], l_error[i], l_approval[i], l_resolution[i],
				l_holder[i], l_epoch[i], l_exp[i] + 1, created, p_now, l_started[i], l_committed[i])
			ON CONFLICT (tenant, run_id, call_id) DO UPDATE SET turn = excluded.turn, idx = excluded.idx,
				tool = excluded.tool, effect = excluded.effect, state = excluded.state,
				idempotency_key = excluded.idempotency_key, attempt = excluded.attempt,
				args_digest = excluded.args_digest, args = excluded.args, result = excluded.result,
				error = excluded.error, approval = excluded.approval, resolution = excluded.resolution,
				holder = excluded.holder, epoch = excluded.epoch, revision = excluded.revision,
				created_at = excluded.created_at, updated_at = excluded.updated_at,
				started_at = excluded.started_at, committed_at = excluded.committed_at;
		END IF;
	END LOOP;
	IF miss IS NOT NULL THEN
		RAISE EXCEPTION 'actoviq: ledger revision conflict' USING ERRCODE = 'AVCF0',
			DETAIL = json_build_object('kind', 'ledger', 'id', l_call[miss_i], 'expected', l_exp[miss_i],
				'actual', miss_actual)::text;
	END IF;
	IF p_more IS NOT NULL THEN
		-- The write's records as one row: the first in the columns (with
		-- its entry when it is a ledger write's: l_ev = 1), the others in
		-- more; entry_updated is the write's time whatever the first is.
		FOR i IN 1 .. n_l LOOP
			IF l_ev[i] = 1 THEN
				first_i := i;
			END IF;
		END LOOP;
		INSERT INTO {{schema}}.events (tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time, data,
			call_id, turn, idx, tool, effect, state, idempotency_key, attempt, args_digest, args, result, error,
			approval, resolution, holder, epoch, entry_rev, entry_created, entry_updated, started_at, committed_at,
			first_seq, more, more_crc, more_calls)
		VALUES (p_tenant, p_run, last_seq + n_ev, e_id[1], e_parent[1], e_trace[1], e_span[1], e_type[1], e_time[1], e_data[1],
			l_call[first_i], l_turn[first_i], l_idx[first_i], l_tool[first_i], l_effect[first_i], l_state[first_i],
			l_key[first_i], l_attempt[first_i], l_digest[first_i], l_args[first_i], l_result[first_i], l_error[first_i],
			l_approval[first_i], l_resolution[first_i], l_holder[first_i], l_epoch[first_i],
			CASE WHEN first_i IS NULL THEN NULL ELSE 1 END, CASE WHEN first_i IS NULL THEN NULL ELSE p_now END, p_now,
			l_started[first_i], l_committed[first_i],
			last_seq + 1, p_more, p_more_crc, p_more_calls);
	ELSIF p_n_plain > 0 THEN
		INSERT INTO {{schema}}.events (tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time, data)
		SELECT p_tenant, p_run, last_seq + e.ord, e.id, e.parent, e.trace, e.span, e.type, e.time, e.data
		FROM unnest(e_id, e_parent, e_trace, e_span, e_type, e_time, e_data)
			WITH ORDINALITY AS e(id, parent, trace, span, type, time, data, ord)
		WHERE e.ord <= p_n_plain;
	END IF;
	o_first_seq := last_seq + 1;
END
$$;
