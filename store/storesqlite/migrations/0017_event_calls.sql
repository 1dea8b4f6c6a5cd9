-- The calls a row of several records holds in more (events.more_calls),
-- one index entry per call: SQLite cannot index the entries of a JSON
-- array, and without this a write of a new ledger entry (every call of
-- every model response) proved the call was in no row's more by walking
-- every such row of the run with json_each: a run's model-response write
-- took 6 ms at turn 1,000 and 105 ms from turn 3,000 on (review9a,
-- issue 22). PostgreSQL has the same index as a GIN (events_more_calls).
-- A WITHOUT ROWID table keyed like an index; written with its events row,
-- in the same transaction, and deleted with it (prune).
CREATE TABLE event_calls (
    tenant  TEXT    NOT NULL,
    run_id  TEXT    NOT NULL,
    call_id TEXT    NOT NULL,
    seq     INTEGER NOT NULL,
    PRIMARY KEY (tenant, run_id, call_id, seq)
) STRICT, WITHOUT ROWID;
INSERT INTO event_calls (tenant, run_id, call_id, seq)
    SELECT e.tenant, e.run_id, j.value, e.seq FROM events e, json_each(e.more_calls) j
    WHERE e.more_calls IS NOT NULL;
