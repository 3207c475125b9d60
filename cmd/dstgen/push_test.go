package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/runner"
)

// TestPushCollectCLI pushes to two real sshd, collects back into per-host
// dirs, and checks exit codes and the one-line key=value summaries.
func TestPushCollectCLI(t *testing.T) {
	envPath, wd, _, _ := jobCLIEnv(t, 2)
	src := t.TempDir()
	big := bytes.Repeat([]byte("z"), 9<<20)
	if err := os.WriteFile(filepath.Join(src, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "small.txt"), []byte("small\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Both hosts are the same machine: push h1 into dir a, h2 into dir b.
	code, out, errOut := runCLI(t, "push", "h1", filepath.Join(src, "big.bin"), filepath.Join(src, "small.txt"), "a", "--env", envPath)
	if code != 0 || strings.Count(out, "status=ok") != 2 {
		t.Fatalf("push: %d %q %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "progress=transfer") || !strings.Contains(errOut, "pct=100") {
		t.Errorf("no progress for a 9 MiB file: %q", errOut)
	}
	if b, err := os.ReadFile(filepath.Join(wd, "a", "big.bin")); err != nil || !bytes.Equal(b, big) {
		t.Errorf("pushed big.bin differs: %v", err)
	}
	code, out, _ = runCLI(t, "push", "all", filepath.Join(src, "small.txt"), "b", "--env", envPath, "--json")
	var pj struct{ Files []runner.FileResult }
	if err := json.Unmarshal([]byte(out), &pj); err != nil || code != 0 || len(pj.Files) != 2 {
		t.Errorf("push --json to all: %d %q %v", code, out, err)
	}

	into := t.TempDir()
	code, out, errOut = runCLI(t, "collect", "all", "a", "--into", into, "--env", envPath)
	if code != 0 || strings.Count(out, "status=ok") != 4 {
		t.Fatalf("collect all: %d %q %q", code, out, errOut)
	}
	for _, h := range []string{"h1", "h2"} {
		if b, err := os.ReadFile(filepath.Join(into, h, "a", "small.txt")); err != nil || string(b) != "small\n" {
			t.Errorf("%s/a/small.txt: %q %v", h, b, err)
		}
	}
	one := t.TempDir()
	// A name beside the workdir that nothing else makes (not /tmp/x).
	escape := filepath.Base(wd) + "-escape"
	code, _, _ = runCLI(t, "collect", "h1", "a/small.txt", "--into", one, "--env", envPath)
	if _, err := os.Stat(filepath.Join(one, "small.txt")); code != 0 || err != nil {
		t.Errorf("single-host collect lands directly in DIR: code %d, %v", code, err)
	}

	tests := []struct {
		name string
		args []string
		code int
	}{
		{"collect climbing source", []string{"collect", "h1", "a/../../etc/passwd", "--into", one}, 2},
		{"collect no --into", []string{"collect", "h1", "a"}, 2},
		{"collect missing remote", []string{"collect", "h1", "nope", "--into", one}, 2},
		{"push missing local", []string{"push", "h1", filepath.Join(src, "nope"), "a"}, 2},
		{"push climbing dir", []string{"push", "h1", filepath.Join(src, "small.txt"), "../" + escape}, 2},
		{"push unknown target", []string{"push", "zz", filepath.Join(src, "small.txt"), "a"}, 2},
		{"push too few args", []string{"push", "h1", "a"}, 2},
	}
	for _, tc := range tests {
		code, out, errOut := runCLI(t, append(tc.args, "--env", envPath)...)
		if code != tc.code {
			t.Errorf("%s: code %d want %d (%q %q)", tc.name, code, tc.code, out, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(wd, "..", escape)); err == nil {
		t.Error("push wrote outside the workdir")
	}
}
