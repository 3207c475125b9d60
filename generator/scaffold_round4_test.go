package generator

import "testing"

// TestClaimsFourthRoundPatterns: the fourth round's rules of
// docs/plan-format.md §15.2, each on a small tree of our own wording — the
// package named after the module, orders and deduplicated delivery stated
// as what a thing is for, what the protocol does with failed and departed
// nodes, a setting that bounds a protocol step, and sentences that only
// look like promises (an example, a stated loss, a comparison page, a
// note on use, processor atomics, a timeout to wait).
func TestClaimsFourthRoundPatterns(t *testing.T) {
	for _, tc := range []claimCase{
		{
			name: "the package named after the module is core, its command and subpackages are not",
			files: map[string]string{
				"recall/relay.go":           "package recall\n\n// Relay blocks until the update is delivered to every member.\nfunc Relay() {}\n",
				"cmd/recall/main.go":        "package main\n\n// main blocks until the update is delivered to every member.\nfunc main() {}\n",
				"cmd/recall/agent/agent.go": "package agent\n\n// Run blocks until the update is delivered to every member.\nfunc Run() {}\n",
			},
			want:  map[string]string{"recall/relay.go:3": "ordering"},
			never: []string{"cmd/recall/main.go:3", "cmd/recall/agent/agent.go:3"},
		},
		{
			name: "an order stated as what a thing is for, or as how things are delivered",
			files: map[string]string{
				"store/watch.go":   "package store\n\n// Watch streams the changes of a key. Changes are delivered to the watcher\n// in the correct order.\nfunc Watch() {}\n",
				"cluster/stamp.go": "package cluster\n\n// Stamp is the logical time of a write, used for cluster-wide ordering of\n// writes.\ntype Stamp uint64\n",
			},
			want: map[string]string{"store/watch.go:4": "ordering", "cluster/stamp.go:3": "ordering"},
		},
		{
			name: "deduplicated delivery, stated as what a record is used for",
			files: map[string]string{
				"queue/recent.go": "package queue\n\n// Recent remembers the ids of recent messages. It is used to prevent\n// re-delivery of a message to a subscriber.\ntype Recent struct{}\n",
			},
			want: map[string]string{"queue/recent.go:3": "idempotency"},
		},
		{
			name: "a failed node removed, and a silent exit detected as a failure",
			files: map[string]string{
				"cluster/evict.go": "package cluster\n\n// Evict removes a failed member from the group at once.\nfunc Evict() {}\n\n" +
					"// Halt stops the agent without saying goodbye, so its peers will detect the\n// agent's silence as a member failure.\nfunc Halt() {}\n",
			},
			want: map[string]string{"cluster/evict.go:3": "membership", "cluster/evict.go:6": "membership"},
		},
		{
			name: "a node that left does not rejoin when it restarts",
			files: map[string]string{
				"cluster/forget.go": "package cluster\n\n// Forget is used to clear the saved peers, to prevent a reboot from\n// triggering a rejoin after the node has left.\nfunc Forget() {}\n",
			},
			want: map[string]string{"cluster/forget.go:3": "membership"},
		},
		{
			name: "persisted to disk with the thing named in between",
			files: map[string]string{
				"wal/journal.go": "package wal\n\n// Journal takes each change and persists it to disk before it is applied.\ntype Journal struct{}\n",
			},
			want: map[string]string{"wal/journal.go:3": "durability"},
		},
		{
			name: "a setting that bounds a protocol step states the bound; a timeout to wait states none",
			files: map[string]string{
				"cluster/timeouts.go": "package cluster\n\n// Timeouts of the failure detector.\ntype Timeouts struct {\n" +
					"\t// GiveUp is the amount of time to retry a failed peer before considering\n\t// it gone for good.\n\tGiveUp int\n\n" +
					"\t// Quiet is the time a follower goes without a leader before we attempt an\n\t// election.\n\tQuiet int\n\n" +
					"\t// Wait is the amount of time to wait for a broadcast to be delivered.\n\tWait int\n}\n",
			},
			want:  map[string]string{"cluster/timeouts.go:5": "membership", "cluster/timeouts.go:9": "liveness"},
			never: []string{"cluster/timeouts.go:13"},
		},
		{
			name: "an example, a stated loss, a comparison page, a note on use and processor atomics promise nothing",
			files: map[string]string{
				"store/batch.go":   "package store\n\n// Batch groups writes. For example, if it is set to 5 seconds, every write\n// received within 5 seconds is applied as one.\ntype Batch struct{}\n",
				"docs/keys.md":     "# Keys\n\nBy default, key changes will not be written to disk, and will be lost when the agent restarts.\n",
				"docs/vs-other.md": "# Compared\n\nThe other systems are strongly consistent and keep every write durable.\n",
				"cluster/keys.go":  "package cluster\n\n// ListKeys gathers the installed keys from every member. This is useful to\n// operators to ensure that no unused key is left on any node.\nfunc ListKeys() {}\n",
				"store/counter.go": "package store\n\n// Counter is a thread safe count of writes. It uses atomic operations for all\n// of its methods, and falls back to a lock after many CAS failures.\ntype Counter struct{}\n",
			},
			never: []string{"store/batch.go:3", "store/batch.go:4", "docs/keys.md:3", "docs/vs-other.md:3",
				"cluster/keys.go:3", "cluster/keys.go:4", "store/counter.go:3", "store/counter.go:4"},
		},
	} {
		t.Run(tc.name, tc.check)
	}
}
