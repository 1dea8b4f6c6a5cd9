-- Production scale (issue 21): every claim, list and inbox query reads an
-- index whose rows are the ones it answers with, never the finished runs.
--
-- wait_kind is what an interrupted run waits for (the kind of its first
-- open question), written with the status; the inbox counts by it. Runs
-- interrupted before this migration get it from their checkpoint.
ALTER TABLE runs ADD COLUMN wait_kind TEXT NOT NULL DEFAULT '';
UPDATE runs SET wait_kind = COALESCE(json_extract(checkpoint, '$.interruptions[0].kind'), '')
WHERE status = 'interrupted' AND json_valid(checkpoint);

-- Claims: the queued and running runs, oldest first (RunClaimNext).
CREATE INDEX runs_active ON runs (tenant, created_at, id) WHERE status IN ('queued', 'running');
-- The inbox: interrupted and running (stalled) runs, waiting longest first,
-- with the wait kind so that counting reads the index alone.
CREATE INDEX runs_waiting ON runs (tenant, updated_at, id, status, wait_kind) WHERE status IN ('interrupted', 'running');
-- Retention: finished runs, oldest write first.
CREATE INDEX runs_finished ON runs (tenant, updated_at, id) WHERE status IN ('completed', 'failed', 'cancelled');
-- A run's children (the run page's tree, retention's parent rule).
CREATE INDEX runs_by_parent ON runs (tenant, parent_id, created_at, id) WHERE parent_id <> '';
-- A session's runs (retention's session rule).
CREATE INDEX runs_by_session ON runs (tenant, session_id, status, updated_at) WHERE session_id <> '';
