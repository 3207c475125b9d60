package generator

import "testing"

// TestClaimsSixthRoundPatterns: the sixth round's rules of
// docs/plan-format.md §15.2, each on a small tree of our own wording — a
// hyphenated word in a one-at-a-time rule, a crash that undoes an
// unfinished transaction, a torn page detected, another process kept out,
// keys walked in sort order, a finished-work wait, a counter bumped
// atomically, a sync wrapper's doc, a user's guarantee and a cost note.
func TestClaimsSixthRoundPatterns(t *testing.T) {
	for _, tc := range []claimCase{
		{
			name: "one read-write thing at a time, hyphen and all",
			files: map[string]string{
				"store/doc.go": "// Package store keeps pages in one file.\n//\n// Many readers may look at the file together. Only one read-write session is\n// allowed at a time.\npackage store\n",
			},
			want: map[string]string{"store/doc.go:3": "safety"},
		},
		{
			name: "a crash undoes an unfinished transaction, with no recovery step",
			files: map[string]string{
				"store/doc.go": "// Package store keeps pages in one file.\n//\n// The file needs no recovery step after a crash of the host.\npackage store\n",
				"store/tx.go": "package store\n\n// Run runs fn in a transaction. When fn fails, the entire transaction is\n// rolled back.\nfunc Run() {}\n\n" +
					"// Tx is a transaction. A transaction whose commit was cut short is simply rolled back\n// after a crash.\ntype Tx struct{}\n",
			},
			want: map[string]string{"store/doc.go:3": "durability", "store/tx.go:3": "isolation", "store/tx.go:7": "isolation"},
		},
		{
			name: "a torn page is detected; another process is kept out",
			files: map[string]string{
				"store/page.go": "package store\n\n// Page is a page of the file. A torn page is detected on open and the\n// spare copy is read in its place.\ntype Page struct{}\n",
				"store/open.go": "package store\n\n// Open opens the file. A second process that wants to write cannot open\n// the file at the same time.\nfunc Open() {}\n",
			},
			want: map[string]string{"store/page.go:3": "durability", "store/open.go:3": "safety"},
		},
		{
			name: "keys walked in sort order; waits for open work; runs after commit; writes every change to disk",
			files: map[string]string{
				"store/iter.go":  "package store\n\n// Iter traverses the keys of a table in byte order.\ntype Iter struct{}\n",
				"store/close.go": "package store\n\n// Shut frees the file. It blocks waiting for all open transactions to\n// finish first.\nfunc Shut() {}\n",
				"store/hook.go":  "package store\n\n// AfterCommit registers a step to be executed after the transaction\n// successfully commits.\nfunc AfterCommit() {}\n",
				"kv/save.go":     "package kv\n\n// Save writes all changes to disk and then the header.\nfunc Save() {}\n",
			},
			want: map[string]string{"store/iter.go:3": "ordering", "store/close.go:3": "ordering", "store/hook.go:3": "ordering", "kv/save.go:3": "durability"},
		},
		{
			name: "a counter bumped atomically, a sync wrapper, a user's guarantee and a cost note are no promises",
			files: map[string]string{
				"store/stats.go": "package store\n\n// AddReads increases the read counter atomically and returns the total.\nfunc AddReads(n int) int { return n }\n",
				"store/sync.go":  "package store\n\n// fsyncFile flushes written data of the file to the device.\nfunc fsyncFile() error { return nil }\n",
				"README.md":      "# Store\n\nOpen your tables right after start so you can guarantee that they exist for later transactions.\n",
				"store/grow.go":  "package store\n\n// Grow adds room in big steps. This is done to reduce the cost of fsync when\n// the data file grows.\nfunc Grow() {}\n",
			},
			never: []string{"store/stats.go:3", "store/sync.go:3", "README.md:3", "store/grow.go:3", "store/grow.go:4"},
		},
	} {
		t.Run(tc.name, tc.check)
	}
}
