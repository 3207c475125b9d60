package gotask_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/dstgen/dstgen/generator"
	"github.com/dstgen/dstgen/internal/gotask"
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
			res, err := generator.Init(context.Background(), generator.InitOptions{SUT: sut, CheckTaskfile: gotask.Check})
			if err != nil {
				t.Fatalf("Init: %v", err)
			}
			if err := gotask.Check(res.Out); err != nil {
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
		_, err = generator.Init(context.Background(), generator.InitOptions{SUT: sut, Templates: broken, CheckTaskfile: gotask.Check, DryRun: dry})
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
