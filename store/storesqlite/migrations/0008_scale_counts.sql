-- The inbox's totals (issue 21) without a probe per waiting run: the
-- waiting runs are counted from an index ordered by status and wait kind,
-- and the few that a live claim takes out (runs being driven right now)
-- are found from the claims side, through the live claims' index.
CREATE INDEX runs_waiting_kind ON runs (tenant, status, wait_kind) WHERE status IN ('interrupted', 'running');
CREATE INDEX claims_live ON claims (tenant, expires_at);
