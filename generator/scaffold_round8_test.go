package generator

import "testing"

// TestClaimsEighthRoundPatterns: the eighth round's rules of
// docs/plan-format.md §15.2, each on a small tree of our own wording —
// what a reader sees (a point-in-time view, a stable snapshot, earlier
// writes but no later ones, only the last write to a key), the directory
// lock that keeps another process out, a function named after the
// durability step it takes, an order by sequence number under a named
// invariant, a stable on-disk format, a second promise guaranteed in a
// listed paragraph; and the noise: a call count, a guarantee on an
// unexported or internal declaration, a nil test and a wait group, a
// field read atomically, a hedge of the common case, an order of log
// files, a field's sort order, an implementation note, a note on what a
// file implements, an assurance denied, a check function's list, a cost in
// space, a type's fields, a result named after "returns" and a body
// comment on channels.
func TestClaimsEighthRoundPatterns(t *testing.T) {
	for _, tc := range []claimCase{
		{
			name: "what a reader sees: a point-in-time view, a stable snapshot, earlier writes only, the last write",
			files: map[string]string{
				"store/snap.go":   "package store\n\n// Snap gives readers a point-in-time view of the data.\ntype Snap struct{}\n",
				"store/view.go":   "package store\n\n// Handle is a read handle. Every reader opened from one handle observes a stable snapshot of the data.\ntype Handle struct{}\n",
				"store/cursor.go": "package store\n\n// NewCursor opens a cursor over the log. A cursor sees the log's earlier writes,\n// but no later ones.\nfunc NewCursor() {}\n",
				"store/group.go":  "package store\n\n// Group collects puts. When one key is put twice, only the last write to it\n// is visible.\ntype Group struct{}\n",
			},
			want: map[string]string{"store/snap.go:3": "isolation", "store/view.go:3": "isolation", "store/cursor.go:3": "isolation", "store/group.go:3": "isolation"},
		},
		{
			name: "the directory lock, a function named after its durability step, a sequence order under an invariant, a stable format",
			files: map[string]string{
				"store/lock.go": "package store\n\n// LockDir holds the directory lock while the store is open, to keep any other process from\n// using the files.\nfunc LockDir() {}\n",
				"store/sync.go": "package store\n\n// Store holds the data.\ntype Store struct{}\n\n// Sync syncs the pending writes to disk.\nfunc (s *Store) Sync() {}\n\n" +
					"// Flush the pending records to stable storage.\nfunc (s *Store) Flush() {}\n",
				"store/pipeline.go": "package store\n\n// Pipeline keeps two invariants of the store:\n//  1. Each record needs to be applied in sequence number order.\n" +
					"//  2. Each record needs to be made readable in sequence number order.\ntype Pipeline struct{}\n",
				"store/format.go": "package store\n\n// Record encodes entries in the on-disk format of the log, which stays stable across\n// releases.\ntype Record struct{}\n",
			},
			want: map[string]string{"store/lock.go:3": "safety", "store/sync.go:6": "durability", "store/sync.go:9": "durability",
				"store/pipeline.go:4": "ordering", "store/format.go:3": "operational"},
		},
		{
			name: "a promise of another kind guaranteed in a listed paragraph stands on its own",
			files: map[string]string{
				"store/batch.go": "package store\n\n// Batch groups writes, and a batch is always committed atomically.\n// When syncing is on, the store guarantees each commit is persisted to disk before it returns.\n" +
					"// Its writes reach the memtable in commit order.\ntype Batch struct{}\n",
			},
			want:  map[string]string{"store/batch.go:3": "isolation", "store/batch.go:4": "durability"},
			own:   []string{"store/batch.go:4"},
			never: []string{"store/batch.go:5"},
		},
		{
			name: "a call count, a guarantee of the implementation's, a nil test, a field read atomically, the common case, log files, a sorted field",
			files: map[string]string{
				"store/op.go":         "package store\n\n// Op is one write.\ntype Op struct{}\n\n// Done finishes the operation. It must be called exactly once, after the write is filled in.\nfunc (o *Op) Done() {}\n",
				"store/detect.go":     "package store\n\ntype detector struct{}\n\n// Changed reports whether the keys moved. A false answer guarantees that both key sets\n// are equal.\nfunc (d *detector) Changed() bool { return false }\n",
				"internal/store/m.go": "package store\n\n// Bound is an upper bound of the file's keys. It is guaranteed to be above the sequence number\n// of every key the file held.\ntype Bound struct{}\n",
				"store/wal.go":        "package store\n\n// Writer writes the log.\ntype Writer interface {\n\t// Append adds a record and, if SyncOpts.Done != nil, signals that wait group once\n\t// durability is guaranteed.\n\tAppend()\n}\n",
				"store/ring.go":       "package store\n\ntype ring struct {\n\t// tail is the oldest slot; poppers atomically read and write it.\n\ttail int\n}\n",
				"store/metrics.go":    "package store\n\n// Stats come from the newest writer: in the common case there is only one writer, so they\n// are up to date.\nvar Stats int\n",
				"store/segments.go":   "package store\n\n// SegmentID names a segment, which can be spread over several log files; those log files\n// are totally ordered by segNo.\ntype SegmentID int\n",
				"store/index.go":      "package store\n\ntype Index struct {\n\t// Sorted by key, and for equal keys by offset, newest first: a higher offset means a\n\t// higher sequence number.\n\tOffsets []int\n}\n",
			},
			never: []string{"store/op.go:6", "store/detect.go:5", "store/detect.go:6", "internal/store/m.go:3", "internal/store/m.go:4", "store/wal.go:5", "store/wal.go:6",
				"store/ring.go:4", "store/metrics.go:3", "store/metrics.go:4", "store/segments.go:3", "store/segments.go:4", "store/index.go:4", "store/index.go:5"},
		},
		{
			name: "an implementation note, a file's note, an assurance denied, a check list, a cost in space, a type's fields, a result, channels",
			files: map[string]string{
				"store/delete.go": "package store\n\n// Implementation note: compaction drops a tombstone only after its data is flushed, so the\n// log is never replayed over it.\nfunc SingleDelete() {}\n",
				"store/stats.go":  "package store\n\n// This file implements the background loading of table statistics.\n//\n// A loader picks up the pending tables. At most one loader runs at a time.\n\nvar pending int\n",
				"store/ingest.go": "package store\n\n// Ingest links files into the store, but it cannot, on all file systems, ensure that they\n// were fsynced.\nfunc Ingest() {}\n",
				"store/check.go":  "package store\n\n// Audit verifies that every key in the store is consistent with its index.\nfunc Audit() {}\n",
				"store/opts.go":   "package store\n\n// Options are the store's knobs.\ntype Options struct {\n\t// DelayFlush is how long a flush waits. Freed space cannot be reclaimed until the\n\t// tombstone is flushed.\n\tDelayFlush int\n}\n",
				"store/sopts.go":  "package store\n\n// SyncOpts has two hooks, set only when a write asks for an fsync.\ntype SyncOpts struct{}\n",
				"compact/last.go": "package compact\n\n// Oldest reports whether the run is the oldest. When Oldest returns true, it is guaranteed\n// that every other key carries a higher sequence number.\nfunc Oldest() bool { return false }\n",
				"store/wait.go":   "package store\n\nfunc Wait() {\n\t// Every done channel is guaranteed to eventually get one value.\n\tselect {}\n}\n",
			},
			never: []string{"store/delete.go:3", "store/delete.go:4", "store/stats.go:5", "store/ingest.go:3", "store/ingest.go:4", "store/check.go:3",
				"store/opts.go:5", "store/opts.go:6", "store/sopts.go:3", "compact/last.go:3", "compact/last.go:4", "store/wait.go:4"},
		},
	} {
		t.Run(tc.name, tc.check)
	}
}
