-- The tree a run belongs to (issue 23, left over). root_id is the id of
-- the top-level run of a child's tree ('' for a top-level run: its tree is
-- its own id), copied from its parent when the child is inserted. A prune
-- removes a run only when no run of its tree is unfinished: a root whose
-- finished child has a running grandchild was removed before, and the
-- grandchild's budget checks then failed ("budget of tree R: not found"),
-- and a finished branch removed while another one runs took its turns and
-- tokens out of the tree's budget. The rule reads runs_open_tree: one probe
-- per run looked at, among the unfinished children only.
ALTER TABLE runs ADD COLUMN root_id TEXT NOT NULL DEFAULT '';

-- The children already stored: the topmost ancestor still reachable (a
-- parent already removed ends the walk: its id is the root).
WITH RECURSIVE up(tenant, id, anc) AS (
	SELECT tenant, id, parent_id FROM runs WHERE parent_id <> ''
	UNION ALL
	SELECT up.tenant, up.id, p.parent_id FROM up JOIN runs p ON p.tenant = up.tenant AND p.id = up.anc WHERE p.parent_id <> ''
)
UPDATE runs SET root_id = u.anc FROM up u
WHERE u.tenant = runs.tenant AND u.id = runs.id
	AND NOT EXISTS (SELECT 1 FROM runs p WHERE p.tenant = u.tenant AND p.id = u.anc AND p.parent_id <> '');

-- A child inserted later: its parent's root, or its parent when that is a
-- top-level run (or, for a parent already gone, the parent's id).
CREATE TRIGGER run_root AFTER INSERT ON runs
WHEN NEW.parent_id <> ''
BEGIN
	UPDATE runs SET root_id = coalesce((SELECT CASE WHEN p.root_id <> '' THEN p.root_id ELSE p.id END
		FROM runs p WHERE p.tenant = NEW.tenant AND p.id = NEW.parent_id), NEW.parent_id)
	WHERE tenant = NEW.tenant AND id = NEW.id;
END;

-- The unfinished runs of each tree (children only: a root is read by its
-- key).
CREATE INDEX runs_open_tree ON runs (tenant, root_id) WHERE root_id <> '' AND status IN ('queued', 'running', 'interrupted');
