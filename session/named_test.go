package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A named session is found under its plan's slug like a stamped one, as
// old as its log's last write: the one a run just added to is the newest,
// so `task analyze` after `run:scenario SESSION=name` judges the whole of it.
func TestNamedSessionListedByItsLog(t *testing.T) {
	root := t.TempDir()
	stamped := NewDir(root, "plan", time.Now().Add(-time.Hour))
	named, err := NamedDir(root, "plan", "nightly")
	if err != nil || named != filepath.Join(root, "plan", "nightly") {
		t.Fatalf("NamedDir = %q, %v", named, err)
	}
	for _, d := range []string{stamped, named} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, SessionLog), []byte("# Session log\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A dir under the slug without a session log is no session.
	if err := os.MkdirAll(filepath.Join(root, "plan", "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := List(root); len(got) != 2 || got[0] != named || got[1] != stamped {
		t.Errorf("List = %v, want the named session (just written) then the stamped one", got)
	}
	// Once the stamped session is written later, it is the newer one.
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(named, SessionLog), old, old); err != nil {
		t.Fatal(err)
	}
	if got, _ := Find(root); got != stamped {
		t.Errorf("Find = %s, want %s", got, stamped)
	}
	if p, _ := Previous(stamped); p != "" {
		t.Errorf("Previous(stamped) = %q: a named session is no earlier run of the stamped series", p)
	}
	for _, bad := range []string{"", "../x", ".x", "-x", "a/b", strings.Repeat("a", 65)} {
		if _, err := NamedDir(root, "plan", bad); err == nil {
			t.Errorf("NamedDir(%q) accepted", bad)
		}
	}
}
