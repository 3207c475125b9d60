package main

import (
	"os"
	"strings"
	"testing"
)

// TestDemoBadInput: a --bug that is no setting, an --src that is not
// examples/kv and a working directory with no examples/kv above it are
// each one line on stderr and exit 2, before anything is built.
func TestDemoBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown bug", []string{"demo", "--bug", "nonsense"}, `--bug "nonsense": want stale-reads, none or both`},
		{"src not examples/kv", []string{"demo", "--src", t.TempDir()}, "not examples/kv"},
		{"extra argument", []string{"demo", "now"}, "unknown command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runDstgen(t, "", c.args...)
			if code != 2 || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 || out != "" {
				t.Fatalf("exit %d stdout %q stderr %q; want 2 and one line with %q", code, out, errs, c.want)
			}
		})
	}
	t.Run("no examples/kv above the working directory", func(t *testing.T) {
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chdir(t.TempDir()); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = os.Chdir(wd) }()
		code, out, errs := runDstgen(t, "", "demo", "--bug", "none")
		if code != 2 || !strings.Contains(errs, "examples/kv not found") || strings.Count(strings.TrimSpace(errs), "\n") > 0 || out != "" {
			t.Fatalf("exit %d stdout %q stderr %q; want 2 and one line saying examples/kv was not found", code, out, errs)
		}
	})
}

// The demo end to end is TestREADMECommands: it runs the README's
// `go run ./cmd/dstgen demo` block literally and checks its headline
// (checkDemoHeadline), so the demo runs once per suite.

// tail is the last n lines of s.
func tail(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
