package store

// Reads in this test are linearizable by construction.
