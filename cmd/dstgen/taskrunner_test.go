package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain builds the task runner `dstgen task` runs (cmd/dstgen-task) from
// this tree and puts it first on PATH, as `go install` of both commands
// would: the task tests then run the code under test, never a stale
// dstgen-task installed earlier.
func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "dstgen-task-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "TestMain:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, taskRunnerName), "../"+taskRunnerName).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "TestMain: go build ../%s: %v\n%s", taskRunnerName, err, out)
		return 1
	}
	os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return m.Run()
}

// TestTaskCommandWithoutRunner: with no dstgen-task beside dstgen or on
// PATH, `dstgen task` exits 2 with one line saying what to install.
func TestTaskCommandWithoutRunner(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Taskfile.yml"), []byte("version: '3'\ntasks:\n  hi: {cmds: [echo hi]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	for _, args := range [][]string{{"task", "hi", "--dir", dir}, {"task", "--list", "--dir", dir}} {
		code, out, errs := runDstgen(t, "", args...)
		if code != 2 || !strings.Contains(errs, "dstgen-task") || !strings.Contains(errs, "go install github.com/dstgen/dstgen/cmd/dstgen-task@") {
			t.Errorf("%v: exit %d stderr %q; want 2 and how to install dstgen-task", args, code, errs)
		}
		if strings.Count(strings.TrimSpace(errs), "\n") > 0 || out != "" {
			t.Errorf("%v: stdout %q, stderr %q; want one line on stderr only", args, out, errs)
		}
	}
}

// TestVersion: `dstgen --version` and `dstgen version` print the module
// version ("devel" in a test binary) and exit 0.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, errs := runDstgen(t, "", args...)
		if code != 0 || out != "dstgen devel\n" || errs != "" {
			t.Errorf("%v: exit %d stdout %q stderr %q; want 0 and \"dstgen devel\"", args, code, out, errs)
		}
	}
}
