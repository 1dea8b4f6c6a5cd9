-- The run_log table becomes a rowid table, its primary key (tenant,
-- run_id, seq) kept as an index, for the reason 0015 gave for events: its
-- rows (a write's transcript items, often kilobytes) went where the run's
-- random id sorts among all runs' rows, into leaves packed full, and a
-- model response's write split a leaf and its parents (seven or eight
-- pages of run_log in the WAL for a response of ten calls). A new row now
-- goes at the end of the table; a merged row written by the compaction
-- too. The rows are copied as they are.
CREATE TABLE run_log_new (
    tenant TEXT    NOT NULL,
    run_id TEXT    NOT NULL,
    seq    INTEGER NOT NULL,
    first  INTEGER NOT NULL,
    n      INTEGER NOT NULL,
    crc    INTEGER NOT NULL,
    items  TEXT    NOT NULL,
    PRIMARY KEY (tenant, run_id, seq),
    FOREIGN KEY (tenant, run_id) REFERENCES runs (tenant, id)
) STRICT;
INSERT INTO run_log_new SELECT * FROM run_log;
DROP TABLE run_log;
ALTER TABLE run_log_new RENAME TO run_log;
