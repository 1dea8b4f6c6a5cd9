-- The run journal: a write carries its own change, not the run's history.
--
-- A ledger transition and its event are one row of events: the event row
-- carries the entry as it is after the transition (call_id and the entry
-- columns; entry_rev is the entry's revision). The ledger's current state
-- is the latest such row of the call; rows of the ledger table written
-- before (or by a write that gives no event of its own) still count, the
-- higher revision winning. Nothing is copied: existing entries stay where
-- they are and move forward with their next transition.
ALTER TABLE {{schema}}.events
	ADD COLUMN call_id         text,
	ADD COLUMN turn            bigint,
	ADD COLUMN idx             bigint,
	ADD COLUMN tool            text,
	ADD COLUMN effect          text,
	ADD COLUMN state           text,
	ADD COLUMN idempotency_key text,
	ADD COLUMN attempt         bigint,
	ADD COLUMN args_digest     text,
	ADD COLUMN args            text,
	ADD COLUMN result          text,
	ADD COLUMN error           text,
	ADD COLUMN approval        text,
	ADD COLUMN resolution      text,
	ADD COLUMN holder          text,
	ADD COLUMN epoch           bigint,
	ADD COLUMN entry_rev       bigint,
	ADD COLUMN entry_created   timestamptz,
	ADD COLUMN entry_updated   timestamptz,
	ADD COLUMN started_at      timestamptz,
	ADD COLUMN committed_at    timestamptz;

-- The run's log (its transcript) is appended to, never rewritten: each run
-- write that appends items adds one row holding them joined by U+001E,
-- with their count and the CRC-32C of the text (as the session journal).
-- first is the log index of the row's first item. Old rows are merged
-- into larger ones off the write path (compaction); a merged row keeps
-- the seq of the last row it replaces. log_len on the run row counts the
-- items, log_seq numbers its rows. A run written before keeps its
-- transcript in its checkpoint, with an empty log, until its next write
-- moves it here.
CREATE TABLE {{schema}}.run_log (
	tenant text   NOT NULL,
	run_id text   NOT NULL,
	seq    bigint NOT NULL,
	first  bigint NOT NULL,
	n      bigint NOT NULL,
	crc    bigint NOT NULL,
	items  text   NOT NULL,
	PRIMARY KEY (tenant, run_id, seq)
);

ALTER TABLE {{schema}}.runs
	ADD COLUMN log_len bigint NOT NULL DEFAULT 0,
	ADD COLUMN log_seq bigint NOT NULL DEFAULT 0;

-- run_write, as in 006, with the run's log append and ledger writes whose
-- event is their record:
--   p_append, p_append_n, p_append_crc: the items appended to the log
--     (joined text, count, checksum), or NULL;
--   l_ev[i]: the position of ledger write i's event in the e_ arrays, or 0
--     when it has none (the entry then goes to the ledger table);
--   p_n_plain: the number of events that are not a ledger write's.
-- Events are numbered in e_ array order after the run's largest seq.
DROP FUNCTION {{schema}}.run_write(text, text, timestamptz, text, text, bigint, bigint, text, text, text,
	int[], text[], bigint[], bigint[], bigint[], text[], text[], text[], text[], bigint[], text[],
	text[], text[], text[], text[], text[], text[], bigint[], timestamptz[], timestamptz[],
	text[], text[], text[], text[], text[], timestamptz[], text[], text);

CREATE FUNCTION {{schema}}.run_write(
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
	OUT o_parent text, OUT o_session text, OUT o_agent text, OUT o_digest text, OUT o_meta text,
	OUT o_deadline timestamptz, OUT o_revision bigint, OUT o_created timestamptz,
	OUT o_first_seq bigint, OUT o_ledger_created timestamptz[], OUT o_log_len bigint, OUT o_log_seq bigint)
LANGUAGE plpgsql AS $$
DECLARE
	cur_rev bigint;
	f_holder text;
	f_epoch bigint;
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
		r_ev := NULL; c_ev := NULL; r_l := NULL; c_l := NULL;
		SELECT entry_rev, entry_created INTO r_ev, c_ev FROM {{schema}}.events
		WHERE tenant = p_tenant AND run_id = p_run AND call_id = l_call[i] ORDER BY seq DESC LIMIT 1;
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
		IF k > 0 THEN
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
	IF p_n_plain > 0 THEN
		INSERT INTO {{schema}}.events (tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time, data)
		SELECT p_tenant, p_run, last_seq + e.ord, e.id, e.parent, e.trace, e.span, e.type, e.time, e.data
		FROM unnest(e_id, e_parent, e_trace, e_span, e_type, e_time, e_data)
			WITH ORDINALITY AS e(id, parent, trace, span, type, time, data, ord)
		WHERE e.ord <= p_n_plain;
	END IF;
	o_first_seq := last_seq + 1;
END
$$;
