-- The run journal: a write carries its own change, not the run's history.
--
-- A ledger transition and its event are one row of events: the event row
-- carries the entry as it is after the transition (call_id and the entry
-- columns; entry_rev is the entry's revision). The ledger's current state
-- is the latest such row of the call; rows of the ledger table written
-- before (or by a write that gives no event of its own) still count, the
-- higher revision winning. Nothing is copied: existing entries stay where
-- they are and move forward with their next transition.
ALTER TABLE events ADD COLUMN call_id         TEXT;
ALTER TABLE events ADD COLUMN turn            INTEGER;
ALTER TABLE events ADD COLUMN idx             INTEGER;
ALTER TABLE events ADD COLUMN tool            TEXT;
ALTER TABLE events ADD COLUMN effect          TEXT;
ALTER TABLE events ADD COLUMN state           TEXT;
ALTER TABLE events ADD COLUMN idempotency_key TEXT;
ALTER TABLE events ADD COLUMN attempt         INTEGER;
ALTER TABLE events ADD COLUMN args_digest     TEXT;
ALTER TABLE events ADD COLUMN args            TEXT;
ALTER TABLE events ADD COLUMN result          TEXT;
ALTER TABLE events ADD COLUMN error           TEXT;
ALTER TABLE events ADD COLUMN approval        TEXT;
ALTER TABLE events ADD COLUMN resolution      TEXT;
ALTER TABLE events ADD COLUMN holder          TEXT;
ALTER TABLE events ADD COLUMN epoch           INTEGER;
ALTER TABLE events ADD COLUMN entry_rev       INTEGER;
ALTER TABLE events ADD COLUMN entry_created   INTEGER;
ALTER TABLE events ADD COLUMN entry_updated   INTEGER;
ALTER TABLE events ADD COLUMN started_at      INTEGER;
ALTER TABLE events ADD COLUMN committed_at    INTEGER;

-- The run's log (its transcript) is appended to, never rewritten: each run
-- write that appends items adds one row holding them joined by U+001E,
-- with their count and the CRC-32C of the text (as the session journal).
-- first is the log index of the row's first item. Old rows are merged
-- into larger ones off the write path (compaction); a merged row keeps
-- the seq of the last row it replaces. log_len on the run row counts the
-- items. A run written before keeps its transcript in its checkpoint, with
-- an empty log, until its next write moves it here.
CREATE TABLE run_log (
    tenant TEXT    NOT NULL,
    run_id TEXT    NOT NULL,
    seq    INTEGER NOT NULL,
    first  INTEGER NOT NULL,
    n      INTEGER NOT NULL,
    crc    INTEGER NOT NULL,
    items  TEXT    NOT NULL,
    PRIMARY KEY (tenant, run_id, seq),
    FOREIGN KEY (tenant, run_id) REFERENCES runs (tenant, id)
) STRICT, WITHOUT ROWID;

ALTER TABLE runs ADD COLUMN log_len INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN log_seq INTEGER NOT NULL DEFAULT 0;
