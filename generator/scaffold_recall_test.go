package generator

import "testing"

// TestClaimsRecallPatterns: the promises a core package states only inside
// a function body or in weak words are found (docs/plan-format.md §15.2),
// and the code narration next to them is not. Each case is a small tree
// of our own wording; want are file:line that must be listed (as a
// candidate or merged into one) with that category, never those that
// must not be.
func TestClaimsRecallPatterns(t *testing.T) {
	for _, tc := range []claimCase{
		{
			name: "body comment with a guarantee, first person and all",
			files: map[string]string{
				"store/snap.go": "package store\n\nfunc snapshot() {\n\t// We want to guarantee that every snapshot leaves the data file\n\t// fully sync'ed to disk.\n\tsync()\n}\n",
			},
			want: map[string]string{"store/snap.go:5": "durability"},
		},
		{
			name: "body comment: a torn record is never applied",
			files: map[string]string{
				"wal/replay.go": "package wal\n\nfunc replay() {\n\t// A record that fails its checksum is dropped as it is read: it\n\t// is never applied.\n\tcheck()\n}\n",
			},
			want: map[string]string{"wal/replay.go:5": "safety"},
		},
		{
			name: "body comment narrating the code is no promise",
			files: map[string]string{
				"wal/apply.go": "package wal\n\nfunc apply() {\n\t// Since we hold the lock here, the entry is never applied twice.\n\tdo()\n}\n",
			},
			never: []string{"wal/apply.go:4"},
		},
		{
			name: "body comment: joining an existing cluster always comes first",
			files: map[string]string{
				"cluster/boot.go": "package cluster\n\nfunc boot() {\n\t// Contact the seeds. A node that finds peers always joins the\n\t// existing cluster rather than forming a new one.\n\tjoin()\n}\n",
			},
			want: map[string]string{"cluster/boot.go:4": "membership"},
		},
		{
			name: "exactly once whose messages are named in the sentence before",
			files: map[string]string{
				"server/dedup.go": "package server\n\nfunc dedup() {\n\t// Keep one record per producer sequence for incoming messages.\n\t// The key is the sequence, to achieve exactly once per producer.\n\tkeep()\n}\n",
				"server/timer.go": "package server\n\nfunc sweep() {\n\t// Start the sweeper. It runs exactly once per tick, to achieve a\n\t// steady load.\n\ttick()\n}\n",
			},
			want:  map[string]string{"server/dedup.go:5": "idempotency"},
			never: []string{"server/timer.go:4"},
		},
		{
			name: "an error returned when a read would break its freshness bound",
			files: map[string]string{
				"store/errors.go": "package store\n\nvar (\n\t// ErrTooStale is returned when serving the read would break the\n\t// requested freshness.\n\tErrTooStale = errTooStale\n)\n",
			},
			want: map[string]string{"store/errors.go:5": "safety"},
		},
		{
			name: "a removal refused when it would lose quorum, on by default",
			files: map[string]string{
				"membership/remove.go": "package membership\n\nfunc remove() {\n\t// by default the safety check is enabled; reject a removal if it\n\t// leads to quorum loss\n\tcheck()\n}\n",
			},
			want: map[string]string{"membership/remove.go:5": "membership"},
		},
		{
			name: "a rule quoted from a paper",
			files: map[string]string{
				"raft/ack.go": "package raft\n\nfunc ack() {\n\t// The paper says: \"a follower never acknowledges an entry it has\n\t// not stored\".\n\treply()\n}\n",
			},
			want: map[string]string{"raft/ack.go:4": "safety"},
		},
		{
			name: "a file replaced atomically, in a doc comment that opens with its name",
			files: map[string]string{
				"snapshot/install.go": "package snapshot\n\n// installSnapshot replaces the current snapshot file with the new one\n// atomically.\nfunc installSnapshot() {}\n",
			},
			want: map[string]string{"snapshot/install.go:4": "isolation"},
		},
		{
			name: "a read without any linearizability guarantee is a denial",
			files: map[string]string{
				"store/local.go": "package store\n\n// LocalRead reads this node's copy without any linearizability guarantee.\nfunc LocalRead() {}\n",
			},
			never: []string{"store/local.go:3"},
		},
	} {
		t.Run(tc.name, tc.check)
	}
}
