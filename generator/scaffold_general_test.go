package generator

import (
	"context"
	"testing"
)

// TestClaimsGeneralPatterns: the third round's rules of docs/plan-format.md
// §15.2, each on a small tree of our own wording — a guarantee in no other
// kind's words, protocol properties of a core package, an implementer's
// MUST, the "is used to" doc idiom and merging by package, kind and words.
// want are file:line that must be listed (as a candidate or merged into
// one) with that category, own those that must be a candidate of their
// own (not merged), never those that must not be listed at all.
func TestClaimsGeneralPatterns(t *testing.T) {
	for _, tc := range []claimCase{
		{
			name: "a guarantee in no other kind's words",
			files: map[string]string{
				"send.go": "package recall\n\n// SendAcked sends one message to a peer over a stream. Arrival of the\n// message is guaranteed when no error comes back.\nfunc SendAcked() {}\n",
				"args.go": "package recall\n\n// equal compares two headers. Both of them are guaranteed to be non-nil.\nfunc equal() {}\n",
			},
			want:  map[string]string{"send.go:4": "safety"},
			never: []string{"args.go:3"},
		},
		{
			name: "a barrier that waits for every earlier write, in a core package only",
			files: map[string]string{
				"cluster/fence.go":      "package cluster\n\n// Fence is used to issue a marker that blocks until every earlier\n// write has been applied to the state machine.\nfunc Fence() {}\n",
				"internal/util/wait.go": "package util\n\n// Drain is used to issue a marker that blocks until every earlier\n// write has been applied to the state machine.\nfunc Drain() {}\n",
			},
			want:  map[string]string{"cluster/fence.go:3": "ordering"},
			never: []string{"internal/util/wait.go:3"},
		},
		{
			name: "a leader steps down, said in the first person",
			files: map[string]string{
				"raft/lease.go": "package raft\n\n// LeaseTimeout bounds leadership. If a leader cannot reach a majority for a\n// whole lease, we will step down as leader.\nconst LeaseTimeout = 1\n",
			},
			want: map[string]string{"raft/lease.go:4": "safety"},
		},
		{
			name: "at most one change at a time, a rule not a hedge",
			files: map[string]string{
				"raft/config.go": "package raft\n\n// configs tracks the membership of the group.\n// Note that there can be at most one uncommitted membership change at a\n// time (the next may not be started until the prior one has committed).\ntype configs struct{}\n",
			},
			want: map[string]string{"raft/config.go:4": "safety"},
		},
		{
			name: "the state machine is called once an entry is committed",
			files: map[string]string{
				"statemachine/fsm.go": "package statemachine\n\n// FSM is the replicated state.\ntype FSM interface {\n\t// Apply is called once an entry is committed by a majority of the\n\t// replicas.\n\tApply()\n}\n",
			},
			want: map[string]string{"statemachine/fsm.go:5": "safety"},
		},
		{
			name: "suspect before dead, and refutation",
			files: map[string]string{
				"probe.go": "package recall\n\n// SuspectFor is how long an unreachable node is considered suspect before\n// it is declared dead, so that a live node has time to refute.\nconst SuspectFor = 5\n",
			},
			want: map[string]string{"probe.go:3": "membership"},
		},
		{
			name: "an implementer's MUST is an obligation, not a promise",
			files: map[string]string{
				"wal/log.go": "package wal\n\n// SegmentStore keeps log segments. Implementations MUST persist the tail\n// atomically together with the next append.\ntype SegmentStore interface{}\n",
				"wal/seg.go": "package wal\n\n// Seal replaces the segment file atomically: a crash leaves the old one\n// or the new one.\nfunc Seal() {}\n",
			},
			want:  map[string]string{"wal/seg.go:3": "isolation"},
			never: []string{"wal/log.go:3", "wal/log.go:4"},
		},
		{
			name: "the 'is used to' doc idiom is no note on use when a property is stated",
			files: map[string]string{
				"internal/apply/apply.go": "package apply\n\n// Apply is used to apply a write; the write is durable once it returns.\nfunc Apply() {}\n",
				"internal/apply/debug.go": "package apply\n\n// dump writes the durable state out; it is only used for testing.\nfunc dump() {}\n",
			},
			want:  map[string]string{"internal/apply/apply.go:3": "durability"},
			never: []string{"internal/apply/debug.go:3"},
		},
		{
			name: "promises of one kind in one package, and the README beside it, stay apart",
			files: map[string]string{
				"README.md":   "# recall\n\nCommitted entries are durable on a majority of servers.\n",
				"vote.go":     "package recall\n\n// persistVote makes the vote durable before it is granted.\nfunc persistVote() {}\n",
				"snapshot.go": "package recall\n\n// Snapshots are fsynced before they replace the old one, so the swap is\n// crash-safe.\nfunc swap() {}\n",
			},
			own: []string{"README.md:3", "vote.go:3", "snapshot.go:4"},
		},
	} {
		t.Run(tc.name, tc.check)
	}
}

// claimCase is one fixture tree for the claim scanner: files (beside a
// go.mod), the file:line places that must be listed with their category
// (as a candidate or one of its merged places), those that must be
// candidates of their own (not merged), and those never listed.
type claimCase struct {
	name  string
	files map[string]string
	want  map[string]string // file:line → category
	own   []string
	never []string
}

func (tc claimCase) check(t *testing.T) {
	files := map[string]string{"go.mod": "module example.com/recall\n"}
	for k, v := range tc.files {
		files[k] = v
	}
	dir := namedTree(t, "recall", files)
	p, claims := claimsOf(t, dir)
	got, own := map[string]string{}, map[string]bool{}
	for _, c := range claims {
		got[c.Source], own[c.Source] = c.Category, true
		for _, a := range c.Also {
			got[a] = c.Category
		}
		checkClaimLine(t, p.Root, c)
	}
	for src, cat := range tc.want {
		if g, ok := got[src]; !ok || g != cat {
			t.Errorf("%s: listed %v as %q, want a %s claim", src, ok, g, cat)
		}
	}
	for _, src := range tc.own {
		if !own[src] {
			t.Errorf("%s: not a candidate of its own (merged: %v)", src, got[src] != "")
		}
	}
	for _, src := range tc.never {
		if _, ok := got[src]; ok {
			t.Errorf("%s listed: not a promise", src)
		}
	}
	if t.Failed() {
		all, _ := scoreTree(context.Background(), p)
		for _, c := range all {
			t.Logf("scored %s %d %s %q %v", c.c.Source, c.c.Score, c.c.Kind, c.c.Text, c.c.Why)
		}
	}
}
