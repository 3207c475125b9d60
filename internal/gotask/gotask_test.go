package gotask

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// good is the Taskfile both the check and the runner tests use
// (testdata/good.Taskfile.yml, one copy for both packages).
var good = func() string {
	b, err := os.ReadFile("testdata/good.Taskfile.yml")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

func writeTaskfile(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, Taskfile), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRun(t *testing.T) {
	dir := writeTaskfile(t, good)
	for _, tc := range []struct {
		name     string
		task     string
		vars     map[string]string
		wantOut  string
		wantCode int
		wantOK   bool // ExitCode recognised the error as a task failure
		wantErr  bool
	}{
		{"runs with default", "hello", nil, "hello world", 0, true, false},
		{"cli var overrides", "hello", map[string]string{"WHO": "dstgen", "GREETING": "hi"}, "hi dstgen", 0, true, false},
		{"exit code passes through", "fail", map[string]string{"CODE": "7"}, "", 7, true, true},
		{"exit 1 (running) passes through", "fail", map[string]string{"CODE": "1"}, "", 1, true, true},
		{"required var missing", "needs", nil, "", 0, false, true},
		{"required var set", "needs", map[string]string{"SCENARIO": "S1; rm -rf /"}, "S1; rm -rf /", 0, true, false},
		{"unknown task", "nope", nil, "", 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := Run(context.Background(), dir, tc.task, tc.vars, &out, &errb)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Run = %v (stderr %q)", err, errb.String())
			}
			if tc.wantOut != "" && !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("stdout %q lacks %q", out.String(), tc.wantOut)
			}
			if err != nil {
				code, ok := ExitCode(err)
				if ok != tc.wantOK || (ok && code != tc.wantCode) {
					t.Errorf("ExitCode = %d, %v; want %d, %v", code, ok, tc.wantCode, tc.wantOK)
				}
			}
		})
	}
}

func TestRunCancel(t *testing.T) {
	dir := writeTaskfile(t, good)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := Run(ctx, dir, "slow", nil, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil {
		t.Fatal("cancelled task reported success")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cancel took %v", d)
	}
}

func TestTasks(t *testing.T) {
	names, err := Tasks(writeTaskfile(t, good))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != "fail,hello,needs,slow" {
		t.Errorf("Tasks = %v", names)
	}
}
