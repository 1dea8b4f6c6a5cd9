-- The tree a run belongs to (issue 23, left over). root_id is the id of
-- the top-level run of a child's tree ('' for a top-level run: its tree is
-- its own id), copied from its parent when the child is inserted. A prune
-- removes a run only when no run of its tree is unfinished: a root whose
-- finished child has a running grandchild was removed before, and the
-- grandchild's budget checks then failed ("budget of tree R: not found"),
-- and a finished branch removed while another one runs took its turns and
-- tokens out of the tree's budget. The rule reads runs_open_tree: one probe
-- per run looked at, among the unfinished children only.
ALTER TABLE {{schema}}.runs ADD COLUMN root_id text NOT NULL DEFAULT '';

-- The children already stored: the topmost ancestor still reachable (a
-- parent already removed ends the walk: its id is the root).
WITH RECURSIVE up(tenant, id, anc) AS (
	SELECT tenant, id, parent_id FROM {{schema}}.runs WHERE parent_id <> ''
	UNION ALL
	SELECT up.tenant, up.id, p.parent_id FROM up JOIN {{schema}}.runs p ON p.tenant = up.tenant AND p.id = up.anc
	WHERE p.parent_id <> ''
)
UPDATE {{schema}}.runs r SET root_id = u.anc FROM up u
WHERE u.tenant = r.tenant AND u.id = r.id
	AND NOT EXISTS (SELECT 1 FROM {{schema}}.runs p WHERE p.tenant = u.tenant AND p.id = u.anc AND p.parent_id <> '');

-- A child inserted later: its parent's root, or its parent when that is a
-- top-level run (or, for a parent already gone, the parent's id). The
-- root's row is locked FOR KEY SHARE until the child commits, as RunCreate
-- locks the parent's: a prune, which locks the runs it removes FOR UPDATE
-- SKIP LOCKED and then looks again at their trees in a new snapshot,
-- either removed the root first (the engine's Spawn then finds it gone) or
-- keeps the whole tree.
CREATE FUNCTION {{schema}}.run_root() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	p_root text;
BEGIN
	SELECT CASE WHEN p.root_id <> '' THEN p.root_id ELSE p.id END INTO p_root
	FROM {{schema}}.runs p WHERE p.tenant = NEW.tenant AND p.id = NEW.parent_id;
	NEW.root_id := coalesce(p_root, NEW.parent_id);
	IF NEW.root_id <> NEW.parent_id THEN
		PERFORM 1 FROM {{schema}}.runs t WHERE t.tenant = NEW.tenant AND t.id = NEW.root_id FOR KEY SHARE;
	END IF;
	RETURN NEW;
END
$$;
CREATE TRIGGER run_root BEFORE INSERT ON {{schema}}.runs
FOR EACH ROW WHEN (NEW.parent_id <> '') EXECUTE FUNCTION {{schema}}.run_root();

-- The unfinished runs of each tree (children only: a root is read by its
-- key).
CREATE INDEX runs_open_tree ON {{schema}}.runs (tenant, root_id)
	WHERE root_id <> '' AND status IN ('queued', 'running', 'interrupted');
