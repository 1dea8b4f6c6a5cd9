-- One events row for a write's records (issue 22): a write with two or
-- more event records, whose ledger records are all new entries in a state
-- other than started and unknown (the model response with its prepared
-- calls, a run's last write), stores them as ONE events row. Its columns
-- hold the first record as before; first_seq is that record's number and
-- seq the last one's, so numbering by MAX(seq) and paging by seq > n work
-- as before. more holds the other records (a JSON array, see the
-- store/internal/eventrow package), more_crc its CRC-32C, more_calls the
-- JSON array of the call ids of its ledger records. Every entry of such a
-- row is at revision 1, created at the row's entry_updated time. Rows
-- written before keep first_seq NULL: nothing is copied.
ALTER TABLE events ADD COLUMN first_seq  INTEGER;
ALTER TABLE events ADD COLUMN more       TEXT;
ALTER TABLE events ADD COLUMN more_crc   INTEGER;
ALTER TABLE events ADD COLUMN more_calls TEXT;

-- A call's records: its latest one-record row by index, not by a walk of
-- the run's events backwards (a call found only in a row's more column
-- would otherwise make every transition of it read the run's history).
CREATE INDEX events_by_call ON events (tenant, run_id, call_id, seq) WHERE call_id IS NOT NULL;
-- The rows holding several records, newest first, for a call's lookup in
-- more_calls and for the ledger's list.
CREATE INDEX events_multi ON events (tenant, run_id, seq) WHERE more_calls IS NOT NULL;
