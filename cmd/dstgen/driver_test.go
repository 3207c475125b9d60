package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// userModule makes the Go module a user outside this repository builds a
// driver in: its go.mod requires github.com/dstgen/dstgen, replaced by
// this checkout (what `go mod edit -replace` gives a user with a clone;
// one with network access runs `go get github.com/dstgen/dstgen@latest`
// instead), and this repository's go.sum, so the build needs no network.
func userModule(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mod := "module example.com/drivers\n\ngo 1.26\n\nrequire github.com/dstgen/dstgen v0.0.0\n\nreplace github.com/dstgen/dstgen => " + root + "\n"
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"go.mod": []byte(mod), "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// goIn runs the go tool in dir, offline, bounded.
func goIn(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The skeleton written into a user's module builds, vets and runs as it
// is: the contract's flags work, and every op fails as not-implemented
// until the client calls are filled in.
func TestDriverNewBuildsAndVets(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool on PATH")
	}
	mod := userModule(t)
	out := filepath.Join(mod, "cmd", "mydrv")
	code, stdout, stderr := runDstgen(t, "", "driver", "new", "--out", out, "--name", "mydrv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "driver=" + filepath.Join(out, "main.go") + " lang=go name=mydrv module=" + filepath.Join(mod, "go.mod") + " written=main.go\n"; !strings.HasPrefix(stdout, want) {
		t.Errorf("stdout %q, want it to start %q", stdout, want)
	}
	if _, err := os.Stat(filepath.Join(out, "go.mod")); err == nil {
		t.Error("a go.mod was written inside a module")
	}
	main, _ := os.ReadFile(filepath.Join(out, "main.go"))
	if n := strings.Count(string(main), "TODO"); n < 2 || !strings.Contains(string(main), "driver.Main(") {
		t.Errorf("main.go: %d TODOs, want the client calls left and driver.Main: %s", n, main)
	}
	bin := filepath.Join(t.TempDir(), "mydrv")
	if out, err := goIn(t, mod, "build", "-o", bin, "./cmd/mydrv"); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if out, err := goIn(t, mod, "vet", "./..."); err != nil {
		t.Fatalf("go vet: %v\n%s", err, out)
	}
	hist := filepath.Join(t.TempDir(), "h.jsonl")
	cmd := exec.Command(bin, "-port", "1", "-ops", "5")
	cmd.Env = append(os.Environ(), "DSTGEN_SUT_HOSTS=127.0.0.1:22", "DSTGEN_HISTORY="+hist, "DSTGEN_RUN_ID=r1")
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 ||
		so.String() != "dstgen-driver: ops_produced=5 ok=0 fail=5 unknown=0\n" || !strings.Contains(se.String(), "first error: not-implemented") {
		t.Errorf("the unfilled skeleton: %v, stdout %q, stderr %q; want exit 1, 5 ops failed as not-implemented", err, so.String(), se.String())
	}
	if data, err := os.ReadFile(hist); err != nil || !strings.Contains(string(data), `"key":"dstgen/r1/k`) || !strings.Contains(string(data), `"node_seen":"127.0.0.1:1"`) {
		t.Errorf("history: %v\n%s", err, data)
	}

	// With its two client calls filled in (here, a map in the process),
	// the skeleton's final-state dump holds what was written, per host.
	src := strings.Replace(string(main), "// TODO: read key from endpoint with the SUT's client library.\n\treturn nil, driver.Fail(\"not-implemented\")",
		"if v, ok := memStore.Load(key); ok {\n\t\treturn v, nil\n\t}\n\treturn nil, nil", 1)
	src = strings.Replace(src, "// TODO: write v to key on endpoint with the SUT's client library.\n\treturn driver.Fail(\"not-implemented\")",
		"memStore.Store(key, v)\n\treturn nil", 1)
	if strings.Count(src, "memStore") != 2 {
		t.Fatalf("the skeleton's get and put no longer read as this test fills them:\n%s", main)
	}
	filled := filepath.Join(mod, "cmd", "filled")
	if err := os.MkdirAll(filled, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"main.go": src, "store.go": "package main\n\nimport \"sync\"\n\nvar memStore sync.Map\n"} {
		if err := os.WriteFile(filepath.Join(filled, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := goIn(t, mod, "build", "-o", bin, "./cmd/filled"); err != nil {
		t.Fatalf("go build of the filled skeleton: %v\n%s", err, out)
	}
	final := filepath.Join(t.TempDir(), "final.json")
	cmd = exec.Command(bin, "-port", "1", "-ops", "40", "-final", final)
	cmd.Env = append(os.Environ(), "DSTGEN_SUT_HOSTS=127.0.0.1", "DSTGEN_HISTORY="+hist, "DSTGEN_RUN_ID=r1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the filled skeleton: %v\n%s", err, out)
	}
	data, err := os.ReadFile(final)
	if err != nil || !strings.Contains(string(data), `"keys":{"dstgen/r1/k`) || !strings.Contains(string(data), `"replicas":{"127.0.0.1:1":{"dstgen/r1/k`) {
		t.Errorf("final state of the filled skeleton: %v\n%s", err, data)
	}
}

// Outside any module driver new writes a go.mod too; a dstgen built from a
// working tree knows no version to require, and says how to add it.
func TestDriverNewWritesGoModOutsideAModule(t *testing.T) {
	dir := t.TempDir()
	if p := enclosingModule(dir); p != "" {
		t.Skipf("the temp dir is inside a module (%s)", p)
	}
	out := filepath.Join(dir, "drv")
	code, stdout, stderr := runDstgen(t, "", "driver", "new", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mod, err := os.ReadFile(filepath.Join(out, "go.mod"))
	if err != nil || string(mod) != "module workload\n\ngo 1.26\n" {
		t.Errorf("go.mod %q (%v), want module workload, go 1.26 and no require", mod, err)
	}
	if !strings.Contains(stdout, "written=go.mod,main.go") || !strings.Contains(stdout, "go get github.com/dstgen/dstgen@latest") {
		t.Errorf("stdout %q: want both files and the go get step", stdout)
	}
}

// An existing file is refused, with one line and exit 2, and left as it
// was; --force overwrites it. Bad flags are exit 2 too.
func TestDriverNewRefusesExistingFiles(t *testing.T) {
	mod := userModule(t)
	main := filepath.Join(mod, "main.go")
	if err := os.WriteFile(main, []byte("package main\n// mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runDstgen(t, "", "driver", "new", "--out", mod)
	if code != 2 || stdout != "" || stderr != "dstgen: driver new: "+main+" exists; --force overwrites it\n" {
		t.Errorf("exit %d, stdout %q, stderr %q: want 2 and one line naming %s", code, stdout, stderr, main)
	}
	if data, _ := os.ReadFile(main); string(data) != "package main\n// mine\n" {
		t.Errorf("main.go changed without --force: %q", data)
	}
	if code, _, stderr := runDstgen(t, "", "driver", "new", "--out", mod, "--force"); code != 0 {
		t.Fatalf("--force: exit %d: %s", code, stderr)
	}
	if data, _ := os.ReadFile(main); !strings.Contains(string(data), "driver.Main(") {
		t.Errorf("--force did not overwrite main.go: %q", data)
	}
	for _, args := range [][]string{{"--lang", "rust"}, {"--name", "My Driver"}, {"extra"}} {
		code, _, stderr := runDstgen(t, "", append([]string{"driver", "new", "--out", t.TempDir()}, args...)...)
		if code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q: want 2 and one line", args, code, stderr)
		}
	}
}
