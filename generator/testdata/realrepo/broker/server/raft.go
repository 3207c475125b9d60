package server

// An entry is committed once a quorum of peers has stored it; a committed
// entry is never lost while a quorum of peers survives.
func (n *raft) commit() {}

type raft struct{}
