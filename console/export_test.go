package console

// InboxComputed is how many pages the live inbox streams computed.
func InboxComputed(c *Console) int64 { return c.inboxComputed.Load() }
