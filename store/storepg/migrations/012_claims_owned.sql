-- The claims a run owns besides its own (store.RunOwnsClaim): the places
-- of the child budget of the tree it is the root of ("children:<id>:<n>")
-- and the requests to cancel its drives ("cancel:<id>:<epoch>"). A prune
-- removes them with the run, by a range of keys per run, in the "C"
-- collation (bytes) whatever the database's: this index serves it. Only
-- these keys are in it, so a heartbeat of a run's claim does not touch it.
CREATE INDEX claims_owned ON {{schema}}.claims (tenant, (key COLLATE "C")) WHERE key LIKE 'children:%' OR key LIKE 'cancel:%';
