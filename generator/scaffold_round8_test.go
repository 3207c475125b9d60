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
				"store/snap.go":   "package store\n\n// Snap offers a read-only point-in-time view of the data for reads.\ntype Snap struct{}\n",
				"store/view.go":   "package store\n\n// View is a read handle. All iterators opened from one handle observe a stable snapshot of the data.\ntype Handle struct{}\n",
				"store/cursor.go": "package store\n\n// NewCursor opens a cursor over the log. The cursor observes all of the log's existing writes,\n// but no later writes.\nfunc NewCursor() {}\n",
				"store/group.go":  "package store\n\n// Group collects puts. A key may be put many times in one group, and only the last write\n// to a key is visible.\ntype Group struct{}\n",
			},
			want: map[string]string{"store/snap.go:3": "isolation", "store/view.go:3": "isolation", "store/cursor.go:3": "isolation", "store/group.go:3": "isolation"},
		},
		{
			name: "the directory lock, a function named after its durability step, a sequence order under an invariant, a stable format",
			files: map[string]string{
				"store/lock.go": "package store\n\n// LockDir takes the directory lock of the data dir, preventing another process from opening\n// the store.\nfunc LockDir() {}\n",
				"store/sync.go": "package store\n\n// Store holds the data.\ntype Store struct{}\n\n// Sync syncs the pending writes to disk.\nfunc (s *Store) Sync() {}\n\n" +
					"// Flush the open segment to stable storage.\nfunc (s *Store) Flush() {}\n",
				"store/pipeline.go": "package store\n\n// Pipeline orders the commits of the store and keeps two invariants:\n//  1. Entries need to be written to the log in sequence number order.\n" +
					"//  2. Entries need to be made visible to reads in sequence number order.\ntype Pipeline struct{}\n",
				"store/format.go": "package store\n\n// The record encoding is the log's on-disk format, and thus stable: new record types may be\n// added, but existing ones will not change.\ntype Record struct{}\n",
			},
			want: map[string]string{"store/lock.go:3": "safety", "store/sync.go:6": "durability", "store/sync.go:9": "durability",
				"store/pipeline.go:5": "ordering", "store/format.go:3": "operational"},
		},
		{
			name: "a promise of another kind guaranteed in a listed paragraph stands on its own",
			files: map[string]string{
				"store/batch.go": "package store\n\n// Batch groups writes, and a batch is always committed atomically.\n// With Sync set, a commit will guarantee that the batch is persisted to disk before it returns.\n" +
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
				"store/detect.go":     "package store\n\ntype detector struct{}\n\n// Changed reports whether the keys changed. When it returns false, the keys before and after\n// are guaranteed to be the same.\nfunc (d *detector) Changed() bool { return false }\n",
				"internal/store/m.go": "package store\n\n// Bound is an upper bound of the file's keys. It is guaranteed to be above the sequence number\n// of every key the file held.\ntype Bound struct{}\n",
				"store/wal.go":        "package store\n\n// Writer writes the log.\ntype Writer interface {\n\t// Append adds a record. If SyncOpts.Done != nil, the wait group is notified when durability is\n\t// guaranteed.\n\tAppend()\n}\n",
				"store/ring.go":       "package store\n\ntype ring struct {\n\t// tail is the oldest entry. Consumers: atomically read and write tail when they pop.\n\ttail int\n}\n",
				"store/metrics.go":    "package store\n\n// Stats are taken from the newest writer, since in the common case with only one writer its\n// numbers are current.\nvar Stats int\n",
				"store/segments.go":   "package store\n\n// SegmentID numbers a segment. In split mode a segment may span many log files, which are\n// totally ordered (by their segID).\ntype SegmentID int\n",
				"store/index.go":      "package store\n\ntype Index struct {\n\t// Sorted in increasing order of key, then by decreasing offset (since higher offsets hold\n\t// higher sequence numbers).\n\tOffsets []int\n}\n",
			},
			never: []string{"store/op.go:6", "store/detect.go:5", "store/detect.go:6", "internal/store/m.go:3", "internal/store/m.go:4", "store/wal.go:5", "store/wal.go:6",
				"store/ring.go:4", "store/metrics.go:3", "store/metrics.go:4", "store/segments.go:3", "store/segments.go:4", "store/index.go:4", "store/index.go:5"},
		},
		{
			name: "an implementation note, a file's note, an assurance denied, a check list, a cost in space, a type's fields, a result, channels",
			files: map[string]string{
				"store/delete.go": "package store\n\n// IMPLEMENTATION NOTE: offering single deletes means the store must never duplicate a write,\n// so the log will never be replayed after its data is flushed.\nfunc SingleDelete() {}\n",
				"store/stats.go":  "package store\n\n// This file implements the background loading of table statistics.\n//\n// A loader job picks up the pending tables. Only one job runs at a time.\n\nvar pending int\n",
				"store/ingest.go": "package store\n\n// Ingest adds files to the store. It cannot, on every platform, ensure that the files are\n// synced to disk.\nfunc Ingest() {}\n",
				"store/check.go":  "package store\n\n// CheckAll checks: every entry in the store is consistent with the level rules.\nfunc CheckAll() {}\n",
				"store/opts.go":   "package store\n\n// Options are the store's knobs.\ntype Options struct {\n\t// DelayFlush is how long a flush waits. Disk space cannot be reclaimed until the deletion\n\t// is flushed.\n\tDelayFlush int\n}\n",
				"store/sopts.go":  "package store\n\n// SyncOpts has a non-empty Done and Err when fsync is requested, else both are empty.\ntype SyncOpts struct{}\n",
				"compact/last.go": "package compact\n\n// Last reports the last stripe. When Last returns true, it is guaranteed that no key has a\n// lower sequence number than the stripe's keys.\nfunc Last() bool { return false }\n",
				"store/wait.go":   "package store\n\nfunc Wait() {\n\t// Each of the channels is guaranteed to be eventually sent to once.\n\tselect {}\n}\n",
			},
			never: []string{"store/delete.go:3", "store/delete.go:4", "store/stats.go:5", "store/ingest.go:3", "store/ingest.go:4", "store/check.go:3",
				"store/opts.go:5", "store/opts.go:6", "store/sopts.go:3", "compact/last.go:3", "compact/last.go:4", "store/wait.go:4"},
		},
	} {
		t.Run(tc.name, tc.check)
	}
}
