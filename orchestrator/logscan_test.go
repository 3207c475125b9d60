package orchestrator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The log scan counts marker lines in the collected SUT logs and cites
// them by session-relative file:line; no collected log means no scan.
func TestScanLogs(t *testing.T) {
	sdir := t.TempDir()
	d1 := filepath.Join(sdir, "logs", "S1", "h1", "sut")
	d2 := filepath.Join(sdir, "logs", "S1", "h2", "sut")
	for _, d := range []string{d1, d2} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(d1, "stderr"), `{"level":"info","msg":"started"}`+"\n"+`{"level":"warn","msg":"lost leader"}`+"\n"+"panic: runtime error: index out of range\n")
	write(filepath.Join(d2, "stderr"), `{"level":"fatal","msg":"failed to open wal"}`+"\nfine\n")
	ls, err := scanLogs(sdir, []string{d1, d2, filepath.Join(sdir, "logs", "S1", "h3", "sut")})
	if err != nil {
		t.Fatal(err)
	}
	if ls == nil || ls.Found != 2 || ls.Accounted != 0 || len(ls.Hits) != 2 {
		t.Fatalf("scan = %+v, want 2 hits", ls)
	}
	if !strings.HasPrefix(ls.Hits[0], "logs/S1/h1/sut/stderr:3: panic:") || !strings.HasPrefix(ls.Hits[1], "logs/S1/h2/sut/stderr:1: ") {
		t.Errorf("hits %q", ls.Hits)
	}
	if ls, err := scanLogs(sdir, []string{filepath.Join(sdir, "none")}); err != nil || ls != nil {
		t.Errorf("no logs collected: %+v %v, want no scan", ls, err)
	}
}
