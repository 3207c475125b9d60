// Package rsync has small synchronisation helpers.
package rsync

// AtomicBool is a bool that is always read and written atomically.
type AtomicBool struct{}
