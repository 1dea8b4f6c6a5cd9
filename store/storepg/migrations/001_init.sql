-- Initial schema. {{schema}} is replaced by the quoted schema name.
-- JSON is stored as text, not jsonb: jsonb reorders keys and drops
-- duplicates, and checkpoints must come back byte for byte.
-- Every primary key starts with tenant.

CREATE TABLE {{schema}}.runs (
	tenant       text        NOT NULL,
	id           text        NOT NULL,
	parent_id    text        NOT NULL,
	session_id   text        NOT NULL,
	agent_id     text        NOT NULL,
	agent_digest text        NOT NULL,
	status       text        NOT NULL,
	checkpoint   text        NOT NULL,
	meta         text,
	deadline     timestamptz,
	revision     bigint      NOT NULL,
	event_seq    bigint      NOT NULL,
	created_at   timestamptz NOT NULL,
	updated_at   timestamptz NOT NULL,
	PRIMARY KEY (tenant, id)
);
CREATE INDEX runs_by_created ON {{schema}}.runs (tenant, created_at DESC, id DESC);
CREATE INDEX runs_queued ON {{schema}}.runs (tenant, created_at, id) WHERE status = 'queued';
CREATE INDEX runs_by_parent ON {{schema}}.runs (tenant, parent_id, created_at DESC, id DESC) WHERE parent_id <> '';

CREATE TABLE {{schema}}.ledger (
	tenant          text        NOT NULL,
	run_id          text        NOT NULL,
	call_id         text        NOT NULL,
	turn            bigint      NOT NULL,
	idx             bigint      NOT NULL,
	tool            text        NOT NULL,
	effect          text        NOT NULL,
	state           text        NOT NULL,
	idempotency_key text        NOT NULL,
	attempt         bigint      NOT NULL,
	args_digest     text        NOT NULL,
	args            text,
	result          text,
	error           text,
	approval        text,
	resolution      text,
	holder          text        NOT NULL,
	epoch           bigint      NOT NULL,
	revision        bigint      NOT NULL,
	created_at      timestamptz NOT NULL,
	updated_at      timestamptz NOT NULL,
	started_at      timestamptz,
	committed_at    timestamptz,
	PRIMARY KEY (tenant, run_id, call_id)
);
CREATE INDEX ledger_by_order ON {{schema}}.ledger (tenant, run_id, turn, idx, call_id);

CREATE TABLE {{schema}}.events (
	tenant        text        NOT NULL,
	run_id        text        NOT NULL,
	seq           bigint      NOT NULL,
	id            text        NOT NULL,
	parent_run_id text        NOT NULL,
	trace_id      text        NOT NULL,
	span_id       text        NOT NULL,
	type          text        NOT NULL,
	time          timestamptz NOT NULL,
	data          text,
	PRIMARY KEY (tenant, run_id, seq)
);

CREATE TABLE {{schema}}.claims (
	tenant       text        NOT NULL,
	key          text        NOT NULL,
	holder       text        NOT NULL,
	epoch        bigint      NOT NULL,
	expires_at   timestamptz NOT NULL,
	heartbeat_at timestamptz NOT NULL,
	PRIMARY KEY (tenant, key)
);

CREATE TABLE {{schema}}.sessions (
	tenant     text   NOT NULL,
	session_id text   NOT NULL,
	revision   bigint NOT NULL,
	PRIMARY KEY (tenant, session_id)
);

CREATE TABLE {{schema}}.session_entries (
	tenant     text   NOT NULL,
	session_id text   NOT NULL,
	seq        bigint NOT NULL,
	run_id     text   NOT NULL,
	item       text   NOT NULL,
	PRIMARY KEY (tenant, session_id, seq)
);

CREATE TABLE {{schema}}.session_snapshots (
	tenant     text   NOT NULL,
	session_id text   NOT NULL,
	revision   bigint NOT NULL,
	data       text   NOT NULL,
	PRIMARY KEY (tenant, session_id, revision)
);

-- A once row with a NULL value is a placeholder written by OnceTx inside a
-- caller's transaction; it counts as "no value".
CREATE TABLE {{schema}}.once (
	tenant     text        NOT NULL,
	key        text        NOT NULL,
	value      text,
	created_at timestamptz NOT NULL,
	PRIMARY KEY (tenant, key)
);
