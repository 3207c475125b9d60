package generator

import "testing"

// TestClaimsFifthRoundPatterns: the fifth round's rules of
// docs/plan-format.md §15.2, each on a small tree of our own wording — the
// application's duties stated with no caller named, a package doc written
// as a block comment with indented notes, quoted message names, a never
// with a subject and a protocol verb, and what an unexported helper does.
func TestClaimsFifthRoundPatterns(t *testing.T) {
	for _, tc := range []claimCase{
		{
			name: "the application's duties with no caller named are no promise",
			files: map[string]string{
				"consensus/doc.go": "// Package consensus replicates a log across a group.\n//\n" +
					"// Each batch handed to the storage writer must be durable before the\n" +
					"// replies are delivered. Updates for one writer must be reliably processed in\n" +
					"// order.\n//\n" +
					"// It is important that no reply be sent until the vote has been persisted to\n// disk.\n" +
					"package consensus\n",
				"consensus/log.go": "package consensus\n\n// Log is the replicated log. A committed entry is never lost while a\n// majority of the group survives a crash.\ntype Log struct{}\n",
			},
			want:  map[string]string{"consensus/log.go:3": "durability"},
			never: []string{"consensus/doc.go:3", "consensus/doc.go:4", "consensus/doc.go:5", "consensus/doc.go:7", "consensus/doc.go:8"},
		},
		{
			name: "a duty in a declaration's doc is the application's only with no actor of the system named",
			files: map[string]string{
				"consensus/config.go": "package consensus\n\n// Config configures a group member.\ntype Config struct {\n" +
					"\t// AsyncWrites hands writes to a local thread. Messages to the same thread\n\t// must be reliably processed in order.\n\tAsyncWrites bool\n}\n",
				"consensus/commit.go": "package consensus\n\n// Commit commits the entry. An entry must be persisted on a majority of the\n// group before it is committed.\nfunc Commit() {}\n\n" +
					"// Vote answers a vote request. A vote must be written to disk before the reply\n// is sent, so a node never votes twice in one term.\nfunc Vote() {}\n",
			},
			want:  map[string]string{"consensus/commit.go:3": "durability", "consensus/commit.go:8": "safety"},
			never: []string{"consensus/config.go:5", "consensus/config.go:6"},
		},
		{
			name: "a package doc in a block comment, its indented notes too",
			files: map[string]string{
				"consensus/doc.go": "/*\nPackage consensus runs the election protocol.\n\n" +
					"\tVote requests: since a follower that hears no leader for the election\n" +
					"\ttimeout becomes a candidate, it starts a new election.\n\nSee the design notes for the rest.\n*/\npackage consensus\n",
			},
			want: map[string]string{"consensus/doc.go:5": "liveness"},
		},
		{
			name: "a quoted message name is no code symbol",
			files: map[string]string{
				"consensus/heal.go": "package consensus\n\n// Heal is sent when the group is quiet: on a 'MsgHeal' a follower that\n// hears no leader starts an election at once.\nconst Heal = 1\n",
			},
			want: map[string]string{"consensus/heal.go:4": "liveness"},
		},
		{
			name: "never with a subject and a protocol verb is an invariant",
			files: map[string]string{
				"consensus/entry.go": "package consensus\n\n// EntryID names an entry of the log. A leader never issues two entries\n// with the same index.\ntype EntryID struct{}\n",
				"store/commit.go": "package store\n\nfunc (l *Log) commitTo(i int) {\n\t// never lower the commit index\n" +
					"\tif l.committed < i {\n\t\tl.committed = i\n\t}\n}\n",
			},
			want: map[string]string{"consensus/entry.go:3": "safety", "store/commit.go:4": "safety"},
		},
		{
			name: "what an unexported helper does is no promise; an exported one's is kept",
			files: map[string]string{
				"store/helpers.go": "package store\n\n" +
					"// markStable marks entries up to the index as written to stable storage.\nfunc (l *Log) markStable(i int) {}\n\n" +
					"// tryCommit attempts to advance the commit index of the leader.\nfunc (l *Log) tryCommit() bool { return false }\n\n" +
					"// canApply returns whether entries are allowed to be applied once committed\n// but before they were written to stable storage.\nfunc (l *Log) canApply() bool { return false }\n",
				"snapshot/stable.go": "package snapshot\n\n// MarkStable marks snapshots up to the index as written to stable storage.\nfunc MarkStable(i int) {}\n",
			},
			want:  map[string]string{"snapshot/stable.go:3": "durability"},
			never: []string{"store/helpers.go:3", "store/helpers.go:6", "store/helpers.go:9", "store/helpers.go:10"},
		},
		{
			name: "writes that need not be durable, a rate of at most once per heartbeat, and what can be applied promise nothing",
			files: map[string]string{
				"consensus/apply.go": "package consensus\n\n// Apply carries committed entries to the state machine. Its writes need not\n// be durable before the replies are delivered.\nconst Apply = 2\n",
				"docs/probe.md":      "# Probing\n\nA new leader sends a probe message to each follower at most once per heartbeat.\n",
				"store/doc.go": "// Package store keeps the log.\n//\n// To cut latency an optimization can be applied so that the leader writes to\n" +
					"// disk in parallel with its followers.\npackage store\n",
			},
			never: []string{"consensus/apply.go:3", "consensus/apply.go:4", "docs/probe.md:3", "store/doc.go:3", "store/doc.go:4"},
		},
	} {
		t.Run(tc.name, tc.check)
	}
}
