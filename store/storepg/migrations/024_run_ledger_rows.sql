-- Whether a run has rows in the ledger table (entries written without
-- an event, which few runs have): runs.ledger_rows, set by a trigger on
-- every insert into ledger, whoever makes it (either run_write, a binary
-- of before this migration, a scale test's fill). The run_write of rows
-- (023) reads it with the claim and skips the ledger table's lookup of
-- each entry when it is false: the call write's two lookups, about 7% of
-- its instructions. Existing runs take true (their rows are looked up
-- as before); runs made from now on start false. Never set back to false
-- (a run's ledger rows go only with the run).
ALTER TABLE {{schema}}.runs ADD COLUMN ledger_rows boolean NOT NULL DEFAULT true;
ALTER TABLE {{schema}}.runs ALTER COLUMN ledger_rows SET DEFAULT false;

CREATE FUNCTION {{schema}}.ledger_rows_mark() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE {{schema}}.runs r SET ledger_rows = true
	FROM (SELECT DISTINCT n.tenant, n.run_id FROM new_rows n) n
	WHERE r.tenant = n.tenant AND r.id = n.run_id AND NOT r.ledger_rows;
	RETURN NULL;
END
$$;
CREATE TRIGGER ledger_rows_mark AFTER INSERT ON {{schema}}.ledger
	REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.ledger_rows_mark();

-- The run_write of rows, as in 023, with the flag read by the claim's
-- statement and the ledger table's lookup skipped when it is false.
CREATE OR REPLACE FUNCTION {{schema}}.run_write(
	p_tenant text, p_run text, p_now timestamptz,
	p_fence_key text, p_fence_holder text, p_fence_epoch bigint,
	p_run_rev bigint, p_status text, p_checkpoint text, p_meta text,
	p_append text, p_append_n bigint, p_append_crc bigint,
	p_entries {{schema}}.run_write_entry[], p_events {{schema}}.run_write_event[],
	p_wait_kind text,
	p_more text, p_more_crc bigint, p_more_calls text[],
	OUT o_parent text, OUT o_session text, OUT o_agent text, OUT o_digest text, OUT o_meta text,
	OUT o_deadline timestamptz, OUT o_revision bigint, OUT o_created timestamptz,
	OUT o_first_seq bigint, OUT o_ledger_created timestamptz[], OUT o_log_len bigint, OUT o_log_seq bigint)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
	f_found boolean;
	f_holder text;
	f_epoch bigint;
	f_held boolean;
	f_ledger_rows boolean;
	last_seq bigint;
	n_plain int := coalesce(cardinality(p_events), 0);
	n_ev int;
	n_led int := 0;
	n_tail int := 0;
	any_new boolean := false;
	any_table boolean := false;
	calls text[] := '{}';
	en {{schema}}.run_write_entry;
	fe {{schema}}.run_write_entry;
	pe {{schema}}.run_write_event;
	actual bigint;
	created timestamptz;
	i int;
	j int := 0;
	miss_i int;
	miss_ord int;
	miss_actual bigint;
	first_i int;
	n_row int;
	one_rev bigint;
	one_created timestamptz;
	l_rev bigint;
	l_created timestamptz;
	m_at timestamptz;
BEGIN
	PERFORM pg_advisory_xact_lock(hashtextextended('actoviq-run/' || p_tenant || '/' || p_run, 0));
	-- What the entries are, in one pass: any new (expected revision 0),
	-- any written without an event (ledger table), the records, the
	-- started/unknown ones (a folded write's tail), the first record's.
	IF p_entries IS NOT NULL THEN
		FOREACH en IN ARRAY p_entries LOOP
			j := j + 1;
			calls := calls || en.call_id;
			IF en.exp = 0 THEN
				any_new := true;
			END IF;
			IF en.ev > 0 THEN
				n_led := n_led + 1;
				IF en.state IN ('started', 'unknown') THEN
					n_tail := n_tail + 1;
				END IF;
				IF en.ev = 1 THEN
					first_i := j;
				END IF;
			ELSE
				any_table := true;
			END IF;
		END LOOP;
	END IF;
	n_ev := n_plain + n_led;
	-- FOR SHARE: a takeover (which updates the claim row) waits for this
	-- write to end, so no fenced write commits after a takeover did. With
	-- no fence the key is NULL and no claim row is read.
	SELECT c.found, c.holder, c.epoch, c.held, r.ledger_rows,
		coalesce((SELECT e.seq FROM {{schema}}.events e WHERE e.tenant = p_tenant AND e.run_id = p_run
			ORDER BY e.seq DESC LIMIT 1), 0)
	INTO f_found, f_holder, f_epoch, f_held, f_ledger_rows, last_seq
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
	o_ledger_created := '{}';
	IF j > 0 THEN
		-- Each entry's current revision, as 022 finds it (two shapes, and
		-- the second one entry at a time for one or two entries).
		IF any_new THEN
			FOR i, actual, created IN
			WITH more AS MATERIALIZED (
				SELECT e.seq, e.entry_updated, e.more_calls FROM {{schema}}.events e
				WHERE e.more_calls IS NOT NULL
					AND {{schema}}.event_call_keys(e.tenant, e.run_id, e.more_calls) && {{schema}}.event_call_keys(p_tenant, p_run, calls))
			SELECT y.i,
				CASE WHEN coalesce(y.ev_rev, 0) >= coalesce(l.revision, 0) THEN coalesce(y.ev_rev, 0) ELSE l.revision END,
				coalesce(CASE WHEN coalesce(y.ev_rev, 0) >= coalesce(l.revision, 0) THEN y.ev_created ELSE l.created_at END, p_now)
			FROM (
				SELECT g.i, g.call_id,
					CASE WHEN coalesce(one.entry_rev, 0) < 1 AND m.at IS NOT NULL THEN 1 ELSE one.entry_rev END AS ev_rev,
					CASE WHEN coalesce(one.entry_rev, 0) < 1 AND m.at IS NOT NULL THEN m.at ELSE one.entry_created END AS ev_created
				FROM unnest(calls) WITH ORDINALITY AS g(call_id, i)
				LEFT JOIN LATERAL (SELECT e.entry_rev, e.entry_created FROM {{schema}}.events e
					WHERE e.tenant = p_tenant AND e.run_id = p_run AND e.call_id = g.call_id ORDER BY e.seq DESC LIMIT 1) one ON true
				LEFT JOIN LATERAL (SELECT mr.entry_updated AS at FROM more mr
					WHERE coalesce(one.entry_rev, 0) < 1 AND g.call_id = ANY(mr.more_calls) ORDER BY mr.seq DESC LIMIT 1) m ON true
			) y
			LEFT JOIN LATERAL (SELECT lr.revision, lr.created_at FROM {{schema}}.ledger lr
				WHERE lr.tenant = p_tenant AND lr.run_id = p_run AND lr.call_id = y.call_id LIMIT 1) l ON true
		LOOP
			en := p_entries[i];
			IF actual <> en.exp AND (miss_i IS NULL OR en.ord < miss_ord) THEN
				miss_i := i;
				miss_ord := en.ord;
				miss_actual := actual;
			END IF;
			o_ledger_created[i] := created;
		END LOOP;
		ELSIF j <= 2 THEN
			-- Every entry exists, one or two of them (the call write: a
			-- committed record and the next call's start): the same
			-- lookups, one statement each, cheaper to start than the
			-- joined statement below.
			FOR i IN 1..j LOOP
				en := p_entries[i];
				SELECT e.entry_rev, e.entry_created INTO one_rev, one_created FROM {{schema}}.events e
					WHERE e.tenant = p_tenant AND e.run_id = p_run AND e.call_id = en.call_id ORDER BY e.seq DESC LIMIT 1;
				IF f_ledger_rows THEN
					SELECT lr.revision, lr.created_at INTO l_rev, l_created FROM {{schema}}.ledger lr
						WHERE lr.tenant = p_tenant AND lr.run_id = p_run AND lr.call_id = en.call_id;
				ELSE
					l_rev := NULL;
					l_created := NULL;
				END IF;
				IF coalesce(one_rev, 0) < 1 AND coalesce(l_rev, 0) <= 1 THEN
					SELECT e.entry_updated INTO m_at FROM {{schema}}.events e
						WHERE e.tenant = p_tenant AND e.run_id = p_run AND e.more_calls IS NOT NULL AND en.call_id = ANY(e.more_calls)
						ORDER BY e.seq DESC LIMIT 1;
					IF m_at IS NOT NULL THEN
						one_rev := 1;
						one_created := m_at;
					END IF;
				END IF;
				IF coalesce(one_rev, 0) >= coalesce(l_rev, 0) THEN
					actual := coalesce(one_rev, 0);
					created := coalesce(one_created, p_now);
				ELSE
					actual := l_rev;
					created := coalesce(l_created, p_now);
				END IF;
				IF actual <> en.exp AND (miss_i IS NULL OR en.ord < miss_ord) THEN
					miss_i := i;
					miss_ord := en.ord;
					miss_actual := actual;
				END IF;
				o_ledger_created[i] := created;
			END LOOP;
		ELSE
			FOR i, actual, created IN
			SELECT y.i,
				CASE WHEN coalesce(y.ev_rev, 0) >= coalesce(y.l_rev, 0) THEN coalesce(y.ev_rev, 0) ELSE y.l_rev END,
				coalesce(CASE WHEN coalesce(y.ev_rev, 0) >= coalesce(y.l_rev, 0) THEN y.ev_created ELSE y.l_created END, p_now)
			FROM (
				SELECT g.i, l.revision AS l_rev, l.created_at AS l_created,
					CASE WHEN coalesce(one.entry_rev, 0) < 1 AND m.at IS NOT NULL THEN 1 ELSE one.entry_rev END AS ev_rev,
					CASE WHEN coalesce(one.entry_rev, 0) < 1 AND m.at IS NOT NULL THEN m.at ELSE one.entry_created END AS ev_created
				FROM unnest(calls) WITH ORDINALITY AS g(call_id, i)
				LEFT JOIN LATERAL (SELECT e.entry_rev, e.entry_created FROM {{schema}}.events e
					WHERE e.tenant = p_tenant AND e.run_id = p_run AND e.call_id = g.call_id ORDER BY e.seq DESC LIMIT 1) one ON true
				LEFT JOIN LATERAL (SELECT lr.revision, lr.created_at FROM {{schema}}.ledger lr
					WHERE lr.tenant = p_tenant AND lr.run_id = p_run AND lr.call_id = g.call_id LIMIT 1) l ON true
				LEFT JOIN LATERAL (SELECT e.entry_updated AS at FROM {{schema}}.events e
					WHERE coalesce(one.entry_rev, 0) < 1 AND coalesce(l.revision, 0) <= 1
						AND e.tenant = p_tenant AND e.run_id = p_run AND e.more_calls IS NOT NULL
						AND g.call_id = ANY(e.more_calls)
					ORDER BY e.seq DESC LIMIT 1) m ON true
			) y
		LOOP
			en := p_entries[i];
			IF actual <> en.exp AND (miss_i IS NULL OR en.ord < miss_ord) THEN
				miss_i := i;
				miss_ord := en.ord;
				miss_actual := actual;
			END IF;
			o_ledger_created[i] := created;
		END LOOP;
		END IF;
		IF miss_i IS NOT NULL THEN
			en := p_entries[miss_i];
			RAISE EXCEPTION 'actoviq: ledger revision conflict' USING ERRCODE = 'AVCF0',
				DETAIL = json_build_object('kind', 'ledger', 'id', en.call_id, 'expected', en.exp,
					'actual', miss_actual)::text;
		END IF;
		IF any_table THEN
			INSERT INTO {{schema}}.ledger (tenant, run_id, call_id, turn, idx, tool, effect, state, idempotency_key,
				attempt, args_digest, args, result, error, approval, resolution, holder, epoch,
				revision, created_at, updated_at, started_at, committed_at)
			SELECT p_tenant, p_run, u.call_id, u.turn, u.idx, u.tool, u.effect, u.state, u.idempotency_key,
				u.attempt, u.args_digest, u.args, u.result, u.error, u.approval, u.resolution,
				u.holder, u.epoch, u.exp + 1, o_ledger_created[u.ordinality], p_now, u.started_at, u.committed_at
			FROM unnest(p_entries) WITH ORDINALITY AS u WHERE u.ev = 0
			ON CONFLICT (tenant, run_id, call_id) DO UPDATE SET turn = excluded.turn, idx = excluded.idx,
				tool = excluded.tool, effect = excluded.effect, state = excluded.state,
				idempotency_key = excluded.idempotency_key, attempt = excluded.attempt,
				args_digest = excluded.args_digest, args = excluded.args, result = excluded.result,
				error = excluded.error, approval = excluded.approval, resolution = excluded.resolution,
				holder = excluded.holder, epoch = excluded.epoch, revision = excluded.revision,
				created_at = excluded.created_at, updated_at = excluded.updated_at,
				started_at = excluded.started_at, committed_at = excluded.committed_at;
		END IF;
	END IF;
	IF p_more IS NOT NULL THEN
		-- The write's records as one row, as in 022: the first in the
		-- columns (with its entry when it is a ledger write's), the others
		-- in more; a started or unknown record (always among the last) is
		-- a one-record row after the row, numbered n_row + 1 on.
		n_row := n_ev - n_tail;
		IF first_i IS NOT NULL THEN
			fe := p_entries[first_i];
			pe := ROW(fe.ev_id, fe.ev_parent, fe.ev_trace, fe.ev_span, fe.ev_type, fe.ev_time, fe.ev_data);
		ELSE
			pe := p_events[1];
		END IF;
		INSERT INTO {{schema}}.events (tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time, data,
			call_id, turn, idx, tool, effect, state, idempotency_key, attempt, args_digest, args, result, error,
			approval, resolution, holder, epoch, entry_rev, entry_created, entry_updated, started_at, committed_at,
			first_seq, more, more_crc, more_calls)
		VALUES (p_tenant, p_run, last_seq + n_row, pe.id, pe.parent_run_id, pe.trace_id, pe.span_id, pe.type, pe.time, pe.data,
			fe.call_id, fe.turn, fe.idx, fe.tool, fe.effect, fe.state,
			fe.idempotency_key, fe.attempt, fe.args_digest, fe.args, fe.result, fe.error,
			fe.approval, fe.resolution, fe.holder, fe.epoch,
			CASE WHEN first_i IS NULL THEN NULL ELSE 1 END, CASE WHEN first_i IS NULL THEN NULL ELSE p_now END, p_now,
			fe.started_at, fe.committed_at,
			last_seq + 1, p_more, p_more_crc, p_more_calls);
		IF n_row < n_ev THEN
			INSERT INTO {{schema}}.events (tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time, data,
				call_id, turn, idx, tool, effect, state, idempotency_key, attempt, args_digest, args, result, error,
				approval, resolution, holder, epoch, entry_rev, entry_created, entry_updated, started_at, committed_at)
			SELECT p_tenant, p_run, last_seq + u.ev, u.ev_id, u.ev_parent, u.ev_trace, u.ev_span, u.ev_type, u.ev_time, u.ev_data,
				u.call_id, u.turn, u.idx, u.tool, u.effect, u.state, u.idempotency_key, u.attempt, u.args_digest,
				u.args, u.result, u.error, u.approval, u.resolution, u.holder, u.epoch,
				u.exp + 1, o_ledger_created[u.ordinality], p_now, u.started_at, u.committed_at
			FROM unnest(p_entries) WITH ORDINALITY AS u WHERE u.ev > n_row;
		END IF;
	ELSE
		IF n_plain > 0 THEN
			INSERT INTO {{schema}}.events (tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time, data)
			SELECT p_tenant, p_run, last_seq + e.ordinality, e.id, e.parent_run_id, e.trace_id, e.span_id, e.type, e.time, e.data
			FROM unnest(p_events) WITH ORDINALITY AS e;
		END IF;
		IF n_led > 0 THEN
			-- The ledger writes' records: entry u's is record u.ev.
			INSERT INTO {{schema}}.events (tenant, run_id, seq, id, parent_run_id, trace_id, span_id, type, time, data,
				call_id, turn, idx, tool, effect, state, idempotency_key, attempt, args_digest, args, result, error,
				approval, resolution, holder, epoch, entry_rev, entry_created, entry_updated, started_at, committed_at)
			SELECT p_tenant, p_run, last_seq + u.ev, u.ev_id, u.ev_parent, u.ev_trace, u.ev_span, u.ev_type, u.ev_time, u.ev_data,
				u.call_id, u.turn, u.idx, u.tool, u.effect, u.state, u.idempotency_key, u.attempt, u.args_digest,
				u.args, u.result, u.error, u.approval, u.resolution, u.holder, u.epoch,
				u.exp + 1, o_ledger_created[u.ordinality], p_now, u.started_at, u.committed_at
			FROM unnest(p_entries) WITH ORDINALITY AS u WHERE u.ev > 0;
		END IF;
	END IF;
	o_first_seq := last_seq + 1;
END
$$;
