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
-- Name: run_write(text, text, timestamp with time zone, text, text, bigint, bigint, text, text, text, integer[], text[], bigint[], bigint[], bigint[], text[], text[], text[], text[], bigint[], text[], text[], text[], text[], text[], text[], text[], bigint[], timestamp with time zone[], timestamp with time zone[], text[], text[], text[], text[], text[], timestamp with time zone[], text[]); Type: FUNCTION; Schema: {{schema}}; Owner: -
--

CREATE FUNCTION {{schema}}.run_write(p_tenant text, p_run text, p_now timestamp with time zone, p_fence_key text, p_fence_holder text, p_fence_epoch bigint, p_run_rev bigint, p_status text, p_checkpoint text, p_meta text, l_ord integer[], l_call text[], l_exp bigint[], l_turn bigint[], l_idx bigint[], l_tool text[], l_effect text[], l_state text[], l_key text[], l_attempt bigint[], l_digest text[], l_args text[], l_result text[], l_error text[], l_approval text[], l_resolution text[], l_holder text[], l_epoch bigint[], l_started timestamp with time zone[], l_committed timestamp with time zone[], e_id text[], e_parent text[], e_trace text[], e_span text[], e_type text[], e_time timestamp with time zone[], e_data text[], OUT o_parent text, OUT o_session text, OUT o_agent text, OUT o_digest text, OUT o_meta text, OUT o_deadline timestamp with time zone, OUT o_revision bigint, OUT o_created timestamp with time zone, OUT o_first_seq bigint, OUT o_ledger_created timestamp with time zone[]) RETURNS record
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
		UPDATE {{schema}}.runs SET status = p_status, checkpoint = p_checkpoint, meta = coalesce(p_meta, meta),
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
    data text
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
    updated_at timestamp with time zone NOT NULL
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

INSERT INTO {{schema}}.claims VALUES ('default', 'run:done', 'vm:19640:20261202T000237Z.895938dc/5f6f3d981f77.1', 1, '2026-12-02 00:02:38.046755+00', '2026-12-02 00:02:37.938419+00');
INSERT INTO {{schema}}.claims VALUES ('default', 'run:wait', 'vm:19640:20261202T000237Z.895938dc/5f6f3d981f77.2', 1, '2026-12-02 00:02:38.083455+00', '2026-12-02 00:02:38.052781+00');
INSERT INTO {{schema}}.claims VALUES ('default', 'run:unknown', 'vm:19640:20261202T000237Z.895938dc/5f6f3d981f77.3', 1, '2026-12-02 00:02:38.126927+00', '2026-12-02 00:02:38.09273+00');
INSERT INTO {{schema}}.claims VALUES ('default', 'run:sess-1', 'vm:19640:20261202T000237Z.895938dc/5f6f3d981f77.4', 1, '2026-12-02 00:02:38.15634+00', '2026-12-02 00:02:38.140892+00');
INSERT INTO {{schema}}.claims VALUES ('default', 'session:s1', 'vm:19640:20261202T000237Z.895938dc/5f6f3d981f77.5', 1, '2026-12-02 00:02:38.156993+00', '2026-12-02 00:02:38.128124+00');


--
-- Data for Name: events; Type: TABLE DATA; Schema: {{schema}}; Owner: -
--

INSERT INTO {{schema}}.events VALUES ('default', 'done', 1, '83983446348015723159456f0da48fd0', '', '7924e31f953587f80d0002fc187dd28c', '11253cadee19e014', 'run.started', '2026-12-02 00:02:37.943801+00', '{"agent_id":"fx","agent_digest":"sha256:bbad10d148116b00ed311ebeb35b3b56387a8cf9f241a30896e55e4258059cc6","model":"scripted","holder":"vm:19640:20261202T000237Z.895938dc/5f6f3d981f77.1","epoch":1}');
INSERT INTO {{schema}}.events VALUES ('default', 'done', 2, '1a85f94cb83d6f4ebcf5f4c55d104164', '', '7924e31f953587f80d0002fc187dd28c', '11253cadee19e014', 'model.response', '2026-12-02 00:02:37.998116+00', '{"turn":1,"response_id":"scripted-1","stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5,"requests":1},"items":[{"type":"tool_call","role":"assistant","tool_call":{"id":"c1","name":"look","arguments":{}}}]}');
INSERT INTO {{schema}}.events VALUES ('default', 'done', 3, 'da541ca3e62cdc8807f6426828469ecd', '', '7924e31f953587f80d0002fc187dd28c', '845495d26e4af541', 'tool.prepared', '2026-12-02 00:02:37.998203+00', '{"call_id":"c1","tool":"look","effect":"read","state":"prepared","idempotency_key":"done:c1","attempt":0,"args":{}}');
INSERT INTO {{schema}}.events VALUES ('default', 'done', 4, '3eab1b2ec3d77de1fe2d39b139176538', '', '7924e31f953587f80d0002fc187dd28c', '845495d26e4af541', 'tool.started', '2026-12-02 00:02:38.0076+00', '{"call_id":"c1","tool":"look","effect":"read","state":"started","idempotency_key":"done:c1","attempt":1,"args":{}}');
INSERT INTO {{schema}}.events VALUES ('default', 'done', 5, '122c080859b6db206dd14c8e553a6adf', '', '7924e31f953587f80d0002fc187dd28c', '845495d26e4af541', 'tool.committed', '2026-12-02 00:02:38.031158+00', '{"call_id":"c1","tool":"look","effect":"read","state":"committed","idempotency_key":"done:c1","attempt":1,"args":{}}');
INSERT INTO {{schema}}.events VALUES ('default', 'done', 6, 'a72c36d0d3d2d4b8fc3d8e28c4c07c2c', '', '7924e31f953587f80d0002fc187dd28c', '11253cadee19e014', 'model.response', '2026-12-02 00:02:38.038999+00', '{"turn":2,"response_id":"scripted-2","stop_reason":"end_turn","usage":{"input_tokens":30,"output_tokens":7,"requests":1},"items":[{"type":"text","role":"assistant","text":"all done"}]}');
INSERT INTO {{schema}}.events VALUES ('default', 'done', 7, '69310354d188b9ccd1f506fcc65cea26', '', '7924e31f953587f80d0002fc187dd28c', '11253cadee19e014', 'run.completed', '2026-12-02 00:02:38.039016+00', '{"status":"completed","usage":{"input_tokens":40,"output_tokens":12,"requests":2}}');
INSERT INTO {{schema}}.events VALUES ('default', 'wait', 1, 'f7565b7a7ae3c489cf2a7e1badc78b39', '', 'e936dcdfdf08ccb370dca7d7ea811ead', '3d241f3ec83dbd0f', 'run.started', '2026-12-02 00:02:38.061924+00', '{"agent_id":"fx-approve","agent_digest":"sha256:f726ba7c0506fcad92aae51c2560334ee2b05652757cb5a3e9a2e60d3b027604","model":"scripted","holder":"vm:19640:20261202T000237Z.895938dc/5f6f3d981f77.2","epoch":1}');
INSERT INTO {{schema}}.events VALUES ('default', 'wait', 2, 'c361bc6bfeff888d48a201d103bc7c91', '', 'e936dcdfdf08ccb370dca7d7ea811ead', '3d241f3ec83dbd0f', 'model.response', '2026-12-02 00:02:38.072494+00', '{"turn":1,"response_id":"scripted-1","stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5,"requests":1},"items":[{"type":"tool_call","role":"assistant","tool_call":{"id":"c1","name":"look","arguments":{}}}]}');
INSERT INTO {{schema}}.events VALUES ('default', 'wait', 3, '1f03e6b66b3d86ad2a0b036bc360a2cd', '', 'e936dcdfdf08ccb370dca7d7ea811ead', 'a1882022299ccf60', 'tool.prepared', '2026-12-02 00:02:38.072502+00', '{"call_id":"c1","tool":"look","effect":"read","state":"prepared","idempotency_key":"wait:c1","attempt":0,"args":{}}');
INSERT INTO {{schema}}.events VALUES ('default', 'wait', 4, '525ffef1cfb8e5a18e35c34a18ec4129', '', 'e936dcdfdf08ccb370dca7d7ea811ead', 'a1882022299ccf60', 'tool.started', '2026-12-02 00:02:38.074025+00', '{"call_id":"c1","tool":"look","effect":"read","state":"started","idempotency_key":"wait:c1","attempt":1,"args":{}}');
INSERT INTO {{schema}}.events VALUES ('default', 'wait', 5, 'fd33bdb7db41b3fe928b562777410bbe', '', 'e936dcdfdf08ccb370dca7d7ea811ead', 'a1882022299ccf60', 'tool.committed', '2026-12-02 00:02:38.07619+00', '{"call_id":"c1","tool":"look","effect":"read","state":"committed","idempotency_key":"wait:c1","attempt":1,"args":{}}');
INSERT INTO {{schema}}.events VALUES ('default', 'wait', 6, '9e34e744934399f26a8eff58a6b6fb22', '', 'e936dcdfdf08ccb370dca7d7ea811ead', '3d241f3ec83dbd0f', 'model.response', '2026-12-02 00:02:38.077121+00', '{"turn":2,"response_id":"scripted-2","stop_reason":"tool_use","usage":{"input_tokens":30,"output_tokens":5,"requests":1},"items":[{"type":"tool_call","role":"assistant","tool_call":{"id":"c2","name":"pay","arguments":{"to":"ada","amount":5}}}]}');
INSERT INTO {{schema}}.events VALUES ('default', 'wait', 7, '9f4072ef6572ddff87a3bb6dac5a3217', '', 'e936dcdfdf08ccb370dca7d7ea811ead', '918d37f19760d7fa', 'tool.prepared', '2026-12-02 00:02:38.077127+00', '{"call_id":"c2","tool":"pay","effect":"side-effect","state":"prepared","idempotency_key":"wait:c2","attempt":0,"args":{"to":"ada","amount":5}}');
INSERT INTO {{schema}}.events VALUES ('default', 'wait', 8, 'fca48f9ca5fd4ecc021073b58bfe9234', '', 'e936dcdfdf08ccb370dca7d7ea811ead', '918d37f19760d7fa', 'tool.awaiting_approval', '2026-12-02 00:02:38.078724+00', '{"call_id":"c2","tool":"pay","effect":"side-effect","state":"awaiting_approval","idempotency_key":"wait:c2","attempt":0,"args":{"to":"ada","amount":5}}');
INSERT INTO {{schema}}.events VALUES ('default', 'wait', 9, 'bcb35cccaeba9d37205aae1cace5e47d', '', 'e936dcdfdf08ccb370dca7d7ea811ead', '3d241f3ec83dbd0f', 'run.interrupted', '2026-12-02 00:02:38.07977+00', '{"status":"interrupted","usage":{"input_tokens":40,"output_tokens":10,"requests":2},"interruptions":[{"kind":"approval","call_id":"c2","tool":"pay","effect":"side-effect","state":"awaiting_approval","idempotency_key":"wait:c2","args":{"to":"ada","amount":5},"args_digest":"sha256:84845473978f7441c70b27a5aa4fcb5f0b5c77b313e6a818b1b19853c73c92de","attempt":0,"reason":"the call needs approval before it starts"}]}');
INSERT INTO {{schema}}.events VALUES ('default', 'unknown', 1, '903e3a18c9b194282d0b9a9ceab074d8', '', '29d1eb253a835c0c2d735fea9aa3e60c', '4c5b832482cb7cfb', 'run.started', '2026-12-02 00:02:38.093715+00', '{"agent_id":"fx","agent_digest":"sha256:bbad10d148116b00ed311ebeb35b3b56387a8cf9f241a30896e55e4258059cc6","model":"scripted","holder":"vm:19640:20261202T000237Z.895938dc/5f6f3d981f77.3","epoch":1}');
INSERT INTO {{schema}}.events VALUES ('default', 'unknown', 2, '06303334b942e0d1ca978e34214ad8ee', '', '29d1eb253a835c0c2d735fea9aa3e60c', '4c5b832482cb7cfb', 'model.response', '2026-12-02 00:02:38.102351+00', '{"turn":1,"response_id":"scripted-1","stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5,"requests":1},"items":[{"type":"tool_call","role":"assistant","tool_call":{"id":"c1","name":"pay","arguments":{"to":"bob","amount":7}}}]}');
INSERT INTO {{schema}}.events VALUES ('default', 'unknown', 3, '9f9a96b1626365837de8bdc6afdbd301', '', '29d1eb253a835c0c2d735fea9aa3e60c', 'd3e843c28712dbbb', 'tool.prepared', '2026-12-02 00:02:38.10236+00', '{"call_id":"c1","tool":"pay","effect":"side-effect","state":"prepared","idempotency_key":"unknown:c1","attempt":0,"args":{"to":"bob","amount":7}}');
INSERT INTO {{schema}}.events VALUES ('default', 'unknown', 4, '1d953ce0f4d4f5e0b87f373801734d4e', '', '29d1eb253a835c0c2d735fea9aa3e60c', 'd3e843c28712dbbb', 'tool.started', '2026-12-02 00:02:38.114064+00', '{"call_id":"c1","tool":"pay","effect":"side-effect","state":"started","idempotency_key":"unknown:c1","attempt":1,"args":{"to":"bob","amount":7}}');
INSERT INTO {{schema}}.events VALUES ('default', 'unknown', 5, 'dc0fd38b79d42d53870d78381d61c205', '', '29d1eb253a835c0c2d735fea9aa3e60c', 'd3e843c28712dbbb', 'tool.unknown', '2026-12-02 00:02:38.122243+00', '{"call_id":"c1","tool":"pay","effect":"side-effect","state":"unknown","idempotency_key":"unknown:c1","attempt":1,"args":{"to":"bob","amount":7}}');
INSERT INTO {{schema}}.events VALUES ('default', 'unknown', 6, '7881ace2d2fe208bfdd339ffd22bfb28', '', '29d1eb253a835c0c2d735fea9aa3e60c', '4c5b832482cb7cfb', 'run.interrupted', '2026-12-02 00:02:38.123171+00', '{"status":"interrupted","usage":{"input_tokens":10,"output_tokens":5,"requests":1},"interruptions":[{"kind":"reconciliation","call_id":"c1","tool":"pay","effect":"side-effect","state":"unknown","idempotency_key":"unknown:c1","args":{"to":"bob","amount":7},"args_digest":"sha256:ae5103d545f9b390f7ab2d3fad4a9b8625d663562aada0933f88f55f2c14d0c3","attempt":1,"started_at":"2026-12-02T00:02:38.114024Z","holder":"vm:19640:20261202T000237Z.895938dc/5f6f3d981f77.3","epoch":1,"reason":"the side effect may or may not have happened; it is never run again without a decision (tool pay: execution: connection reset: tool: outcome unknown (outcome unknown))","last_error":{"kind":"execution","tool":"pay","started":true,"outcome_unknown":true,"message":"connection reset: tool: outcome unknown"}}]}');
INSERT INTO {{schema}}.events VALUES ('default', 'sess-1', 1, '11b43d19ebb06f778b67cc09acd54366', '', '55f452985ee8cdccd65dabac6572015a', '3f9a8ddbcb744d6e', 'run.started', '2026-12-02 00:02:38.145811+00', '{"agent_id":"fx","agent_digest":"sha256:bbad10d148116b00ed311ebeb35b3b56387a8cf9f241a30896e55e4258059cc6","model":"scripted","holder":"vm:19640:20261202T000237Z.895938dc/5f6f3d981f77.4","epoch":1}');
INSERT INTO {{schema}}.events VALUES ('default', 'sess-1', 2, '4bb883d253a429659ed7155d53cfbce9', '', '55f452985ee8cdccd65dabac6572015a', '3f9a8ddbcb744d6e', 'model.response', '2026-12-02 00:02:38.152629+00', '{"turn":1,"response_id":"scripted-1","stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":6,"requests":1},"items":[{"type":"text","role":"assistant","text":"hi back"}]}');
INSERT INTO {{schema}}.events VALUES ('default', 'sess-1', 3, '7869e5c254ffeb4465baa562d043d865', '', '55f452985ee8cdccd65dabac6572015a', '3f9a8ddbcb744d6e', 'run.completed', '2026-12-02 00:02:38.152634+00', '{"status":"completed","usage":{"input_tokens":10,"output_tokens":6,"requests":1}}');


--
-- Data for Name: ledger; Type: TABLE DATA; Schema: {{schema}}; Owner: -
--

INSERT INTO {{schema}}.ledger VALUES ('default', 'done', 'c1', 1, 0, 'look', 'read', 'committed', 'done:c1', 1, 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a', '{}', '{"content":"seen","data":"seen"}', NULL, NULL, NULL, 'vm:19640:20261202T000237Z.895938dc/5f6f3d981f77.1', 1, 3, '2026-12-02 00:02:37.998248+00', '2026-12-02 00:02:38.031176+00', '2026-12-02 00:02:38.007569+00', '2026-12-02 00:02:38.031077+00');
INSERT INTO {{schema}}.ledger VALUES ('default', 'wait', 'c1', 1, 0, 'look', 'read', 'committed', 'wait:c1', 1, 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a', '{}', '{"content":"seen","data":"seen"}', NULL, NULL, NULL, 'vm:19640:20261202T000237Z.895938dc/5f6f3d981f77.2', 1, 3, '2026-12-02 00:02:38.072586+00', '2026-12-02 00:02:38.076202+00', '2026-12-02 00:02:38.073991+00', '2026-12-02 00:02:38.076175+00');
INSERT INTO {{schema}}.ledger VALUES ('default', 'wait', 'c2', 2, 0, 'pay', 'side-effect', 'awaiting_approval', 'wait:c2', 0, 'sha256:84845473978f7441c70b27a5aa4fcb5f0b5c77b313e6a818b1b19853c73c92de', '{"to":"ada","amount":5}', NULL, NULL, NULL, NULL, '', 0, 2, '2026-12-02 00:02:38.077197+00', '2026-12-02 00:02:38.078738+00', NULL, NULL);
INSERT INTO {{schema}}.ledger VALUES ('default', 'unknown', 'c1', 1, 0, 'pay', 'side-effect', 'unknown', 'unknown:c1', 1, 'sha256:ae5103d545f9b390f7ab2d3fad4a9b8625d663562aada0933f88f55f2c14d0c3', '{"to":"bob","amount":7}', NULL, '{"kind":"execution","tool":"pay","started":true,"outcome_unknown":true,"message":"connection reset: tool: outcome unknown"}', NULL, NULL, 'vm:19640:20261202T000237Z.895938dc/5f6f3d981f77.3', 1, 3, '2026-12-02 00:02:38.102589+00', '2026-12-02 00:02:38.122256+00', '2026-12-02 00:02:38.114024+00', NULL);


--
-- Data for Name: once; Type: TABLE DATA; Schema: {{schema}}; Owner: -
--



--
-- Data for Name: runs; Type: TABLE DATA; Schema: {{schema}}; Owner: -
--

INSERT INTO {{schema}}.runs VALUES ('default', 'wait', '', '', 'fx-approve', 'sha256:f726ba7c0506fcad92aae51c2560334ee2b05652757cb5a3e9a2e60d3b027604', 'interrupted', '{"v":1,"items":[{"type":"text","role":"user","text":"pay ada"},{"type":"tool_call","role":"assistant","tool_call":{"id":"c1","name":"look","arguments":{}}},{"type":"tool_result","role":"tool","tool_result":{"call_id":"c1","content":"seen","data":"seen"}},{"type":"tool_call","role":"assistant","tool_call":{"id":"c2","name":"pay","arguments":{"to":"ada","amount":5}}}],"turn":2,"pending":["c2"],"usage":{"input_tokens":40,"output_tokens":10,"requests":2},"interruptions":[{"kind":"approval","call_id":"c2","tool":"pay","effect":"side-effect","state":"awaiting_approval","idempotency_key":"wait:c2","args":{"to":"ada","amount":5},"args_digest":"sha256:84845473978f7441c70b27a5aa4fcb5f0b5c77b313e6a818b1b19853c73c92de","attempt":0,"reason":"the call needs approval before it starts"}],"trace_id":"e936dcdfdf08ccb370dca7d7ea811ead","policy_version":"pv-bf022b89d9ff99ce","agent":{"digest":"sha256:f726ba7c0506fcad92aae51c2560334ee2b05652757cb5a3e9a2e60d3b027604","provider":"scripted","model":"scripted","instructions":"","tools":{"look":{"effect":"read","input":"sha256:51da7ceec637","output":"sha256:00404e686415","description":"sha256:a0de5719f595"},"pay":{"effect":"side-effect","input":"sha256:1e51f373a5a2","output":"sha256:00404e686415","description":"sha256:723afa394dae"}},"policy":{"version":"pv-bf022b89d9ff99ce","effects":["side-effect"]},"recovery":{"RerunReads":false,"RerunIdempotentWrites":false},"limits":{"MaxTurns":16,"RunTimeout":0,"ModelTimeout":600000000000,"ToolTimeout":300000000000,"ReadParallelism":4,"MaxProviderInterruptions":5,"MaxToolOutput":1048576,"MaxMalformedCalls":3}}}', NULL, NULL, 4, 9, '2026-12-02 00:02:38.047844+00', '2026-12-02 00:02:38.079853+00');
INSERT INTO {{schema}}.runs VALUES ('default', 'done', '', '', 'fx', 'sha256:bbad10d148116b00ed311ebeb35b3b56387a8cf9f241a30896e55e4258059cc6', 'completed', '{"v":1,"items":[{"type":"text","role":"user","text":"hello"},{"type":"tool_call","role":"assistant","tool_call":{"id":"c1","name":"look","arguments":{}}},{"type":"tool_result","role":"tool","tool_result":{"call_id":"c1","content":"seen","data":"seen"}},{"type":"text","role":"assistant","text":"all done"}],"turn":2,"usage":{"input_tokens":40,"output_tokens":12,"requests":2},"output":[{"type":"text","role":"assistant","text":"all done"}],"trace_id":"7924e31f953587f80d0002fc187dd28c","policy_version":"pv-1635e12c67dbed06","agent":{"digest":"sha256:bbad10d148116b00ed311ebeb35b3b56387a8cf9f241a30896e55e4258059cc6","provider":"scripted","model":"scripted","instructions":"","tools":{"look":{"effect":"read","input":"sha256:51da7ceec637","output":"sha256:00404e686415","description":"sha256:a0de5719f595"},"pay":{"effect":"side-effect","input":"sha256:1e51f373a5a2","output":"sha256:00404e686415","description":"sha256:723afa394dae"}},"policy":{"version":"pv-1635e12c67dbed06"},"recovery":{"RerunReads":false,"RerunIdempotentWrites":false},"limits":{"MaxTurns":16,"RunTimeout":0,"ModelTimeout":600000000000,"ToolTimeout":300000000000,"ReadParallelism":4,"MaxProviderInterruptions":5,"MaxToolOutput":1048576,"MaxMalformedCalls":3}}}', NULL, NULL, 3, 7, '2026-12-02 00:02:37.908705+00', '2026-12-02 00:02:38.039097+00');
INSERT INTO {{schema}}.runs VALUES ('default', 'unknown', '', '', 'fx', 'sha256:bbad10d148116b00ed311ebeb35b3b56387a8cf9f241a30896e55e4258059cc6', 'interrupted', '{"v":1,"items":[{"type":"text","role":"user","text":"pay bob"},{"type":"tool_call","role":"assistant","tool_call":{"id":"c1","name":"pay","arguments":{"to":"bob","amount":7}}}],"turn":1,"pending":["c1"],"usage":{"input_tokens":10,"output_tokens":5,"requests":1},"interruptions":[{"kind":"reconciliation","call_id":"c1","tool":"pay","effect":"side-effect","state":"unknown","idempotency_key":"unknown:c1","args":{"to":"bob","amount":7},"args_digest":"sha256:ae5103d545f9b390f7ab2d3fad4a9b8625d663562aada0933f88f55f2c14d0c3","attempt":1,"started_at":"2026-12-02T00:02:38.114024Z","holder":"vm:19640:20261202T000237Z.895938dc/5f6f3d981f77.3","epoch":1,"reason":"the side effect may or may not have happened; it is never run again without a decision (tool pay: execution: connection reset: tool: outcome unknown (outcome unknown))","last_error":{"kind":"execution","tool":"pay","started":true,"outcome_unknown":true,"message":"connection reset: tool: outcome unknown"}}],"trace_id":"29d1eb253a835c0c2d735fea9aa3e60c","policy_version":"pv-1635e12c67dbed06","agent":{"digest":"sha256:bbad10d148116b00ed311ebeb35b3b56387a8cf9f241a30896e55e4258059cc6","provider":"scripted","model":"scripted","instructions":"","tools":{"look":{"effect":"read","input":"sha256:51da7ceec637","output":"sha256:00404e686415","description":"sha256:a0de5719f595"},"pay":{"effect":"side-effect","input":"sha256:1e51f373a5a2","output":"sha256:00404e686415","description":"sha256:723afa394dae"}},"policy":{"version":"pv-1635e12c67dbed06"},"recovery":{"RerunReads":false,"RerunIdempotentWrites":false},"limits":{"MaxTurns":16,"RunTimeout":0,"ModelTimeout":600000000000,"ToolTimeout":300000000000,"ReadParallelism":4,"MaxProviderInterruptions":5,"MaxToolOutput":1048576,"MaxMalformedCalls":3}}}', NULL, NULL, 3, 6, '2026-12-02 00:02:38.085433+00', '2026-12-02 00:02:38.123224+00');
INSERT INTO {{schema}}.runs VALUES ('default', 'sess-1', '', 's1', 'fx', 'sha256:bbad10d148116b00ed311ebeb35b3b56387a8cf9f241a30896e55e4258059cc6', 'completed', '{"v":1,"items":[{"type":"text","role":"user","text":"hi"},{"type":"text","role":"assistant","text":"hi back"}],"turn":1,"usage":{"input_tokens":10,"output_tokens":6,"requests":1},"output":[{"type":"text","role":"assistant","text":"hi back"}],"trace_id":"55f452985ee8cdccd65dabac6572015a","policy_version":"pv-1635e12c67dbed06","session_appended":true,"agent":{"digest":"sha256:bbad10d148116b00ed311ebeb35b3b56387a8cf9f241a30896e55e4258059cc6","provider":"scripted","model":"scripted","instructions":"","tools":{"look":{"effect":"read","input":"sha256:51da7ceec637","output":"sha256:00404e686415","description":"sha256:a0de5719f595"},"pay":{"effect":"side-effect","input":"sha256:1e51f373a5a2","output":"sha256:00404e686415","description":"sha256:723afa394dae"}},"policy":{"version":"pv-1635e12c67dbed06"},"recovery":{"RerunReads":false,"RerunIdempotentWrites":false},"limits":{"MaxTurns":16,"RunTimeout":0,"ModelTimeout":600000000000,"ToolTimeout":300000000000,"ReadParallelism":4,"MaxProviderInterruptions":5,"MaxToolOutput":1048576,"MaxMalformedCalls":3}}}', NULL, NULL, 2, 3, '2026-12-02 00:02:38.130199+00', '2026-12-02 00:02:38.152702+00');


--
-- Data for Name: schema_migrations; Type: TABLE DATA; Schema: {{schema}}; Owner: -
--

INSERT INTO {{schema}}.schema_migrations VALUES (1, '001_init', '2026-12-02 00:02:37.584467+00');
INSERT INTO {{schema}}.schema_migrations VALUES (2, '002_run_write', '2026-12-02 00:02:37.584467+00');
INSERT INTO {{schema}}.schema_migrations VALUES (3, '003_session_turn', '2026-12-02 00:02:37.584467+00');
INSERT INTO {{schema}}.schema_migrations VALUES (4, '004_session_chunks', '2026-12-02 00:02:37.584467+00');
INSERT INTO {{schema}}.schema_migrations VALUES (5, '005_session_checksum', '2026-12-02 00:02:37.584467+00');


--
-- Data for Name: session_entries; Type: TABLE DATA; Schema: {{schema}}; Owner: -
--

INSERT INTO {{schema}}.session_entries VALUES ('default', 's1', 1, 'sess-1', '{"type":"text","role":"user","text":"hi"}{"type":"text","role":"assistant","text":"hi back"}', 1, 2, 1449163697);


--
-- Data for Name: session_snapshots; Type: TABLE DATA; Schema: {{schema}}; Owner: -
--



--
-- Data for Name: sessions; Type: TABLE DATA; Schema: {{schema}}; Owner: -
--

INSERT INTO {{schema}}.sessions VALUES ('default', 's1', 2);


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
-- Name: ledger_by_order; Type: INDEX; Schema: {{schema}}; Owner: -
--

CREATE INDEX ledger_by_order ON {{schema}}.ledger USING btree (tenant, run_id, turn, idx, call_id);


--
-- Name: runs_by_created; Type: INDEX; Schema: {{schema}}; Owner: -
--

CREATE INDEX runs_by_created ON {{schema}}.runs USING btree (tenant, created_at DESC, id DESC);


--
-- Name: runs_by_parent; Type: INDEX; Schema: {{schema}}; Owner: -
--

CREATE INDEX runs_by_parent ON {{schema}}.runs USING btree (tenant, parent_id, created_at DESC, id DESC) WHERE (parent_id <> ''::text);


--
-- Name: runs_queued; Type: INDEX; Schema: {{schema}}; Owner: -
--

CREATE INDEX runs_queued ON {{schema}}.runs USING btree (tenant, created_at, id) WHERE (status = 'queued'::text);


--
-- PostgreSQL database dump complete
--


