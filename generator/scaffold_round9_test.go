package generator

import "testing"

// TestClaimsNinthRoundPatterns: the ninth round's rules of
// docs/plan-format.md §15.2, each on a small tree of our own wording —
// an error's doc that names what it refuses (a write in a read-only
// transaction, a finished transaction used again, a data directory
// another holder has locked, a checksum that does not match), one
// read/write transaction at a time, what a package says it is (a
// persistent store), a Sync whose doc commits to stable storage, a stale
// value that never overwrites a newer one, and a reader's view of the
// data as it was when its transaction began; and, beside them, the noise
// those rules must not read: a deprecated declaration's doc, an interface
// to be implemented by the user, a persistent store that is not what the
// package is, and a save step that is no durability call.
func TestClaimsNinthRoundPatterns(t *testing.T) {
	for _, tc := range []claimCase{
		{
			name: "errors whose docs name what they refuse, but not a deprecated one",
			files: map[string]string{
				"store/old.go":     errVarFile("ErrRO", "is returned when a write is attempted in a read-only transaction.\n\t//\n\t// Deprecated: use the errors package."),
				"store/errro.go":   errVarFile("ErrNoWrites", "is returned when a put or delete is attempted inside a read-only transaction."),
				"store/errdone.go": errVarFile("ErrFinished", "is returned if a transaction that was already committed or aborted is\n\t// committed again."),
				"store/errbusy.go": errVarFile("ErrBusy", "is returned when the data directory is already locked by another open store."),
				"store/errsum.go":  errVarFile("ErrBadSum", "is returned when the checksum of a record does not match its bytes."),
			},
			want:  map[string]string{"store/errro.go:6": "boundary", "store/errdone.go:6": "safety", "store/errbusy.go:6": "safety", "store/errsum.go:6": "durability"},
			own:   []string{"store/errro.go:6", "store/errdone.go:6", "store/errbusy.go:6", "store/errsum.go:6"},
			never: []string{"store/old.go:6"},
		},
		{
			name: "one read/write transaction at a time, a persistent store, a Sync to stable storage; not an implementer's store nor a save step",
			files: map[string]string{
				"store/sm.go": "package store\n\n// DiskMachine is the interface to be implemented by a state machine whose state is always\n" +
					"// persisted on disk by the application.\ntype DiskMachine interface{}\n",
				"store/logdb.go": "package store\n\n// LogReader is a read-only interface to the underlying persistent storage of the log entries.\n" +
					"type LogReader interface{}\n",
				"store/save.go": "package store\n\n// SaveIndex saves the index file of the segment to disk and writes its entry in the log.\n" +
					"func SaveIndex() {}\n",
				"store/begin.go": "package store\n\n// Begin starts a transaction. Many read-only transactions run side by side, but there can\n" +
					"// only be one read/write transaction at a time.\nfunc Begin() {}\n",
				"store/doc.go": "// Package store implements a small, embeddable and persistent key/value store.\n//\n" +
					"// Its transactions are serializable.\npackage store\n",
				"store/seg.go": "package store\n\n// Segment is one file of the log.\ntype Segment struct{}\n\n" +
					"// Sync commits the written part of the segment to stable storage.\nfunc (s *Segment) Sync() error { return nil }\n",
			},
			want:  map[string]string{"store/begin.go:4": "safety", "store/doc.go:1": "durability", "store/doc.go:3": "isolation", "store/seg.go:6": "durability"},
			own:   []string{"store/begin.go:4", "store/doc.go:1", "store/doc.go:3", "store/seg.go:6"},
			never: []string{"store/sm.go:3", "store/sm.go:4", "store/logdb.go:3", "store/save.go:3"},
		},
		{
			name: "a stale value never overwrites a newer one; a reader's view as it was when its transaction began",
			files: map[string]string{
				"store/compact.go": "package store\n\n// Compact rewrites the live records into a new segment. This keeps a compaction from overwriting\n" +
					"// newer entries written after it began.\nfunc Compact() {}\n",
				"store/replay.go": "package store\n\n// Replay reads compacted segments before live ones, so newer values always replace stale ones.\nfunc Replay() {}\n",
				"docs/reads.md":   "# Reads\n\nA transaction has a consistent view of the store as it existed at the moment the transaction began.\n",
			},
			want: map[string]string{"store/compact.go:3": "isolation", "store/replay.go:3": "isolation", "docs/reads.md:3": "isolation"},
			own:  []string{"store/compact.go:3", "store/replay.go:3", "docs/reads.md:3"},
		},
	} {
		t.Run(tc.name, tc.check)
	}
}

// errVarFile is a file of package store declaring one error variable,
// name, whose doc comment is the name and then doc (its first line is the
// file's line 6).
func errVarFile(name, doc string) string {
	return "package store\n\nimport \"errors\"\n\nvar (\n\t// " + name + " " + doc + "\n\t" + name + " = errors.New(\"" + name + "\")\n)\n"
}
