-- Initial schema. Times are INTEGER unix microseconds (UTC); JSON is TEXT.
-- Every primary key starts with the tenant.

CREATE TABLE runs (
    tenant       TEXT    NOT NULL,
    id           TEXT    NOT NULL,
    parent_id    TEXT    NOT NULL DEFAULT '',
    session_id   TEXT    NOT NULL DEFAULT '',
    agent_id     TEXT    NOT NULL DEFAULT '',
    agent_digest TEXT    NOT NULL DEFAULT '',
    status       TEXT    NOT NULL,
    checkpoint   TEXT,
    meta         TEXT,
    deadline     INTEGER,
    revision     INTEGER NOT NULL,
    event_seq    INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (tenant, id)
) STRICT;

CREATE INDEX runs_by_created ON runs (tenant, created_at DESC, id DESC);
CREATE INDEX runs_by_status ON runs (tenant, status, created_at, id);

CREATE TABLE ledger (
    tenant          TEXT    NOT NULL,
    run_id          TEXT    NOT NULL,
    call_id         TEXT    NOT NULL,
    turn            INTEGER NOT NULL,
    idx             INTEGER NOT NULL,
    tool            TEXT    NOT NULL,
    effect          TEXT    NOT NULL DEFAULT '',
    state           TEXT    NOT NULL,
    idempotency_key TEXT    NOT NULL DEFAULT '',
    attempt         INTEGER NOT NULL DEFAULT 0,
    args_digest     TEXT    NOT NULL DEFAULT '',
    args            TEXT,
    result          TEXT,
    error           TEXT,
    approval        TEXT,
    resolution      TEXT,
    holder          TEXT    NOT NULL DEFAULT '',
    epoch           INTEGER NOT NULL DEFAULT 0,
    revision        INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    started_at      INTEGER,
    committed_at    INTEGER,
    PRIMARY KEY (tenant, run_id, call_id),
    FOREIGN KEY (tenant, run_id) REFERENCES runs (tenant, id)
) STRICT;

CREATE TABLE events (
    tenant        TEXT    NOT NULL,
    run_id        TEXT    NOT NULL,
    seq           INTEGER NOT NULL,
    id            TEXT    NOT NULL DEFAULT '',
    parent_run_id TEXT    NOT NULL DEFAULT '',
    trace_id      TEXT    NOT NULL DEFAULT '',
    span_id       TEXT    NOT NULL DEFAULT '',
    type          TEXT    NOT NULL,
    time          INTEGER NOT NULL,
    data          TEXT,
    PRIMARY KEY (tenant, run_id, seq),
    FOREIGN KEY (tenant, run_id) REFERENCES runs (tenant, id)
) STRICT;

CREATE TABLE claims (
    tenant       TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    holder       TEXT    NOT NULL,
    epoch        INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, key)
) STRICT;

CREATE TABLE sessions (
    tenant     TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    revision   INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, session_id)
) STRICT;

CREATE TABLE session_journal (
    tenant     TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    run_id     TEXT    NOT NULL DEFAULT '',
    item       TEXT    NOT NULL,
    PRIMARY KEY (tenant, session_id, seq),
    FOREIGN KEY (tenant, session_id) REFERENCES sessions (tenant, session_id)
) STRICT;

CREATE TABLE session_snapshots (
    tenant     TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    revision   INTEGER NOT NULL,
    data       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, session_id, revision),
    FOREIGN KEY (tenant, session_id) REFERENCES sessions (tenant, session_id)
) STRICT;

CREATE TABLE once_records (
    tenant     TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, key)
) STRICT;
