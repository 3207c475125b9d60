package server

// Account is a tenant of the broker.
type Account struct {
	latency int // Used to track service latency.
}

func (a *Account) update() {
	// Release first: lock ordering is client -> account.
	// Guarantee that only one goroutine runs checkMigrate at a time.
	// Each update is idempotent, so a missed one does no harm.
}
