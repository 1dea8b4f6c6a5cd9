-- A session append is one journal row: seq is the seq of its first item,
-- n the number of items, and item holds them joined by U+001E (a byte that
-- valid JSON text never contains). Rows written before hold one item
-- (n = 1) and read as before. Loading a long session reads one row per
-- append instead of one per item.
ALTER TABLE {{schema}}.session_entries ADD COLUMN n integer NOT NULL DEFAULT 1;
