// Package golden is the one golden-file helper of dstgen's tests: a test
// renders its output and golden.Check compares it byte for byte with a
// file under testdata/, or rewrites that file when the test binary runs
// with -update:
//
//	go test ./generator -run TestGolden -update
//
// Import it from _test.go files only: importing it registers the -update
// flag, so a package importing it must not define its own -update.
package golden

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// update is the -update flag. A flag is package state by nature; it is
// read only through Update, after the testing package parsed the flags.
var update = flag.Bool("update", false, "rewrite golden files under testdata/ instead of comparing with them")

// Update reports whether the test binary runs with -update, for a test
// that must do more than Check does when rewriting.
func Update() bool { return *update }

// Check compares got with the golden file at path. Under -update it
// writes got there instead (creating the directory). A difference is a
// test error naming the file and the first differing line.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := write(path, got); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run '%s' -update creates it)", err, t.Name())
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from the golden file (go test -run '%s' -update rewrites it, after checking):\n%s\n--- got\n%s", path, t.Name(), FirstDiff(want, got), got)
	}
}

// CheckDir compares a whole tree, got (slash-separated relative path →
// contents), with the golden directory dir: every file must be there with
// the same bytes and no other. Under -update dir is replaced by got.
func CheckDir(t testing.TB, dir string, got map[string][]byte) {
	t.Helper()
	if *update {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		for rel, data := range got {
			if err := write(filepath.Join(dir, filepath.FromSlash(rel)), data); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	want, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatalf("no golden files in %s (go test -run '%s' -update creates them)", dir, t.Name())
	}
	names := make([]string, 0, len(want)+len(got))
	for k := range want {
		names = append(names, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		w, wok := want[n]
		g, gok := got[n]
		switch {
		case !gok:
			t.Errorf("%s: golden file not generated", n)
		case !wok:
			t.Errorf("%s: generated but not in golden", n)
		case !bytes.Equal(w, g):
			t.Errorf("%s differs from golden (run with -update to accept):\n%s", n, FirstDiff(w, g))
		}
	}
}

// ReadDir reads every regular file under root, keyed by its slash-separated
// path relative to root. A missing root is an empty tree.
func ReadDir(root string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if errors.Is(err, fs.ErrNotExist) && len(files) == 0 {
		return files, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", root, err)
	}
	return files, nil
}

// FirstDiff describes the first line where want and got differ.
func FirstDiff(want, got []byte) string {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, w, g)
		}
	}
	return "(same lines, different bytes)"
}

func write(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
