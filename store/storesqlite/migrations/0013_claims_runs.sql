-- The live claims of runs (left over from issue 21): the runs a live claim
-- holds (runs list --status running) and the inbox's idle count read the
-- claims of runs only, by expiry, not every live claim of the tenant:
-- claims_live also holds the places of the trees' child budgets (held for
-- good), the cancel requests, the approval escalation timers and the
-- session claims, which grow with the store's history.
CREATE INDEX claims_runs ON claims (tenant, expires_at) WHERE substr(key, 1, 4) = 'run:';
