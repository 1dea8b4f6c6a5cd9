-- The runs a host's processes hold (issue 21, left over): the inbox's
-- totals read the live claims of this host only, not every live claim of
-- the tenant. Claims are indexed by the host part of their holder (the
-- holder up to and including its first ':', as a runtime's default holder
-- "host:pid:..." starts), then by expiry: an equality and a range.
CREATE INDEX claims_host ON {{schema}}.claims (tenant, (substr(holder, 1, strpos(holder, ':'))), expires_at);
