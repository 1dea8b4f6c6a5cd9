-- The model turn of the run that appended each session item: with run_id
-- it identifies an append, so a run that died between its session append
-- and its completion write recognises its own append.
ALTER TABLE {{schema}}.session_entries ADD COLUMN turn integer NOT NULL DEFAULT 0;
