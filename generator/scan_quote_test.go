package generator

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestScanBuildCommandsQuoteSUTNames: directory, binary and script names
// come from the SUT and end up in Taskfile commands a person runs with
// `task build`. Each build command found in a tree of hostile names is run
// by a real sh with stand-in build tools on PATH: no command substitution
// or `;` in a name may run, and every tool must receive the name intact.
func TestScanBuildCommandsQuoteSUTNames(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	root := writeTree(t, map[string]string{
		"Cargo.toml":                        "[package]\nname = \"svc\"\n[[bin]]\nname = \"a$(touch pwned1)\"\npath = \"src/a.rs\"\n[[bin]]\nname = \"b`touch pwned2`\"\npath = \"src/b.rs\"\n",
		"we b;touch pwned3/package.json":    `{"name":"web","scripts":{"s$(touch pwned4)":"x","ok":"y"}}`,
		"m;touch pwned5/Makefile":           "build:\n\tgo build -o bin/x .\n",
		"g$(touch pwned6)/go.mod":           "module example.com/g\n",
		"g$(touch pwned6)/main.go":          "package main\n",
		"c'$(touch pwned7)'/CMakeLists.txt": "project(c)\nadd_executable(cx main.cc)\n",
		"j/justfile":                        "soak:\n    ./soak.sh\n",
		"cargo2;touch pwned8/Cargo.toml":    "[package]\nname = \"w\"\n",
		"cargo2;touch pwned8/src/main.rs":   "fn main() {}\n",
		"g$(touch pwned6)/cmd/x;y/main.go":  "package main\n",
	})
	p := scanT(t, root, ScanOptions{})

	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "argv.log")
	// Each stand-in tool logs its argv one word a line, then succeeds.
	stub := "#!/bin/sh\nprintf '%s\\n' \"$(basename \"$0\")\" \"$@\" >>" + log + "\n"
	for _, tool := range []string{"cargo", "npm", "make", "go", "just", "cmake"} {
		if err := os.WriteFile(filepath.Join(bin, tool), []byte(stub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	work := t.TempDir()
	// The commands cd into SUT subdirectories, so they run from a copy of
	// the tree's directory layout inside work.
	for _, b := range p.Build {
		if d := filepath.Dir(b.File); d != "." {
			if err := os.MkdirAll(filepath.Join(work, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	var cmds []string
	for _, b := range p.Build {
		cmds = append(cmds, b.Commands...)
	}
	for _, a := range p.Artifacts {
		cmds = append(cmds, a.Build)
	}
	if len(cmds) < 8 {
		t.Fatalf("only %d build commands found: %q", len(cmds), cmds)
	}
	for _, c := range cmds {
		cmd := exec.Command(sh, "-c", c)
		cmd.Dir = work
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", c, err, out)
		}
	}
	left, _ := filepath.Glob(filepath.Join(work, "**", "pwned*"))
	top, _ := filepath.Glob(filepath.Join(work, "pwned*"))
	if left = append(left, top...); len(left) > 0 {
		t.Errorf("a SUT name ran a command: %v", left)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Split(string(data), "\n")
	for _, want := range []string{"a$(touch pwned1)", "b`touch pwned2`", "we b;touch pwned3", "s$(touch pwned4)", "m;touch pwned5", "./cmd/x;y", "soak"} {
		if !slices.Contains(words, want) {
			t.Errorf("no tool received %q as one argument; argv log:\n%s", want, data)
		}
	}
}
