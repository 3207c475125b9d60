package gotask_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/generator"
	"github.com/dstgen/dstgen/internal/gotask"
	"github.com/dstgen/dstgen/internal/gotask/taskcheck"
	"github.com/dstgen/dstgen/templates"
)

// fixtureSUTs are the generator's fixture SUTs and the bundled example.
var fixtureSUTs = []string{
	"../../generator/testdata/sut/goservice",
	"../../generator/testdata/sut/rustservice",
	"../../generator/testdata/sut/chaostoolbox",
	"../../examples/etcd",
}

func copySUT(t *testing.T, src string) string {
	t.Helper()
	if _, err := os.Stat(src); err != nil {
		t.Skipf("fixture %s not present: %v", src, err)
	}
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if rel == "testing" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestCheckGeneratedFixtures: init (with the real go-task check) succeeds
// on every fixture, and the written Taskfile passes Check again and runs its
// harmless task in-process.
func TestCheckGeneratedFixtures(t *testing.T) {
	for _, src := range fixtureSUTs {
		t.Run(filepath.Base(src), func(t *testing.T) {
			sut := copySUT(t, src)
			res, err := generator.Init(context.Background(), generator.InitOptions{SUT: sut, CheckTaskfile: taskcheck.Check})
			if err != nil {
				t.Fatalf("Init: %v", err)
			}
			if err := taskcheck.Check(res.Out); err != nil {
				t.Errorf("Check(generated): %v", err)
			}
			var out strings.Builder
			if err := gotask.Run(context.Background(), res.Out, "info", map[string]string{"RUN_ID": "r1"}, &out, &out); err != nil {
				t.Fatalf("Run info: %v", err)
			}
			if !strings.Contains(out.String(), "results_dir=results/run_r1") {
				t.Errorf("info output: %q", out.String())
			}
		})
	}
}

// TestInitRefusesTaskfileGoTaskRejects renders a Taskfile that is valid
// YAML but that go-task cannot compile (an unknown template function), and
// checks Init writes nothing.
func TestInitRefusesTaskfileGoTaskRejects(t *testing.T) {
	sut := copySUT(t, fixtureSUTs[0])
	broken := fstest.MapFS{}
	err := fs.WalkDir(templates.FS, templates.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(templates.FS, p)
		broken[p] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	tf := broken["testing/Taskfile.yml.tmpl"]
	tf.Data = append(tf.Data, []byte("\n  broken:\n    desc: broken on purpose\n    cmds:\n      - echo {{.X | nosuchfunction}}\n")...)
	for _, dry := range []bool{true, false} {
		_, err = generator.Init(context.Background(), generator.InitOptions{SUT: sut, Templates: broken, CheckTaskfile: taskcheck.Check, DryRun: dry})
		if err == nil || !strings.Contains(err.Error(), "nosuchfunction") {
			t.Fatalf("Init(dry=%v) with a Taskfile go-task rejects = %v", dry, err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("error is not one line: %q", err)
		}
	}
	if _, err := os.Stat(filepath.Join(sut, "testing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("testing/ written although go-task rejects the Taskfile")
	}
}

// TestGeneratedTasksSafeFromHostileSUTNames generates testing/ for a SUT
// whose package name and binary name carry shell command substitutions,
// then runs the tasks and the script that print or build them — through
// go-task's own interpreter and a real bash, with stand-in build tools —
// and checks no substitution ever ran.
func TestGeneratedTasksSafeFromHostileSUTNames(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	marker := filepath.Join(t.TempDir(), "pwned")
	sut := t.TempDir()
	for name, data := range map[string]string{
		"package.json":   `{"name":"web$(touch ` + marker + `)` + "`touch " + marker + "`" + `\"","scripts":{"build":"tsc"}}`,
		"rs/Cargo.toml":  "[package]\nname = \"rs\"\n[[bin]]\nname = \"a$(touch " + marker + ")\"\npath = \"src/a.rs\"\n",
		"rs/src/a.rs":    "fn main() {}\n",
		"docs/README.md": "# web\n",
	} {
		p := filepath.Join(sut, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := t.TempDir()
	for _, tool := range []string{"cargo", "npm"} {
		if err := os.WriteFile(filepath.Join(bin, tool), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	res, err := generator.Init(context.Background(), generator.InitOptions{SUT: sut, CheckTaskfile: taskcheck.Check})
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	for _, task := range []string{"info", "build", "service:status"} {
		var out strings.Builder
		// build fails on the missing artifact (the stand-in cargo builds
		// nothing); only whether a substitution ran matters here.
		_ = gotask.Run(context.Background(), res.Out, task, map[string]string{"RUN_ID": "r1"}, &out, &out)
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("task %s ran a command from a SUT name:\n%s", task, out.String())
		}
	}
	// The scripts print the project name (remote-setup.sh) and name the
	// SUT's unit and job after it (collect-logs.sh): run both for real.
	for _, args := range [][]string{
		{filepath.Join(res.Out, "scripts", "remote-setup.sh"), "clean-containers"},
		{filepath.Join(res.Out, "scripts", "collect-logs.sh"), t.TempDir(), "1"},
	} {
		cmd := exec.Command(bash, args...)
		cmd.Env = append(os.Environ(), "DSTGEN_WORKDIR="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args[1:], " "), err, out)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s ran a command from the SUT's package name", filepath.Base(args[0]))
		}
	}
	// The name that reaches env.yml (sut.name) is one env.yml accepts.
	ex, err := os.ReadFile(filepath.Join(res.Out, "env.example.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Parse(filepath.Join(res.Out, "env.yml"), ex); err != nil {
		t.Fatalf("env.example.yml of a hostile SUT name does not load: %v", err)
	}
}

// TestInitSUTFileNamesWithQuotesAndBraces: a quote or "{{" in a SUT file
// name (a config template, a unit) must neither break the generated
// Taskfile's YAML nor reach go-task's template engine: init succeeds and
// go-task compiles and lists the result.
func TestInitSUTFileNamesWithQuotesAndBraces(t *testing.T) {
	sut := t.TempDir()
	for name, data := range map[string]string{
		"it's.yml.example":               "a: 1\n",
		"deploy/x{{.ROOT_DIR}}'.service": "[Service]\nExecStart=/bin/true\n",
		"we'ird/Makefile":                "build:\n\tgo build -o bin/y .\n",
	} {
		p := filepath.Join(sut, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := generator.Init(context.Background(), generator.InitOptions{SUT: sut, CheckTaskfile: taskcheck.Check})
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	names, err := gotask.Tasks(res.Out)
	if err != nil {
		t.Fatalf("Tasks: %v", err)
	}
	if !slices.Contains(names, "service:status") || !slices.Contains(names, "deploy:upload") {
		t.Errorf("tasks = %v", names)
	}
	// The names reach env.example.yml's sut: section as YAML-quoted
	// values that load back unchanged (deploy reads them from there).
	ex, err := os.ReadFile(filepath.Join(res.Out, "env.example.yml"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := env.Parse(filepath.Join(res.Out, "env.yml"), ex)
	if err != nil {
		t.Fatalf("env.example.yml does not load: %v", err)
	}
	if len(e.SUT.Configs) != 1 || filepath.Base(e.SUT.Configs[0].Template) != "it's.yml.example" {
		t.Errorf("sut.configs = %+v, want the template it's.yml.example", e.SUT.Configs)
	}
	if len(e.SUT.StopUnits) != 1 || e.SUT.StopUnits[0] != "x{{.ROOT_DIR}}'.service" {
		t.Errorf("sut.stop_units = %q, want the unit's own name", e.SUT.StopUnits)
	}
}
