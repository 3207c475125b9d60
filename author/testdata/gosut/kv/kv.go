// Package kv is a tiny key-value store: the system under test of dstgen
// author's tests.
package kv

// Store is an in-memory map.
type Store struct{ m map[string]string }

// New returns an empty store.
func New() *Store { return &Store{m: map[string]string{}} }

// Put stores v under k.
func (s *Store) Put(k, v string) { s.m[k] = v }

// Get returns the value under k.
func (s *Store) Get(k string) (string, bool) { v, ok := s.m[k]; return v, ok }
