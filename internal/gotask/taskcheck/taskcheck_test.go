package taskcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// good is the Taskfile both the check and the runner tests use
// (testdata/good.Taskfile.yml, one copy for both packages).
var good = func() string {
	b, err := os.ReadFile("../testdata/good.Taskfile.yml")
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

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string // want "" = ok
	}{
		{"valid", good, ""},
		{"yaml syntax", "version: '3'\ntasks:\n  a:\n    cmds: [\n", "parse"},
		{"unknown template function", "version: '3'\ntasks:\n  a:\n    cmds:\n      - echo {{.X | nosuchfunc}}\n", "nosuchfunc"},
		{"bad template syntax in desc", "version: '3'\ntasks:\n  a:\n    desc: '{{if}}'\n    cmds: [echo]\n", "template"},
		{"unsupported schema version", "version: '2'\ntasks:\n  a:\n    cmds: [echo]\n", "version"},
		{"no tasks", "version: '3'\n", "no tasks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(writeTaskfile(t, tc.body))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check(valid) = %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("Check accepted a broken Taskfile (%s)", tc.name)
			case tc.want != "" && !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.want)):
				t.Errorf("Check error %q does not mention %q", err, tc.want)
			}
		})
	}
	if err := Check(t.TempDir()); err == nil {
		t.Error("Check of a dir without Taskfile.yml succeeded")
	}
}
