package demo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/scenarios"
)

// TestFillScenarios: the workload TODOs are replaced by the demo's
// command, S2's first fault becomes a proxy partition of kv3, every entry
// gets a quiesce, the generated comments stay, and the file still loads.
func TestFillScenarios(t *testing.T) {
	dir := t.TempDir()
	d := &stack{d: &demo{dir: dir, bin: filepath.Join(dir, "bin"), health: "kvnode -check 127.0.0.1:{{ .Host.Vars.port }}", cfg: Config{Exe: "/x/dstgen"}},
		dir: dir, testing: dir, ports: []int{7001, 7002, 7003}, api: "127.0.0.1:8473"}
	in := `# generated header
version: 1
plan: ""
scenarios:
  # ---- S1
  - id: "S1"
    name: "a"
    workload:
      command: "TODO(S1.workload.command): write it"
      rate: 200
  - id: "S2"
    name: "b"
    workload:
      command: "TODO(S2.workload.command): write it"
    faults:
      - nemesis: "partition-full"
        targets: "TODO(S2.faults.targets): which"
        at: "5s"
        for: "8s"
        # params: {}
`
	p := filepath.Join(dir, "scenarios.yml")
	if err := os.WriteFile(p, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.fillScenarios(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	for _, want := range []string{
		"# generated header", "# ---- S1",
		`command: "` + filepath.Join(dir, "bin", "workload") + ` -endpoints 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003"`,
		`targets: "kv3"`, `via: "proxy"`, `proxy_api: "127.0.0.1:8473"`, `proxies: "in-3,out-3-1,out-3-2"`, `proxy_bin: "/x/dstgen"`,
		`kvnode -check 127.0.0.1:7001 && kvnode -check 127.0.0.1:7002 && kvnode -check 127.0.0.1:7003`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scenarios.yml lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "TODO(") {
		t.Errorf("a TODO is left:\n%s", out)
	}
	if _, err := scenarios.Load(p); err != nil {
		t.Errorf("the filled file does not load: %v", err)
	}
}

// TestFillScenariosMissing: a scenarios.yml without S2 (another plan) is
// an error naming the file, not a demo that silently runs less.
func TestFillScenariosMissing(t *testing.T) {
	dir := t.TempDir()
	d := &stack{d: &demo{dir: dir, bin: filepath.Join(dir, "bin")}, dir: dir, testing: dir, ports: []int{1, 2, 3}}
	p := filepath.Join(dir, "scenarios.yml")
	if err := os.WriteFile(p, []byte("version: 1\nscenarios:\n  - id: S1\n    workload: {command: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.fillScenarios(); err == nil || !strings.Contains(err.Error(), "no scenario S2") || !strings.Contains(err.Error(), p) {
		t.Fatalf("err %v; want one naming %s and S2", err, p)
	}
}

// TestFindSource: --src must be an examples/kv (a kvnode/ in it); without
// it, examples/kv is found from the working directory upward.
func TestFindSource(t *testing.T) {
	root := t.TempDir()
	kv := filepath.Join(root, "examples", "kv")
	if err := os.MkdirAll(filepath.Join(kv, "kvnode"), 0o755); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, _, err := findSource(kv); err != nil || got != kv {
		t.Errorf("--src %s: %q %v", kv, got, err)
	}
	if _, _, err := findSource(root); err == nil || !strings.Contains(err.Error(), "not examples/kv") {
		t.Errorf("--src %s: %v, want not examples/kv", root, err)
	}
	t.Chdir(deep)
	if got, _, err := findSource(""); err != nil || got != kv {
		t.Errorf("from %s: %q %v, want %s", deep, got, err, kv)
	}
	t.Chdir(t.TempDir())
	if _, _, err := findSource(""); err == nil || !strings.Contains(err.Error(), "examples/kv not found") {
		t.Errorf("from an empty dir: %v", err)
	}
}

// TestDemoInModule: examples/kv is built with dstgen-task in one go build
// only when it is in dstgen's module (no go.mod of its own between).
func TestDemoInModule(t *testing.T) {
	root := t.TempDir()
	own := filepath.Join(root, "examples", "own")
	for _, p := range []string{filepath.Join(root, "examples", "kv"), own} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(own, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		dir, rel string
		ok       bool
	}{
		{filepath.Join(root, "examples", "kv"), filepath.Join("examples", "kv"), true},
		{own, "", false},
		{filepath.Dir(root), "", false},
	}
	for _, c := range cases {
		if rel, ok := inModule(root, c.dir); rel != c.rel || ok != c.ok {
			t.Errorf("inModule(%s) = %q, %v; want %q, %v", c.dir, rel, ok, c.rel, c.ok)
		}
	}
}
