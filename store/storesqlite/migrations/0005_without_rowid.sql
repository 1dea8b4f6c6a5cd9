-- The ledger and the events become WITHOUT ROWID tables: a table keyed by
-- a text primary key otherwise keeps two b-trees, the rows by rowid and the
-- key's index, and every event insert wrote a page of each. Keyed by their
-- primary key alone, a ledger transition (one ledger row, one event)
-- writes two pages to the WAL instead of three. The rows are copied as
-- they are.
CREATE TABLE ledger_new (
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
) STRICT, WITHOUT ROWID;
INSERT INTO ledger_new SELECT * FROM ledger;
DROP TABLE ledger;
ALTER TABLE ledger_new RENAME TO ledger;

CREATE TABLE events_new (
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
) STRICT, WITHOUT ROWID;
INSERT INTO events_new SELECT * FROM events;
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
