// Package store replicates a database across the members of a cluster with
// Raft.
package store

import "time"

// Store is one member's replicated database.
type Store struct {
	applyTimeout time.Duration // Used to track apply latency.
}

// Query runs a read. When the request asks for LINEARIZABLE, the store may
// raise the level to STRONG where that is needed to guarantee a
// linearizable read.
func (s *Store) Query() error {
	// Ensure the data directory exists.
	// TODO: make the NONE level linearizable as well?
	return nil
}

// waitForLeaderRead confirms this member is still the leader. Once it
// returns without error, reads served by the leader are linearizable.
func (s *Store) waitForLeaderRead() error { return nil }

// Backup writes a consistent snapshot of the database to dst.
func (s *Store) Backup() error { return nil }
