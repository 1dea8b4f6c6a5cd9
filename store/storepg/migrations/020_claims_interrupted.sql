-- The live claims of interrupted runs (runs list --status running, its
-- interrupted half: the waiting runs a process resumes or decides on
-- now), by expiry: entries only for the claim rows of interrupted runs
-- (run_status, which the run's writes keep on its claim: 017, 018), a few
-- per interruption, none for the claims of running runs, so a call's
-- writes add no entry. Without it the list walked every interrupted run
-- and probed its claim (storepg's interruptedLive).
--
-- Cost on Open: one pass over claims (one row per run ever claimed), and
-- the index holds the claims of the interrupted runs only. 113 ms for
-- 310,000 claims (internal/scaletest/seed, 300,000 runs), so about 0.4 s
-- at 1,000,000, during which writes to claims wait (the migration runs in
-- its transaction, so not CONCURRENTLY): take, extend and release of
-- claims, and so every drive's start and end.
CREATE INDEX claims_interrupted ON {{schema}}.claims (tenant, expires_at)
	WHERE starts_with(key, 'run:') AND run_status = 'interrupted';
