-- The events table becomes a rowid table again (it was made WITHOUT
-- ROWID by 0005), keeping (tenant, run_id, seq) as its primary key, now
-- a separate index.
--
-- Keyed by (tenant, run_id, seq), a run's new rows went where its id
-- sorts among all runs' rows (run ids are random), into a leaf packed
-- full by earlier splits: with rows of about 450 bytes, nearly every
-- transition's insert split that leaf, which rewrites it, two siblings
-- and their parent. A side-effect call's write (two records) put five
-- to seven pages in the WAL, against one for a bare commit. In a rowid
-- table a new row goes at the end of the table's last leaf (and when
-- that is full, into a new page of its own with no rebalancing of
-- siblings), and the key's index takes about 50 bytes per row, so its
-- leaves seldom split: about three pages per write, and the rows of a
-- batch of writes of different runs share the table's last page.
--
-- The rows are copied as they are, in key order; a run's rows stay
-- contiguous in the table.
CREATE TABLE events_new (
    tenant          TEXT    NOT NULL,
    run_id          TEXT    NOT NULL,
    seq             INTEGER NOT NULL,
    id              TEXT    NOT NULL DEFAULT '',
    parent_run_id   TEXT    NOT NULL DEFAULT '',
    trace_id        TEXT    NOT NULL DEFAULT '',
    span_id         TEXT    NOT NULL DEFAULT '',
    type            TEXT    NOT NULL,
    time            INTEGER NOT NULL,
    data            TEXT,
    call_id         TEXT,
    turn            INTEGER,
    idx             INTEGER,
    tool            TEXT,
    effect          TEXT,
    state           TEXT,
    idempotency_key TEXT,
    attempt         INTEGER,
    args_digest     TEXT,
    args            TEXT,
    result          TEXT,
    error           TEXT,
    approval        TEXT,
    resolution      TEXT,
    holder          TEXT,
    epoch           INTEGER,
    entry_rev       INTEGER,
    entry_created   INTEGER,
    entry_updated   INTEGER,
    started_at      INTEGER,
    committed_at    INTEGER,
    first_seq       INTEGER,
    more            TEXT,
    more_crc        INTEGER,
    more_calls      TEXT,
    PRIMARY KEY (tenant, run_id, seq),
    FOREIGN KEY (tenant, run_id) REFERENCES runs (tenant, id)
) STRICT;
INSERT INTO events_new SELECT * FROM events;
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
CREATE INDEX events_by_call ON events (tenant, run_id, call_id, seq) WHERE call_id IS NOT NULL;
CREATE INDEX events_multi ON events (tenant, run_id, seq) WHERE more_calls IS NOT NULL;
