-- event_call_keys (014) in PL/pgSQL, with the same keys for the same
-- arguments, so events_more_calls stays valid as it is (nothing is
-- rebuilt). The SQL function could not be inlined (an aggregate over
-- unnest), so each statement that called it parsed and planned its body
-- again: run_write's lookup of a call in more_calls (twice per side-effect
-- call: its prepared and its started write), the insert of a row of
-- several records into the index, LedgerGet. A PL/pgSQL function is
-- compiled once per connection. On the fleet of 64 runs (fsync on,
-- pg_stat_statements, two alternated pairs): that lookup's mean time went
-- from 0.21-0.27 ms (a bitmap index scan of two buffers, the rest in the
-- function) to about 0.02 ms, run_write's from 1.7-2.0 ms to 0.7-1.2 ms, the
-- server's CPU per call from about 1.2 ms to 0.85 ms.
CREATE OR REPLACE FUNCTION {{schema}}.event_call_keys(p_tenant text, p_run text, p_calls text[]) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
	pre text := length(p_tenant) || ':' || p_tenant || length(p_run) || ':' || p_run;
	keys text[];
	c text;
BEGIN
	-- array_agg over no rows is NULL: so is the key array of no calls.
	IF cardinality(p_calls) > 0 THEN
		FOREACH c IN ARRAY p_calls LOOP
			keys := keys || (pre || c);
		END LOOP;
	END IF;
	RETURN keys;
END
$$;
