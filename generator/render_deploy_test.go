package generator

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
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

// A driver `dstgen driver new` wrote as a module of its own, in a SUT tree
// that is no Go module and whose docs never `go run` it, is the driver
// deploy uploads and the benchmark runs; a main package that is not on
// the driver package is not.
func TestInitFindsADriverNewSkeleton(t *testing.T) {
	skel, err := DriverSkeleton("go", "load", "", true)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name                  string
		files                 map[string][]byte
		wantDriver, wantBench string
	}{
		{"driver new skeleton", map[string][]byte{"load/go.mod": skel["go.mod"], "load/main.go": skel["main.go"]},
			"load", "{{ .Host.Workdir }}/bin/load"},
		{"a main package of another kind", map[string][]byte{"tool/go.mod": []byte("module tool\n\ngo 1.26\n"), "tool/main.go": []byte("package main\n\nfunc main() {}\n")},
			"", "TODO("},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sut := t.TempDir()
			c.files["README.md"] = []byte("# svc\n\n## Install\n\n```sh\nsudo apt-get install -y svc\n```\n")
			for name, data := range c.files {
				p := filepath.Join(sut, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out := filepath.Join(t.TempDir(), "testing")
			mustInit(t, InitOptions{SUT: sut, Out: out, Yes: true})
			data, err := os.ReadFile(filepath.Join(out, "env.example.yml"))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Benchmark struct{ Command, Driver string } `yaml:"benchmark"`
			}
			if err := yaml.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			if filepath.Base(doc.Benchmark.Driver) != c.wantDriver && !(c.wantDriver == "" && doc.Benchmark.Driver == "") {
				t.Errorf("benchmark.driver %q, want a path ending in %q", doc.Benchmark.Driver, c.wantDriver)
			}
			if !strings.HasPrefix(doc.Benchmark.Command, c.wantBench) {
				t.Errorf("benchmark.command %q, want %q…", doc.Benchmark.Command, c.wantBench)
			}
		})
	}
}

// A docs line that asks the SUT itself whether it answers is its health
// command, with the docs' example address (alone or with a port) made
// this host's; the service manager's lines are not.
func TestHealthCommandFromDocs(t *testing.T) {
	const a = "{{ .Host.Address }}"
	for _, c := range []struct{ line, want string }{
		{"redis-cli -h 10.0.0.1 ping", "redis-cli -h " + a + " ping"},
		{"mysqladmin -h 192.0.2.7 ping", "mysqladmin -h " + a + " ping"},
		{"pg_isready -h 10.0.0.1 -p 5432", "pg_isready -h " + a + " -p 5432"},
		{"etcdctl --endpoints 10.0.0.1:2379,10.0.0.2:2379 endpoint health", "etcdctl --endpoints " + a + ":2379 endpoint health"},
		{"redis-cli -h 127.0.0.1 ping", "redis-cli -h 127.0.0.1 ping"},
		{"systemctl status redis", ""},
		{"ping -c 1 10.0.0.2", ""},
		{"redis-cli -h 10.0.0.2 info replication", ""},
	} {
		got := ""
		if isHealthCommand(c.line) {
			got = hostAddresses(c.line, a)
		}
		if got != c.want {
			t.Errorf("%q: health %q, want %q", c.line, got, c.want)
		}
	}
}

// testing/ names the SUT's files relative to itself when it lies inside
// the SUT (the two move as one), and by absolute path when it does not:
// a `--out /tmp/x` env.yml with "../../../work/app/…" breaks when either
// moves.
func TestInitNamesSUTFilesByWhereTestingLies(t *testing.T) {
	src, err := filepath.Abs("../examples/galera")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		out    func(sut string) string
		isAbs  bool
		prefix string
	}{
		{"inside the SUT", func(sut string) string { return filepath.Join(sut, "testing") }, false, "../"},
		{"inside the SUT, in a dir named ..testing", func(sut string) string { return filepath.Join(sut, "..testing") }, false, "../"},
		{"outside the SUT", func(string) string { return filepath.Join(t.TempDir(), "testing") }, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			sut := filepath.Join(t.TempDir(), "galera")
			if err := os.CopyFS(sut, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			out := c.out(sut)
			mustInit(t, InitOptions{SUT: sut, Out: out, Yes: true})
			data, err := os.ReadFile(filepath.Join(out, "env.example.yml"))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				SUT struct {
					Configs []struct{ Template string } `yaml:"configs"`
				} `yaml:"sut"`
			}
			if err := yaml.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			if len(doc.SUT.Configs) == 0 {
				t.Fatalf("no sut.configs in env.example.yml:\n%s", data)
			}
			for _, cf := range doc.SUT.Configs {
				p := filepath.FromSlash(cf.Template)
				if filepath.IsAbs(p) != c.isAbs || !strings.HasPrefix(cf.Template, c.prefix) {
					t.Errorf("template %q: absolute=%v, want %v (prefix %q)", cf.Template, filepath.IsAbs(p), c.isAbs, c.prefix)
				}
				if !filepath.IsAbs(p) {
					p = filepath.Join(out, p)
				}
				if _, err := os.Stat(p); err != nil {
					t.Errorf("template %q does not name a file from %s: %v", cf.Template, out, err)
				}
			}
			// The Taskfile's SUT_DIR too: go-task's joinPath appended an
			// absolute SUT to ROOT_DIR, and `task build` made and built in
			// out/<the SUT's path> (go-task creates a missing dir).
			cmd := exec.Command(taskBinary(t), "build")
			cmd.Dir = out
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("task build: %v\n%s", err, b)
			}
			if _, err := os.Stat(filepath.Join(out, sut)); err == nil {
				t.Errorf("task build made %s: SUT_DIR is not the SUT", filepath.Join(out, sut))
			}
		})
	}
}
