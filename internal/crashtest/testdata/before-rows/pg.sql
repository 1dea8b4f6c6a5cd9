--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: {{schema}}; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA {{schema}};


--
-- Name: run_counts_apply(); Type: FUNCTION; Schema: {{schema}}; Owner: -
--

CREATE FUNCTION {{schema}}.run_counts_apply() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
	INSERT INTO {{schema}}.run_counts AS c (tenant, status, wait_kind, slot, n)
	SELECT d.tenant, d.status, d.wait_kind, pg_backend_pid() % 64, sum(d.n) FROM (
		SELECT OLD.tenant, OLD.status, OLD.wait_kind, -1 WHERE TG_OP <> 'INSERT' AND OLD.status IN ('queued', 'running', 'interrupted')
		UNION ALL
		SELECT NEW.tenant, NEW.status, NEW.wait_kind, 1 WHERE TG_OP <> 'DELETE' AND NEW.status IN ('queued', 'running', 'interrupted')
	) d (tenant, status, wait_kind, n)
	GROUP BY d.tenant, d.status, d.wait_kind
	ORDER BY d.tenant, d.status, d.wait_kind
	ON CONFLICT (tenant, status, wait_kind, slot) DO UPDATE SET n = c.n + excluded.n;
	RETURN NULL;
END
$$;


--
-- Name: run_write(text, text, timestamp with time zone, text, text, bigint, bigint, text, text, text, text, bigint, bigint, integer[], text[], bigint[], bigint[], bigint[], text[], text[], text[], text[], bigint[], text[], text[], text[], text[], text[], text[], text[], bigint[], timestamp with time zone[], timestamp with time zone[], integer[], integer, text[], text[], text[], text[], text[], timestamp with time zone[], text[], text); Type: FUNCTION; Schema: {{schema}}; Owner: -
--

CREATE FUNCTION {{schema}}.run_write(p_tenant text, p_run text, p_now timestamp with time zone, p_fence_key text, p_fence_holder text, p_fence_epoch bigint, p_run_rev bigint, p_status text, p_checkpoint text, p_meta text, p_append text, p_append_n bigint, p_append_crc bigint, l_ord integer[], l_call text[], l_exp bigint[], l_turn bigint[], l_idx bigint[], l_tool text[], l_effect text[], l_state text[], l_key text[], l_attempt bigint[], l_digest text[], l_args text[], l_result text[], l_error text[], l_approval text[], l_resolution text[], l_holder text[], l_epoch bigint[], l_started timestamp with time zone[], l_committed timestamp with time zone[], l_ev integer[], p_n_plain integer, e_id text[], e_parent text[], e_trace text[], e_span text[], e_type text[], e_time timestamp with time zone[], e_data text[], p_wait_kind text, OUT o_parent text, OUT o_session text, OUT o_agent text, OUT o_digest text, OUT o_meta text, OUT o_deadline timestamp with time zone, OUT o_revision bigint, OUT o_created timestamp with time zone, OUT o_first_seq bigint, OUT o_ledger_created timestamp with time zone[], OUT o_log_len bigint, OUT o_log_seq bigint) RETURNS record
    LANGUAGE plpgsql
    AS $$
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


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: claims; Type: TABLE; Schema: {{schema}}; Owner: -
--

CREATE TABLE {{schema}}.claims (
    tenant text NOT NULL,
    key text NOT NULL,
    holder text NOT NULL,
    epoch bigint NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    heartbeat_at timestamp with time zone NOT NULL
);


--
-- Name: events; Type: TABLE; Schema: {{schema}}; Owner: -
--

CREATE TABLE {{schema}}.events (
    tenant text NOT NULL,
    run_id text NOT NULL,
    seq bigint NOT NULL,
    id text NOT NULL,
    parent_run_id text NOT NULL,
    trace_id text NOT NULL,
    span_id text NOT NULL,
    type text NOT NULL,
    "time" timestamp with time zone NOT NULL,
    data text,
    call_id text,
    turn bigint,
    idx bigint,
    tool text,
    effect text,
    state text,
    idempotency_key text,
    attempt bigint,
    args_digest text,
    args text,
    result text,
    error text,
    approval text,
    resolution text,
    holder text,
    epoch bigint,
    entry_rev bigint,
    entry_created timestamp with time zone,
    entry_updated timestamp with time zone,
    started_at timestamp with time zone,
    committed_at timestamp with time zone
);


--
-- Name: ledger; Type: TABLE; Schema: {{schema}}; Owner: -
--

CREATE TABLE {{schema}}.ledger (
    tenant text NOT NULL,
    run_id text NOT NULL,
    call_id text NOT NULL,
    turn bigint NOT NULL,
    idx bigint NOT NULL,
    tool text NOT NULL,
    effect text NOT NULL,
    state text NOT NULL,
    idempotency_key text NOT NULL,
    attempt bigint NOT NULL,
    args_digest text NOT NULL,
    args text,
    result text,
    error text,
    approval text,
    resolution text,
    holder text NOT NULL,
    epoch bigint NOT NULL,
    revision bigint NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    committed_at timestamp with time zone
);


--
-- Name: once; Type: TABLE; Schema: {{schema}}; Owner: -
--

CREATE TABLE {{schema}}.once (
    tenant text NOT NULL,
    key text NOT NULL,
    value text,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: run_counts; Type: TABLE; Schema: {{schema}}; Owner: -
--

CREATE TABLE {{schema}}.run_counts (
    tenant text NOT NULL,
    status text NOT NULL,
    wait_kind text NOT NULL,
    slot integer NOT NULL,
    n bigint NOT NULL
);


--
-- Name: run_log; Type: TABLE; Schema: {{schema}}; Owner: -
--

CREATE TABLE {{schema}}.run_log (
    tenant text NOT NULL,
    run_id text NOT NULL,
    seq bigint NOT NULL,
    first bigint NOT NULL,
    n bigint NOT NULL,
    crc bigint NOT NULL,
    items text NOT NULL
);


--
-- Name: runs; Type: TABLE; Schema: {{schema}}; Owner: -
--

CREATE TABLE {{schema}}.runs (
    tenant text NOT NULL,
    id text NOT NULL,
    parent_id text NOT NULL,
    session_id text NOT NULL,
    agent_id text NOT NULL,
    agent_digest text NOT NULL,
    status text NOT NULL,
    checkpoint text NOT NULL,
    meta text,
    deadline timestamp with time zone,
    revision bigint NOT NULL,
    event_seq bigint NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    wait_kind text DEFAULT ''::text NOT NULL,
    log_len bigint DEFAULT 0 NOT NULL,
    log_seq bigint DEFAULT 0 NOT NULL
);


--
-- Name: schema_migrations; Type: TABLE; Schema: {{schema}}; Owner: -
--

CREATE TABLE {{schema}}.schema_migrations (
    version bigint NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: session_entries; Type: TABLE; Schema: {{schema}}; Owner: -
--

CREATE TABLE {{schema}}.session_entries (
    tenant text NOT NULL,
    session_id text NOT NULL,
    seq bigint NOT NULL,
    run_id text NOT NULL,
    item text NOT NULL,
    turn integer DEFAULT 0 NOT NULL,
    n integer DEFAULT 1 NOT NULL,
    crc bigint
);


--
-- Name: session_snapshots; Type: TABLE; Schema: {{schema}}; Owner: -
--

CREATE TABLE {{schema}}.session_snapshots (
    tenant text NOT NULL,
    session_id text NOT NULL,
    revision bigint NOT NULL,
    data text NOT NULL
);


--
-- Name: sessions; Type: TABLE; Schema: {{schema}}; Owner: -
--

CREATE TABLE {{schema}}.sessions (
    tenant text NOT NULL,
    session_id text NOT NULL,
    revision bigint NOT NULL
);


--
-- Data for Name: claims; Type: TABLE DATA; Schema: {{schema}}; Owner: -
--

INSERT INTO {{schema}}.claims VALUES ('default', 'run:done', 'vm:26100:20261202T090706Z.3aaf0a7b/f4a5b2285b79.1', 1, '2026-12-02 09:07:06.687167+00', '2026-12-02 09:07:06.666814+00');
INSERT INTO {{schema}}.claims VALUES ('default', 'run:wait', 'vm:26100:20261202T090706Z.3aaf0a7b/f4a5b2285b79.2', 1, '2026-12-02 09:07:06.696254+00', '2026-12-02 09:07:06.68915+00');
INSERT INTO {{schema}}.claims VALUES ('default', 'run:unknown', 'vm:26100:20261202T090706Z.3aaf0a7b/f4a5b2285b79.3', 1, '2026-12-02 09:07:06.703686+00', '2026-12-02 09:07:06.697836+00');


--
-- Data for Name: events; Type: TABLE DATA; Schema: {{schema}}; Owner: -
--

INSERT INTO {{schema}}.events VALUES ('default', 'done', 1, '459b1fbe80fb1a0152457044dac865dc', '', 'f456de79cb55246f7a4a038c33c4c8b9', '11253cadee19e014', 'run.started', '2026-12-02 09:07:06.668969+00', '{"agent_id":"fx","agent_digest":"sha256:bbad10d148116b00ed311ebeb35b3b56387a8cf9f241a30896e55e4258059cc6","model":"scripted","holder":"vm:26100:20261202T090706Z.3aaf0a7b/f4a5b2285b79.1","epoch":1}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'done', 3, 'c970ef3dc3d938582d37c57def0c7ef9', '', 'f456de79cb55246f7a4a038c33c4c8b9', '845495d26e4af541', 'tool.prepared', '2026-12-02 09:07:06.674663+00', '{"call_id":"c1","tool":"look","effect":"read","state":"prepared","idempotency_key":"done:c1","attempt":0,"args":{}}', 'c1', 1, 0, 'look', 'read', 'prepared', 'done:c1', 0, 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a', '{}', NULL, NULL, NULL, NULL, '', 0, 1, '2026-12-02 09:07:06.6747+00', '2026-12-02 09:07:06.6747+00', NULL, NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'done', 4, 'f643da254073d566cc2c35eb8f5a8b2b', '', 'f456de79cb55246f7a4a038c33c4c8b9', '56b41b03de1987a1', 'tool.prepared', '2026-12-02 09:07:06.674664+00', '{"call_id":"c2","tool":"look","effect":"read","state":"prepared","idempotency_key":"done:c2","attempt":0,"args":{}}', 'c2', 1, 1, 'look', 'read', 'prepared', 'done:c2', 0, 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a', '{}', NULL, NULL, NULL, NULL, '', 0, 1, '2026-12-02 09:07:06.6747+00', '2026-12-02 09:07:06.6747+00', NULL, NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'done', 2, '90c58e71e8857630fd0ca996bb6d67d4', '', 'f456de79cb55246f7a4a038c33c4c8b9', '11253cadee19e014', 'model.response', '2026-12-02 09:07:06.67466+00', '{"turn":1,"response_id":"scripted-1","stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5,"requests":1},"items_at":{"from":1,"count":2}}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'done', 5, '584672e90a5f40592ca6995788a5b11d', '', 'f456de79cb55246f7a4a038c33c4c8b9', '56b41b03de1987a1', 'tool.started', '2026-12-02 09:07:06.679438+00', '{"call_id":"c2","tool":"look","effect":"read","state":"started","idempotency_key":"done:c2","attempt":1,"args":{}}', 'c2', 1, 1, 'look', 'read', 'started', 'done:c2', 1, 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a', '{}', NULL, NULL, NULL, NULL, 'vm:26100:20261202T090706Z.3aaf0a7b/f4a5b2285b79.1', 1, 2, '2026-12-02 09:07:06.6747+00', '2026-12-02 09:07:06.679453+00', '2026-12-02 09:07:06.679423+00', NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'done', 6, '2066a38abfab6e236bb82eb23ca39010', '', 'f456de79cb55246f7a4a038c33c4c8b9', '845495d26e4af541', 'tool.started', '2026-12-02 09:07:06.679607+00', '{"call_id":"c1","tool":"look","effect":"read","state":"started","idempotency_key":"done:c1","attempt":1,"args":{}}', 'c1', 1, 0, 'look', 'read', 'started', 'done:c1', 1, 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a', '{}', NULL, NULL, NULL, NULL, 'vm:26100:20261202T090706Z.3aaf0a7b/f4a5b2285b79.1', 1, 2, '2026-12-02 09:07:06.6747+00', '2026-12-02 09:07:06.680651+00', '2026-12-02 09:07:06.679561+00', NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'done', 7, '31337cd738a432a1f7d3fafdc4480e6d', '', 'f456de79cb55246f7a4a038c33c4c8b9', '845495d26e4af541', 'tool.committed', '2026-12-02 09:07:06.681981+00', '{"call_id":"c1","tool":"look","effect":"read","state":"committed","idempotency_key":"done:c1","attempt":1,"args":{}}', 'c1', 1, 0, 'look', 'read', 'committed', 'done:c1', 1, 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a', '{}', '{"content":"seen","data":"seen"}', NULL, NULL, NULL, 'vm:26100:20261202T090706Z.3aaf0a7b/f4a5b2285b79.1', 1, 3, '2026-12-02 09:07:06.6747+00', '2026-12-02 09:07:06.681987+00', '2026-12-02 09:07:06.679561+00', '2026-12-02 09:07:06.681976+00');
INSERT INTO {{schema}}.events VALUES ('default', 'done', 8, '68db686587d55241dd9edb51c093ca86', '', 'f456de79cb55246f7a4a038c33c4c8b9', '56b41b03de1987a1', 'tool.committed', '2026-12-02 09:07:06.680719+00', '{"call_id":"c2","tool":"look","effect":"read","state":"committed","idempotency_key":"done:c2","attempt":1,"args":{}}', 'c2', 1, 1, 'look', 'read', 'committed', 'done:c2', 1, 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a', '{}', '{"content":"seen","data":"seen"}', NULL, NULL, NULL, 'vm:26100:20261202T090706Z.3aaf0a7b/f4a5b2285b79.1', 1, 3, '2026-12-02 09:07:06.6747+00', '2026-12-02 09:07:06.682894+00', '2026-12-02 09:07:06.679423+00', '2026-12-02 09:07:06.680714+00');
INSERT INTO {{schema}}.events VALUES ('default', 'done', 9, 'efc8ce4a9de54de122b761c62b0d702c', '', 'f456de79cb55246f7a4a038c33c4c8b9', '11253cadee19e014', 'model.response', '2026-12-02 09:07:06.684737+00', '{"turn":2,"response_id":"scripted-2","stop_reason":"end_turn","usage":{"input_tokens":50,"output_tokens":7,"requests":1},"items_at":{"from":5,"count":1}}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'done', 10, '3e30fc9152ca10db39c0ad6e39aeff4a', '', 'f456de79cb55246f7a4a038c33c4c8b9', '11253cadee19e014', 'run.completed', '2026-12-02 09:07:06.684768+00', '{"status":"completed","usage":{"input_tokens":60,"output_tokens":12,"requests":2}}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'wait', 1, 'd545760af13b19a04eb0edc5c6e05c11', '', '6aebce97b9b0f75dc14d27cfa82c09df', '3d241f3ec83dbd0f', 'run.started', '2026-12-02 09:07:06.68991+00', '{"agent_id":"fx-approve","agent_digest":"sha256:f726ba7c0506fcad92aae51c2560334ee2b05652757cb5a3e9a2e60d3b027604","model":"scripted","holder":"vm:26100:20261202T090706Z.3aaf0a7b/f4a5b2285b79.2","epoch":1}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'wait', 3, '4776ec81604afbaa8f682fc71037bfba', '', '6aebce97b9b0f75dc14d27cfa82c09df', 'a1882022299ccf60', 'tool.prepared', '2026-12-02 09:07:06.69067+00', '{"call_id":"c1","tool":"look","effect":"read","state":"prepared","idempotency_key":"wait:c1","attempt":0,"args":{}}', 'c1', 1, 0, 'look', 'read', 'prepared', 'wait:c1', 0, 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a', '{}', NULL, NULL, NULL, NULL, '', 0, 1, '2026-12-02 09:07:06.690702+00', '2026-12-02 09:07:06.690702+00', NULL, NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'wait', 4, '7ad2b7e016fac6ef805e117fd632c37c', '', '6aebce97b9b0f75dc14d27cfa82c09df', '918d37f19760d7fa', 'tool.prepared', '2026-12-02 09:07:06.690672+00', '{"call_id":"c2","tool":"pay","effect":"side-effect","state":"prepared","idempotency_key":"wait:c2","attempt":0,"args":{"to":"ada","amount":5}}', 'c2', 1, 1, 'pay', 'side-effect', 'prepared', 'wait:c2', 0, 'sha256:84845473978f7441c70b27a5aa4fcb5f0b5c77b313e6a818b1b19853c73c92de', '{"to":"ada","amount":5}', NULL, NULL, NULL, NULL, '', 0, 1, '2026-12-02 09:07:06.690702+00', '2026-12-02 09:07:06.690702+00', NULL, NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'wait', 2, '8f63d47155c56573d3dc752c36579d53', '', '6aebce97b9b0f75dc14d27cfa82c09df', '3d241f3ec83dbd0f', 'model.response', '2026-12-02 09:07:06.690667+00', '{"turn":1,"response_id":"scripted-1","stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5,"requests":1},"items_at":{"from":1,"count":2}}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'wait', 5, '553a4742701ad468df8c1508e5c3d91b', '', '6aebce97b9b0f75dc14d27cfa82c09df', 'a1882022299ccf60', 'tool.started', '2026-12-02 09:07:06.691908+00', '{"call_id":"c1","tool":"look","effect":"read","state":"started","idempotency_key":"wait:c1","attempt":1,"args":{}}', 'c1', 1, 0, 'look', 'read', 'started', 'wait:c1', 1, 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a', '{}', NULL, NULL, NULL, NULL, 'vm:26100:20261202T090706Z.3aaf0a7b/f4a5b2285b79.2', 1, 2, '2026-12-02 09:07:06.690702+00', '2026-12-02 09:07:06.691915+00', '2026-12-02 09:07:06.691902+00', NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'wait', 6, '19998695bbd92e74b53a835fed0adc38', '', '6aebce97b9b0f75dc14d27cfa82c09df', 'a1882022299ccf60', 'tool.committed', '2026-12-02 09:07:06.692601+00', '{"call_id":"c1","tool":"look","effect":"read","state":"committed","idempotency_key":"wait:c1","attempt":1,"args":{}}', 'c1', 1, 0, 'look', 'read', 'committed', 'wait:c1', 1, 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a', '{}', '{"content":"seen","data":"seen"}', NULL, NULL, NULL, 'vm:26100:20261202T090706Z.3aaf0a7b/f4a5b2285b79.2', 1, 3, '2026-12-02 09:07:06.690702+00', '2026-12-02 09:07:06.69264+00', '2026-12-02 09:07:06.691902+00', '2026-12-02 09:07:06.692595+00');
INSERT INTO {{schema}}.events VALUES ('default', 'wait', 7, '5481489b500d9c3e63a3724ef9267cf9', '', '6aebce97b9b0f75dc14d27cfa82c09df', '918d37f19760d7fa', 'tool.awaiting_approval', '2026-12-02 09:07:06.693282+00', '{"call_id":"c2","tool":"pay","effect":"side-effect","state":"awaiting_approval","idempotency_key":"wait:c2","attempt":0,"args":{"to":"ada","amount":5}}', 'c2', 1, 1, 'pay', 'side-effect', 'awaiting_approval', 'wait:c2', 0, 'sha256:84845473978f7441c70b27a5aa4fcb5f0b5c77b313e6a818b1b19853c73c92de', '{"to":"ada","amount":5}', NULL, NULL, NULL, NULL, '', 0, 2, '2026-12-02 09:07:06.690702+00', '2026-12-02 09:07:06.693311+00', NULL, NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'wait', 8, 'b79bfe60e3108a664ccd880684580009', '', '6aebce97b9b0f75dc14d27cfa82c09df', '3d241f3ec83dbd0f', 'run.interrupted', '2026-12-02 09:07:06.694464+00', '{"status":"interrupted","usage":{"input_tokens":10,"output_tokens":5,"requests":1},"interruptions":[{"kind":"approval","call_id":"c2","tool":"pay","effect":"side-effect","state":"awaiting_approval","idempotency_key":"wait:c2","args":{"to":"ada","amount":5},"args_digest":"sha256:84845473978f7441c70b27a5aa4fcb5f0b5c77b313e6a818b1b19853c73c92de","attempt":0,"reason":"the call needs approval before it starts"}]}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'unknown', 1, '186075cee4ebac26bb6e79b0042fc4ec', '', 'dc86d17cec3468f27802a244848c01b6', '4c5b832482cb7cfb', 'run.started', '2026-12-02 09:07:06.69812+00', '{"agent_id":"fx","agent_digest":"sha256:bbad10d148116b00ed311ebeb35b3b56387a8cf9f241a30896e55e4258059cc6","model":"scripted","holder":"vm:26100:20261202T090706Z.3aaf0a7b/f4a5b2285b79.3","epoch":1}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'unknown', 3, 'e25b264c466a3352fdfb4f110866af42', '', 'dc86d17cec3468f27802a244848c01b6', 'd3e843c28712dbbb', 'tool.prepared', '2026-12-02 09:07:06.698529+00', '{"call_id":"c1","tool":"pay","effect":"side-effect","state":"prepared","idempotency_key":"unknown:c1","attempt":0,"args":{"to":"bob","amount":7}}', 'c1', 1, 0, 'pay', 'side-effect', 'prepared', 'unknown:c1', 0, 'sha256:ae5103d545f9b390f7ab2d3fad4a9b8625d663562aada0933f88f55f2c14d0c3', '{"to":"bob","amount":7}', NULL, NULL, NULL, NULL, '', 0, 1, '2026-12-02 09:07:06.698565+00', '2026-12-02 09:07:06.698565+00', NULL, NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'unknown', 4, '392c10575dc2b020f51b3e4a2226a345', '', 'dc86d17cec3468f27802a244848c01b6', '86e28f100abe4c92', 'tool.prepared', '2026-12-02 09:07:06.698531+00', '{"call_id":"c2","tool":"pay","effect":"side-effect","state":"prepared","idempotency_key":"unknown:c2","attempt":0,"args":{"to":"eve","amount":9}}', 'c2', 1, 1, 'pay', 'side-effect', 'prepared', 'unknown:c2', 0, 'sha256:195ab3111a0810730cdb266e8fc8dab172372fcec7aee3b3b0c864ee0accba5b', '{"to":"eve","amount":9}', NULL, NULL, NULL, NULL, '', 0, 1, '2026-12-02 09:07:06.698565+00', '2026-12-02 09:07:06.698565+00', NULL, NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'unknown', 2, 'bae66a6cfdebb842566717c4c21bcd4c', '', 'dc86d17cec3468f27802a244848c01b6', '4c5b832482cb7cfb', 'model.response', '2026-12-02 09:07:06.698526+00', '{"turn":1,"response_id":"scripted-1","stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5,"requests":1},"items_at":{"from":1,"count":2}}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'unknown', 5, '0fdfb581a43f29237d5f8f5d05a55cb3', '', 'dc86d17cec3468f27802a244848c01b6', 'd3e843c28712dbbb', 'tool.started', '2026-12-02 09:07:06.699467+00', '{"call_id":"c1","tool":"pay","effect":"side-effect","state":"started","idempotency_key":"unknown:c1","attempt":1,"args":{"to":"bob","amount":7}}', 'c1', 1, 0, 'pay', 'side-effect', 'started', 'unknown:c1', 1, 'sha256:ae5103d545f9b390f7ab2d3fad4a9b8625d663562aada0933f88f55f2c14d0c3', '{"to":"bob","amount":7}', NULL, NULL, NULL, NULL, 'vm:26100:20261202T090706Z.3aaf0a7b/f4a5b2285b79.3', 1, 2, '2026-12-02 09:07:06.698565+00', '2026-12-02 09:07:06.699521+00', '2026-12-02 09:07:06.69946+00', NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'unknown', 6, 'bf527898037b99de3ce086bfa9f19364', '', 'dc86d17cec3468f27802a244848c01b6', 'd3e843c28712dbbb', 'tool.committed', '2026-12-02 09:07:06.700143+00', '{"call_id":"c1","tool":"pay","effect":"side-effect","state":"committed","idempotency_key":"unknown:c1","attempt":1,"args":{"to":"bob","amount":7}}', 'c1', 1, 0, 'pay', 'side-effect', 'committed', 'unknown:c1', 1, 'sha256:ae5103d545f9b390f7ab2d3fad4a9b8625d663562aada0933f88f55f2c14d0c3', '{"to":"bob","amount":7}', '{"content":"paid","data":"paid"}', NULL, NULL, NULL, 'vm:26100:20261202T090706Z.3aaf0a7b/f4a5b2285b79.3', 1, 3, '2026-12-02 09:07:06.698565+00', '2026-12-02 09:07:06.700149+00', '2026-12-02 09:07:06.69946+00', '2026-12-02 09:07:06.70014+00');
INSERT INTO {{schema}}.events VALUES ('default', 'unknown', 7, '2971af86c012510ecf2ab5ff08b2e814', '', 'dc86d17cec3468f27802a244848c01b6', '86e28f100abe4c92', 'tool.started', '2026-12-02 09:07:06.700565+00', '{"call_id":"c2","tool":"pay","effect":"side-effect","state":"started","idempotency_key":"unknown:c2","attempt":1,"args":{"to":"eve","amount":9}}', 'c2', 1, 1, 'pay', 'side-effect', 'started', 'unknown:c2', 1, 'sha256:195ab3111a0810730cdb266e8fc8dab172372fcec7aee3b3b0c864ee0accba5b', '{"to":"eve","amount":9}', NULL, NULL, NULL, NULL, 'vm:26100:20261202T090706Z.3aaf0a7b/f4a5b2285b79.3', 1, 2, '2026-12-02 09:07:06.698565+00', '2026-12-02 09:07:06.700603+00', '2026-12-02 09:07:06.700561+00', NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'unknown', 8, '56cf945aa3bb956f440cc7ab504e01d1', '', 'dc86d17cec3468f27802a244848c01b6', '86e28f100abe4c92', 'tool.unknown', '2026-12-02 09:07:06.701174+00', '{"call_id":"c2","tool":"pay","effect":"side-effect","state":"unknown","idempotency_key":"unknown:c2","attempt":1,"args":{"to":"eve","amount":9}}', 'c2', 1, 1, 'pay', 'side-effect', 'unknown', 'unknown:c2', 1, 'sha256:195ab3111a0810730cdb266e8fc8dab172372fcec7aee3b3b0c864ee0accba5b', '{"to":"eve","amount":9}', NULL, '{"kind":"execution","tool":"pay","started":true,"outcome_unknown":true,"message":"connection reset: tool: outcome unknown"}', NULL, NULL, 'vm:26100:20261202T090706Z.3aaf0a7b/f4a5b2285b79.3', 1, 3, '2026-12-02 09:07:06.698565+00', '2026-12-02 09:07:06.701179+00', '2026-12-02 09:07:06.700561+00', NULL);
INSERT INTO {{schema}}.events VALUES ('default', 'unknown', 9, '5bae6090039cf19dbabc11f2f18360c0', '', 'dc86d17cec3468f27802a244848c01b6', '4c5b832482cb7cfb', 'run.interrupted', '2026-12-02 09:07:06.702314+00', '{"status":"interrupted","usage":{"input_tokens":10,"output_tokens":5,"requests":1},"interruptions":[{"kind":"reconciliation","call_id":"c2","tool":"pay","effect":"side-effect","state":"unknown","idempotency_key":"unknown:c2","args":{"to":"eve","amount":9},"args_digest":"sha256:195ab3111a0810730cdb266e8fc8dab172372fcec7aee3b3b0c864ee0accba5b","attempt":1,"started_at":"2026-12-02T09:07:06.700561Z","holder":"vm:26100:20261202T090706Z.3aaf0a7b/f4a5b2285b79.3","epoch":1,"reason":"the side effect may or may not have happened; it is never run again without a decision (tool pay: execution: connection reset: tool: outcome unknown (outcome unknown))","last_error":{"kind":"execution","tool":"pay","started":true,"outcome_unknown":true,"message":"connection reset: tool: outcome unknown"}}]}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);


--
-- Data for Name: ledger; Type: TABLE DATA; Schema: {{schema}}; Owner: -
--



--
-- Data for Name: once; Type: TABLE DATA; Schema: {{schema}}; Owner: -
--



--
-- Data for Name: run_counts; Type: TABLE DATA; Schema: {{schema}}; Owner: -
--

INSERT INTO {{schema}}.run_counts VALUES ('default', 'interrupted', 'approval', 57, 1);
INSERT INTO {{schema}}.run_counts VALUES ('default', 'interrupted', 'reconciliation', 57, 1);
INSERT INTO {{schema}}.run_counts VALUES ('default', 'running', '', 57, 0);


--
-- Data for Name: run_log; Type: TABLE DATA; Schema: {{schema}}; Owner: -
--

INSERT INTO {{schema}}.run_log VALUES ('default', 'done', 1, 0, 1, 57989884, '{"type":"text","role":"user","text":"hello"}');
INSERT INTO {{schema}}.run_log VALUES ('default', 'done', 2, 1, 2, 796405409, '{"type":"tool_call","role":"assistant","tool_call":{"id":"c1","name":"look","arguments":{}}}{"type":"tool_call","role":"assistant","tool_call":{"id":"c2","name":"look","arguments":{}}}');
INSERT INTO {{schema}}.run_log VALUES ('default', 'done', 3, 3, 3, 2996905635, '{"type":"tool_result","role":"tool","tool_result":{"call_id":"c1","content":"seen","data":"seen"}}{"type":"tool_result","role":"tool","tool_result":{"call_id":"c2","content":"seen","data":"seen"}}{"type":"text","role":"assistant","text":"all done"}');
INSERT INTO {{schema}}.run_log VALUES ('default', 'wait', 1, 0, 1, 3318660797, '{"type":"text","role":"user","text":"pay ada"}');
INSERT INTO {{schema}}.run_log VALUES ('default', 'wait', 2, 1, 2, 1606021293, '{"type":"tool_call","role":"assistant","tool_call":{"id":"c1","name":"look","arguments":{}}}{"type":"tool_call","role":"assistant","tool_call":{"id":"c2","name":"pay","arguments":{"to":"ada","amount":5}}}');
INSERT INTO {{schema}}.run_log VALUES ('default', 'unknown', 1, 0, 1, 4048741054, '{"type":"text","role":"user","text":"pay bob and eve"}');
INSERT INTO {{schema}}.run_log VALUES ('default', 'unknown', 2, 1, 2, 1539489912, '{"type":"tool_call","role":"assistant","tool_call":{"id":"c1","name":"pay","arguments":{"to":"bob","amount":7}}}{"type":"tool_call","role":"assistant","tool_call":{"id":"c2","name":"pay","arguments":{"to":"eve","amount":9}}}');


--
-- Data for Name: runs; Type: TABLE DATA; Schema: {{schema}}; Owner: -
--

INSERT INTO {{schema}}.runs VALUES ('default', 'done', '', '', 'fx', 'sha256:bbad10d148116b00ed311ebeb35b3b56387a8cf9f241a30896e55e4258059cc6', 'completed', '{"v":1,"turn":2,"usage":{"input_tokens":60,"output_tokens":12,"requests":2},"output":[{"type":"text","role":"assistant","text":"all done"}],"trace_id":"f456de79cb55246f7a4a038c33c4c8b9","policy_version":"pv-1635e12c67dbed06","agent":{"digest":"sha256:bbad10d148116b00ed311ebeb35b3b56387a8cf9f241a30896e55e4258059cc6","provider":"scripted","model":"scripted","instructions":"","tools":{"look":{"effect":"read","input":"sha256:51da7ceec637","output":"sha256:00404e686415","description":"sha256:a0de5719f595"},"pay":{"effect":"side-effect","input":"sha256:1e51f373a5a2","output":"sha256:00404e686415","description":"sha256:723afa394dae"}},"policy":{"version":"pv-1635e12c67dbed06"},"recovery":{"RerunReads":false,"RerunIdempotentWrites":false},"limits":{"MaxTurns":16,"RunTimeout":0,"ModelTimeout":600000000000,"ToolTimeout":300000000000,"ReadParallelism":4,"MaxProviderInterruptions":5,"MaxToolOutput":1048576,"MaxMalformedCalls":3}}}', NULL, NULL, 3, 10, '2026-12-02 09:07:06.662017+00', '2026-12-02 09:07:06.684858+00', '', 6, 3);
INSERT INTO {{schema}}.runs VALUES ('default', 'wait', '', '', 'fx-approve', 'sha256:f726ba7c0506fcad92aae51c2560334ee2b05652757cb5a3e9a2e60d3b027604', 'interrupted', '{"v":1,"turn":1,"pending":["c1","c2"],"usage":{"input_tokens":10,"output_tokens":5,"requests":1},"interruptions":[{"kind":"approval","call_id":"c2","tool":"pay","effect":"side-effect","state":"awaiting_approval","idempotency_key":"wait:c2","args":{"to":"ada","amount":5},"args_digest":"sha256:84845473978f7441c70b27a5aa4fcb5f0b5c77b313e6a818b1b19853c73c92de","attempt":0,"reason":"the call needs approval before it starts"}],"trace_id":"6aebce97b9b0f75dc14d27cfa82c09df","policy_version":"pv-bf022b89d9ff99ce","agent":{"digest":"sha256:f726ba7c0506fcad92aae51c2560334ee2b05652757cb5a3e9a2e60d3b027604","provider":"scripted","model":"scripted","instructions":"","tools":{"look":{"effect":"read","input":"sha256:51da7ceec637","output":"sha256:00404e686415","description":"sha256:a0de5719f595"},"pay":{"effect":"side-effect","input":"sha256:1e51f373a5a2","output":"sha256:00404e686415","description":"sha256:723afa394dae"}},"policy":{"version":"pv-bf022b89d9ff99ce","effects":["side-effect"]},"recovery":{"RerunReads":false,"RerunIdempotentWrites":false},"limits":{"MaxTurns":16,"RunTimeout":0,"ModelTimeout":600000000000,"ToolTimeout":300000000000,"ReadParallelism":4,"MaxProviderInterruptions":5,"MaxToolOutput":1048576,"MaxMalformedCalls":3}}}', NULL, NULL, 3, 8, '2026-12-02 09:07:06.688338+00', '2026-12-02 09:07:06.694515+00', 'approval', 3, 2);
INSERT INTO {{schema}}.runs VALUES ('default', 'unknown', '', '', 'fx', 'sha256:bbad10d148116b00ed311ebeb35b3b56387a8cf9f241a30896e55e4258059cc6', 'interrupted', '{"v":1,"turn":1,"pending":["c1","c2"],"usage":{"input_tokens":10,"output_tokens":5,"requests":1},"interruptions":[{"kind":"reconciliation","call_id":"c2","tool":"pay","effect":"side-effect","state":"unknown","idempotency_key":"unknown:c2","args":{"to":"eve","amount":9},"args_digest":"sha256:195ab3111a0810730cdb266e8fc8dab172372fcec7aee3b3b0c864ee0accba5b","attempt":1,"started_at":"2026-12-02T09:07:06.700561Z","holder":"vm:26100:20261202T090706Z.3aaf0a7b/f4a5b2285b79.3","epoch":1,"reason":"the side effect may or may not have happened; it is never run again without a decision (tool pay: execution: connection reset: tool: outcome unknown (outcome unknown))","last_error":{"kind":"execution","tool":"pay","started":true,"outcome_unknown":true,"message":"connection reset: tool: outcome unknown"}}],"trace_id":"dc86d17cec3468f27802a244848c01b6","policy_version":"pv-1635e12c67dbed06","agent":{"digest":"sha256:bbad10d148116b00ed311ebeb35b3b56387a8cf9f241a30896e55e4258059cc6","provider":"scripted","model":"scripted","instructions":"","tools":{"look":{"effect":"read","input":"sha256:51da7ceec637","output":"sha256:00404e686415","description":"sha256:a0de5719f595"},"pay":{"effect":"side-effect","input":"sha256:1e51f373a5a2","output":"sha256:00404e686415","description":"sha256:723afa394dae"}},"policy":{"version":"pv-1635e12c67dbed06"},"recovery":{"RerunReads":false,"RerunIdempotentWrites":false},"limits":{"MaxTurns":16,"RunTimeout":0,"ModelTimeout":600000000000,"ToolTimeout":300000000000,"ReadParallelism":4,"MaxProviderInterruptions":5,"MaxToolOutput":1048576,"MaxMalformedCalls":3}}}', NULL, NULL, 3, 9, '2026-12-02 09:07:06.696998+00', '2026-12-02 09:07:06.702433+00', 'reconciliation', 3, 2);


--
-- Data for Name: schema_migrations; Type: TABLE DATA; Schema: {{schema}}; Owner: -
--

INSERT INTO {{schema}}.schema_migrations VALUES (1, '001_init', '2026-12-02 09:07:06.592678+00');
INSERT INTO {{schema}}.schema_migrations VALUES (2, '002_run_write', '2026-12-02 09:07:06.592678+00');
INSERT INTO {{schema}}.schema_migrations VALUES (3, '003_session_turn', '2026-12-02 09:07:06.592678+00');
INSERT INTO {{schema}}.schema_migrations VALUES (4, '004_session_chunks', '2026-12-02 09:07:06.592678+00');
INSERT INTO {{schema}}.schema_migrations VALUES (5, '005_session_checksum', '2026-12-02 09:07:06.592678+00');
INSERT INTO {{schema}}.schema_migrations VALUES (6, '006_scale', '2026-12-02 09:07:06.592678+00');
INSERT INTO {{schema}}.schema_migrations VALUES (7, '007_run_journal', '2026-12-02 09:07:06.592678+00');
INSERT INTO {{schema}}.schema_migrations VALUES (8, '008_scale_counts', '2026-12-02 09:07:06.592678+00');
INSERT INTO {{schema}}.schema_migrations VALUES (9, '009_run_counts', '2026-12-02 09:07:06.592678+00');
INSERT INTO {{schema}}.schema_migrations VALUES (10, '010_run_counts_slots', '2026-12-02 09:07:06.592678+00');
INSERT INTO {{schema}}.schema_migrations VALUES (11, '011_claims_host', '2026-12-02 09:07:06.592678+00');
INSERT INTO {{schema}}.schema_migrations VALUES (12, '012_claims_owned', '2026-12-02 09:07:06.592678+00');


--
-- Data for Name: session_entries; Type: TABLE DATA; Schema: {{schema}}; Owner: -
--



--
-- Data for Name: session_snapshots; Type: TABLE DATA; Schema: {{schema}}; Owner: -
--



--
-- Data for Name: sessions; Type: TABLE DATA; Schema: {{schema}}; Owner: -
--



--
-- Name: claims claims_pkey; Type: CONSTRAINT; Schema: {{schema}}; Owner: -
--

ALTER TABLE ONLY {{schema}}.claims
    ADD CONSTRAINT claims_pkey PRIMARY KEY (tenant, key);


--
-- Name: events events_pkey; Type: CONSTRAINT; Schema: {{schema}}; Owner: -
--

ALTER TABLE ONLY {{schema}}.events
    ADD CONSTRAINT events_pkey PRIMARY KEY (tenant, run_id, seq);


--
-- Name: ledger ledger_pkey; Type: CONSTRAINT; Schema: {{schema}}; Owner: -
--

ALTER TABLE ONLY {{schema}}.ledger
    ADD CONSTRAINT ledger_pkey PRIMARY KEY (tenant, run_id, call_id);


--
-- Name: once once_pkey; Type: CONSTRAINT; Schema: {{schema}}; Owner: -
--

ALTER TABLE ONLY {{schema}}.once
    ADD CONSTRAINT once_pkey PRIMARY KEY (tenant, key);


--
-- Name: run_counts run_counts_pkey; Type: CONSTRAINT; Schema: {{schema}}; Owner: -
--

ALTER TABLE ONLY {{schema}}.run_counts
    ADD CONSTRAINT run_counts_pkey PRIMARY KEY (tenant, status, wait_kind, slot);


--
-- Name: run_log run_log_pkey; Type: CONSTRAINT; Schema: {{schema}}; Owner: -
--

ALTER TABLE ONLY {{schema}}.run_log
    ADD CONSTRAINT run_log_pkey PRIMARY KEY (tenant, run_id, seq);


--
-- Name: runs runs_pkey; Type: CONSTRAINT; Schema: {{schema}}; Owner: -
--

ALTER TABLE ONLY {{schema}}.runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (tenant, id);


--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: {{schema}}; Owner: -
--

ALTER TABLE ONLY {{schema}}.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);


--
-- Name: session_entries session_entries_pkey; Type: CONSTRAINT; Schema: {{schema}}; Owner: -
--

ALTER TABLE ONLY {{schema}}.session_entries
    ADD CONSTRAINT session_entries_pkey PRIMARY KEY (tenant, session_id, seq);


--
-- Name: session_snapshots session_snapshots_pkey; Type: CONSTRAINT; Schema: {{schema}}; Owner: -
--

ALTER TABLE ONLY {{schema}}.session_snapshots
    ADD CONSTRAINT session_snapshots_pkey PRIMARY KEY (tenant, session_id, revision);


--
-- Name: sessions sessions_pkey; Type: CONSTRAINT; Schema: {{schema}}; Owner: -
--

ALTER TABLE ONLY {{schema}}.sessions
    ADD CONSTRAINT sessions_pkey PRIMARY KEY (tenant, session_id);


--
-- Name: claims_host; Type: INDEX; Schema: {{schema}}; Owner: -
--

CREATE INDEX claims_host ON {{schema}}.claims USING btree (tenant, substr(holder, 1, strpos(holder, ':'::text)), expires_at);


--
-- Name: claims_live; Type: INDEX; Schema: {{schema}}; Owner: -
--

CREATE INDEX claims_live ON {{schema}}.claims USING btree (tenant, expires_at);


--
-- Name: claims_owned; Type: INDEX; Schema: {{schema}}; Owner: -
--

CREATE INDEX claims_owned ON {{schema}}.claims USING btree (tenant, key COLLATE "C") WHERE ((key ~~ 'children:%'::text) OR (key ~~ 'cancel:%'::text));


--
-- Name: ledger_by_order; Type: INDEX; Schema: {{schema}}; Owner: -
--

CREATE INDEX ledger_by_order ON {{schema}}.ledger USING btree (tenant, run_id, turn, idx, call_id);


--
-- Name: runs_active; Type: INDEX; Schema: {{schema}}; Owner: -
--

CREATE INDEX runs_active ON {{schema}}.runs USING btree (tenant, created_at, id) WHERE (status = ANY (ARRAY['queued'::text, 'running'::text]));


--
-- Name: runs_by_created; Type: INDEX; Schema: {{schema}}; Owner: -
--

CREATE INDEX runs_by_created ON {{schema}}.runs USING btree (tenant, created_at DESC, id DESC);


--
-- Name: runs_by_parent; Type: INDEX; Schema: {{schema}}; Owner: -
--

CREATE INDEX runs_by_parent ON {{schema}}.runs USING btree (tenant, parent_id, created_at DESC, id DESC) WHERE (parent_id <> ''::text);


--
-- Name: runs_by_session; Type: INDEX; Schema: {{schema}}; Owner: -
--

CREATE INDEX runs_by_session ON {{schema}}.runs USING btree (tenant, session_id, status, updated_at) WHERE (session_id <> ''::text);


--
-- Name: runs_by_status; Type: INDEX; Schema: {{schema}}; Owner: -
--

CREATE INDEX runs_by_status ON {{schema}}.runs USING btree (tenant, status, created_at DESC, id DESC);


--
-- Name: runs_finished; Type: INDEX; Schema: {{schema}}; Owner: -
--

CREATE INDEX runs_finished ON {{schema}}.runs USING btree (tenant, updated_at, id) WHERE (status = ANY (ARRAY['completed'::text, 'failed'::text, 'cancelled'::text]));


--
-- Name: runs_waiting; Type: INDEX; Schema: {{schema}}; Owner: -
--

CREATE INDEX runs_waiting ON {{schema}}.runs USING btree (tenant, updated_at, id) INCLUDE (status, wait_kind) WHERE (status = ANY (ARRAY['interrupted'::text, 'running'::text]));


--
-- Name: runs run_counts_delete; Type: TRIGGER; Schema: {{schema}}; Owner: -
--

CREATE CONSTRAINT TRIGGER run_counts_delete AFTER DELETE ON {{schema}}.runs DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN ((old.status = ANY (ARRAY['queued'::text, 'running'::text, 'interrupted'::text]))) EXECUTE FUNCTION {{schema}}.run_counts_apply();


--
-- Name: runs run_counts_insert; Type: TRIGGER; Schema: {{schema}}; Owner: -
--

CREATE CONSTRAINT TRIGGER run_counts_insert AFTER INSERT ON {{schema}}.runs DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN ((new.status = ANY (ARRAY['queued'::text, 'running'::text, 'interrupted'::text]))) EXECUTE FUNCTION {{schema}}.run_counts_apply();


--
-- Name: runs run_counts_update; Type: TRIGGER; Schema: {{schema}}; Owner: -
--

CREATE CONSTRAINT TRIGGER run_counts_update AFTER UPDATE OF status, wait_kind ON {{schema}}.runs DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN ((((old.status IS DISTINCT FROM new.status) OR (old.wait_kind IS DISTINCT FROM new.wait_kind)) AND ((old.status = ANY (ARRAY['queued'::text, 'running'::text, 'interrupted'::text])) OR (new.status = ANY (ARRAY['queued'::text, 'running'::text, 'interrupted'::text]))))) EXECUTE FUNCTION {{schema}}.run_counts_apply();


--
-- PostgreSQL database dump complete
--


