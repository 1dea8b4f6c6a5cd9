-- run_write, as in 021, with one lookup skipped: when every entry of a
-- write exists (no expected revision 0), 021 walked the run's rows of
-- several records (events_multi, newest first) for each call without a
-- one-record row, also when the call's ledger table row (an entry written
-- without an event) was at revision 2 or more, which wins over the
-- revision 1 a row's more gives anyway: for such an entry, each write
-- read every multi-record row of the run. The walk now comes after the
-- ledger table's lookup and only when that row is absent or at revision
-- 1 (the answers are the same). Nothing else changes.
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
	f_found boolean;
	f_holder text;
	f_epoch bigint;
	f_held boolean;
	last_seq bigint;
	n_ev int := coalesce(array_length(e_id, 1), 0);
	actual bigint;
	created timestamptz;
	i int;
	miss_i int;
	miss_actual bigint;
	first_i int;
	n_row int;
BEGIN
	PERFORM pg_advisory_xact_lock(hashtextextended('actoviq-run/' || p_tenant || '/' || p_run, 0));
	-- FOR SHARE: a takeover (which updates the claim row) waits for this
	-- write to end, so no fenced write commits after a takeover did. With
	-- no fence the key is NULL and no claim row is read.
	SELECT c.found, c.holder, c.epoch, c.held,
		(SELECT coalesce(max(e.seq), 0) FROM {{schema}}.events e WHERE e.tenant = p_tenant AND e.run_id = p_run)
	INTO f_found, f_holder, f_epoch, f_held, last_seq
	FROM {{schema}}.runs r
	LEFT JOIN LATERAL (SELECT true AS found, cl.holder, cl.epoch, cl.held FROM {{schema}}.claims cl
		WHERE cl.tenant = p_tenant AND cl.key = p_fence_key FOR SHARE) c ON true
	WHERE r.tenant = p_tenant AND r.id = p_run;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'actoviq: run not found' USING ERRCODE = 'AVNF0';
	END IF;
	IF p_fence_key IS NOT NULL AND (f_found IS NULL OR f_holder <> p_fence_holder OR f_epoch <> p_fence_epoch OR NOT f_held) THEN
		RAISE EXCEPTION 'actoviq: fenced' USING ERRCODE = 'AVFN0',
			DETAIL = json_build_object('found', f_found IS NOT NULL, 'holder', f_holder, 'epoch', f_epoch,
				'released', f_found IS NOT NULL AND NOT f_held)::text;
	END IF;
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
	IF cardinality(l_call) > 0 THEN
		-- Each entry's current revision: its latest record in events, or
		-- its ledger table row, whichever is newer; a call with no
		-- one-record row may be in a row's more, at revision 1, created at
		-- that row's entry_updated. created is the entry's creation time
		-- (now for a new one); the first miss is the one earliest in the
		-- input (l_ord).
		o_ledger_created := '{}';
		IF 0 = ANY(l_exp) THEN
			-- An entry is new: that no row holds it in more is proved by
			-- the inverted index (events_more_calls), in one lookup for all
			-- the write's calls.
			FOR i, actual, created IN
			WITH more AS MATERIALIZED (
				SELECT e.seq, e.entry_updated, e.more_calls FROM {{schema}}.events e
				WHERE e.more_calls IS NOT NULL
					AND {{schema}}.event_call_keys(e.tenant, e.run_id, e.more_calls) && {{schema}}.event_call_keys(p_tenant, p_run, l_call))
			SELECT y.i,
				CASE WHEN coalesce(y.ev_rev, 0) >= coalesce(l.revision, 0) THEN coalesce(y.ev_rev, 0) ELSE l.revision END,
				coalesce(CASE WHEN coalesce(y.ev_rev, 0) >= coalesce(l.revision, 0) THEN y.ev_created ELSE l.created_at END, p_now)
			FROM (
				SELECT g.i,
					CASE WHEN coalesce(one.entry_rev, 0) < 1 AND m.at IS NOT NULL THEN 1 ELSE one.entry_rev END AS ev_rev,
					CASE WHEN coalesce(one.entry_rev, 0) < 1 AND m.at IS NOT NULL THEN m.at ELSE one.entry_created END AS ev_created
				FROM generate_subscripts(l_call, 1) AS g(i)
				LEFT JOIN LATERAL (SELECT e.entry_rev, e.entry_created FROM {{schema}}.events e
					WHERE e.tenant = p_tenant AND e.run_id = p_run AND e.call_id = l_call[g.i] ORDER BY e.seq DESC LIMIT 1) one ON true
				LEFT JOIN LATERAL (SELECT mr.entry_updated AS at FROM more mr
					WHERE coalesce(one.entry_rev, 0) < 1 AND l_call[g.i] = ANY(mr.more_calls) ORDER BY mr.seq DESC LIMIT 1) m ON true
			) y
			LEFT JOIN LATERAL (SELECT lr.revision, lr.created_at FROM {{schema}}.ledger lr
				WHERE lr.tenant = p_tenant AND lr.run_id = p_run AND lr.call_id = l_call[y.i] LIMIT 1) l ON true
		LOOP
			IF actual <> l_exp[i] AND (miss_i IS NULL OR l_ord[i] < l_ord[miss_i]) THEN
				miss_i := i;
				miss_actual := actual;
			END IF;
			o_ledger_created[i] := created;
		END LOOP;
		ELSE
			-- Every entry exists: a call with no one-record row is at
			-- revision 1 in the run's latest row holding it in more, found
			-- by walking the run's rows of several records newest first
			-- (events_multi); the first is normally the model response that
			-- prepared it, and a row that does not hold the call costs one
			-- index entry and one heap tuple, less than starting the
			-- inverted index's scan. Not walked when the call's ledger
			-- table row is at revision 2 or more: the row wins over a
			-- revision 1 found in more.
			FOR i, actual, created IN
			SELECT y.i,
				CASE WHEN coalesce(y.ev_rev, 0) >= coalesce(y.l_rev, 0) THEN coalesce(y.ev_rev, 0) ELSE y.l_rev END,
				coalesce(CASE WHEN coalesce(y.ev_rev, 0) >= coalesce(y.l_rev, 0) THEN y.ev_created ELSE y.l_created END, p_now)
			FROM (
				SELECT g.i, l.revision AS l_rev, l.created_at AS l_created,
					CASE WHEN coalesce(one.entry_rev, 0) < 1 AND m.at IS NOT NULL THEN 1 ELSE one.entry_rev END AS ev_rev,
					CASE WHEN coalesce(one.entry_rev, 0) < 1 AND m.at IS NOT NULL THEN m.at ELSE one.entry_created END AS ev_created
				FROM generate_subscripts(l_call, 1) AS g(i)
				LEFT JOIN LATERAL (SELECT e.entry_rev, e.entry_created FROM {{schema}}.events e
					WHERE e.tenant = p_tenant AND e.run_id = p_run AND e.call_id = l_call[g.i] ORDER BY e.seq DESC LIMIT 1) one ON true
				LEFT JOIN LATERAL (SELECT lr.revision, lr.created_at FROM {{schema}}.ledger lr
					WHERE lr.tenant = p_tenant AND lr.run_id = p_run AND lr.call_id = l_call[g.i] LIMIT 1) l ON true
				LEFT JOIN LATERAL (SELECT e.entry_updated AS at FROM {{schema}}.events e
					WHERE coalesce(one.entry_rev, 0) < 1 AND coalesce(l.revision, 0) <= 1
						AND e.tenant = p_tenant AND e.run_id = p_run AND e.more_calls IS NOT NULL
						AND l_call[g.i] = ANY(e.more_calls)
					ORDER BY e.seq DESC LIMIT 1) m ON true
			) y
		LOOP
			IF actual <> l_exp[i] AND (miss_i IS NULL OR l_ord[i] < l_ord[miss_i]) THEN
				miss_i := i;
				miss_actual := actual;
			END IF;
			o_ledger_created[i] := created;
		END LOOP;
		END IF;
		IF miss_i IS NOT NULL THEN
			RAISE EXCEPTION 'actoviq: ledger revision conflict' USING ERRCODE = 'AVCF0',
				DETAIL = json_build_object('kind', 'ledger', 'id', l_call[miss_i], 'expected', l_exp[miss_i],
					'actual', miss_actual)::text;
		END IF;
		IF 0 = ANY(l_ev) THEN
			INSERT INTO {{schema}}.ledger (tenant, run_id, call_id, turn, idx, tool, effect, state, idempotency_key,
				attempt, args_digest, args, result, error, approval, resolution, holder, epoch,
				revision, created_at, updated_at, started_at, committed_at)
			SELECT p_tenant, p_run, l_call[g.j], l_turn[g.j], l_idx[g.j], l_tool[g.j], l_effect[g.j], l_state[g.j], l_key[g.j],
				l_attempt[g.j], l_digest[g.j], l_args[g.j], l_result[g.j], l_error[g.j], l_approval[g.j], l_resolution[g.j],
				l_holder[g.j], l_epoch[g.j], l_exp[g.j] + 1, o_ledger_created[g.j], p_now, l_started[g.j], l_committed[g.j]
			FROM generate_subscripts(l_ev, 1) AS g(j) WHERE l_ev[g.j] = 0
			ON CONFLICT (tenant, run_id, call_id) DO UPDATE SET turn = excluded.turn, idx = excluded.idx,
				tool = excluded.tool, effect = excluded.effect, state = excluded.state,
				idempotency_key = excluded.idempotency_key, attempt = excluded.attempt,
				args_digest = excluded.args_digest, args = excluded.args, result = excluded.result,
				error = excluded.error, approval = excluded.approval, resolution = excluded.resolution,
				holder = excluded.holder, epoch = excluded.epoch, revision = excluded.revision,
				created_at = excluded.created_at, updated_at = excluded.updated_at,
				started_at = excluded.started_at, committed_at = excluded.committed_at;
		END IF;
	ELSE
		o_ledger_created := '{}';
	END IF;
	IF p_more IS NOT NULL THEN
		-- The write's records as one row: the first in the columns (with
		-- its entry when it is a ledger write's: l_ev = 1), the others in
		-- more; entry_updated is the write's time whatever the first is.
		-- A started (or unknown) record is never in the row: a client
		-- folds a write that has some only when they are its last
		-- records (a model's answer with its first call's start), and
		-- each is a one-record row after the row, numbered n_row + 1 on.
		n_row := n_ev - (SELECT count(*) FROM generate_subscripts(l_ev, 1) AS j
			WHERE l_ev[j] > 0 AND l_state[j] IN ('started', 'unknown'))::int;
		first_i := array_position(l_ev, 1);
		INSERT INTO {{schema}}.events (tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time, data,
			call_id, turn, idx, tool, effect, state, idempotency_key, attempt, args_digest, args, result, error,
			approval, resolution, holder, epoch, entry_rev, entry_created, entry_updated, started_at, committed_at,
			first_seq, more, more_crc, more_calls)
		VALUES (p_tenant, p_run, last_seq + n_row, e_id[1], e_parent[1], e_trace[1], e_span[1], e_type[1], e_time[1], e_data[1],
			l_call[first_i], l_turn[first_i], l_idx[first_i], l_tool[first_i], l_effect[first_i], l_state[first_i],
			l_key[first_i], l_attempt[first_i], l_digest[first_i], l_args[first_i], l_result[first_i], l_error[first_i],
			l_approval[first_i], l_resolution[first_i], l_holder[first_i], l_epoch[first_i],
			CASE WHEN first_i IS NULL THEN NULL ELSE 1 END, CASE WHEN first_i IS NULL THEN NULL ELSE p_now END, p_now,
			l_started[first_i], l_committed[first_i],
			last_seq + 1, p_more, p_more_crc, p_more_calls);
		IF n_row < n_ev THEN
			INSERT INTO {{schema}}.events (tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time, data,
				call_id, turn, idx, tool, effect, state, idempotency_key, attempt, args_digest, args, result, error,
				approval, resolution, holder, epoch, entry_rev, entry_created, entry_updated, started_at, committed_at)
			SELECT p_tenant, p_run, last_seq + g.k, e_id[g.k], e_parent[g.k], e_trace[g.k], e_span[g.k], e_type[g.k], e_time[g.k], e_data[g.k],
				l_call[g.i], l_turn[g.i], l_idx[g.i], l_tool[g.i], l_effect[g.i], l_state[g.i], l_key[g.i], l_attempt[g.i], l_digest[g.i],
				l_args[g.i], l_result[g.i], l_error[g.i], l_approval[g.i], l_resolution[g.i], l_holder[g.i], l_epoch[g.i],
				l_exp[g.i] + 1, o_ledger_created[g.i], p_now, l_started[g.i], l_committed[g.i]
			FROM (SELECT j AS i, l_ev[j] AS k FROM generate_subscripts(l_ev, 1) AS j) g WHERE g.k > n_row;
		END IF;
	ELSE
		IF p_n_plain > 0 THEN
			INSERT INTO {{schema}}.events (tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time, data)
			SELECT p_tenant, p_run, last_seq + e.ord, e.id, e.parent, e.trace, e.span, e.type, e.time, e.data
			FROM unnest(e_id, e_parent, e_trace, e_span, e_type, e_time, e_data)
				WITH ORDINALITY AS e(id, parent, trace, span, type, time, data, ord)
			WHERE e.ord <= p_n_plain;
		END IF;
		IF n_ev > p_n_plain THEN
			-- The ledger writes' records: entry i's is event l_ev[i].
			INSERT INTO {{schema}}.events (tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time, data,
				call_id, turn, idx, tool, effect, state, idempotency_key, attempt, args_digest, args, result, error,
				approval, resolution, holder, epoch, entry_rev, entry_created, entry_updated, started_at, committed_at)
			SELECT p_tenant, p_run, last_seq + g.k, e_id[g.k], e_parent[g.k], e_trace[g.k], e_span[g.k], e_type[g.k], e_time[g.k], e_data[g.k],
				l_call[g.i], l_turn[g.i], l_idx[g.i], l_tool[g.i], l_effect[g.i], l_state[g.i], l_key[g.i], l_attempt[g.i], l_digest[g.i],
				l_args[g.i], l_result[g.i], l_error[g.i], l_approval[g.i], l_resolution[g.i], l_holder[g.i], l_epoch[g.i],
				l_exp[g.i] + 1, o_ledger_created[g.i], p_now, l_started[g.i], l_committed[g.i]
			FROM (SELECT j AS i, l_ev[j] AS k FROM generate_subscripts(l_ev, 1) AS j) g WHERE g.k > 0;
		END IF;
	END IF;
	o_first_seq := last_seq + 1;
END
$$;
