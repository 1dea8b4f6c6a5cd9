-- The CRC-32C of a journal row's item text, written with the append (whose
-- items were checked to be JSON). A load verifies it instead of parsing
-- every item again; rows without one have each item validated.
ALTER TABLE session_journal ADD COLUMN crc INTEGER;
