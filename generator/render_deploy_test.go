package generator

import (
	"os"
	"path/filepath"
	"testing"
)

// A docs line's flags that the driver contract's variables give already
// are dropped from a contract driver's benchmark command.
func TestDropContractFlags(t *testing.T) {
	for in, want := range map[string]string{
		"-endpoints a:1 -rate 200 -out history.jsonl": "-endpoints a:1 -out history.jsonl",
		"--duration=10s -seed 7 -keys 3":              "-keys 3",
		"-run-id x -ratelimit 5":                      "-ratelimit 5",
		"":                                            "",
	} {
		if got := dropContractFlags(in); got != want {
			t.Errorf("dropContractFlags(%q) = %q, want %q", in, got, want)
		}
	}
}

// A SUT directory inside a larger Go module (go.mod above its root) still
// has its main packages found and built from its root; a main package
// whose directory has the binary's name builds into bin/.
func TestScanSUTInsideALargerModule(t *testing.T) {
	mod := t.TempDir()
	sut := filepath.Join(mod, "examples", "kv")
	for p, text := range map[string]string{
		filepath.Join(mod, "go.mod"):                  "module example.com/big\n\ngo 1.26\n",
		filepath.Join(sut, "kvnode", "main.go"):       "package main\n\nfunc main() {}\n",
		filepath.Join(sut, "cmd", "kvctl", "main.go"): "package main\n\nfunc main() {}\n",
		filepath.Join(sut, "node", "node.go"):         "package node\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Scan(t.Context(), sut, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Artifact{}
	for _, a := range p.Artifacts {
		got[a.Name] = a
	}
	if a := got["kvnode"]; a.Path != "bin/kvnode" || a.Build != "go build -o bin/kvnode ./kvnode" || a.GoPackage != "kvnode" {
		t.Errorf("kvnode artifact %+v", a)
	}
	if a := got["kvctl"]; a.Path != "cmd/kvctl" && a.Path != "kvctl" || a.GoPackage != "cmd/kvctl" {
		t.Errorf("kvctl artifact %+v", a)
	}
	if p.Name == "big" {
		t.Errorf("the enclosing module named the SUT: project %q", p.Name)
	}
}
