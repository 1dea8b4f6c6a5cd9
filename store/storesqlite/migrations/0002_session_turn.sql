-- The model turn of the run that appended each session item: with run_id
-- it identifies an append, so a run that died between its session append
-- and its completion write recognises its own append.
ALTER TABLE session_journal ADD COLUMN turn INTEGER NOT NULL DEFAULT 0;
