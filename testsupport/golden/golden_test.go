package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errs  []string
	fatal bool
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return "TestX" }
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatal(args ...any) {
	r.errs = append(r.errs, fmt.Sprint(args...))
	r.fatal = true
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.fatal = true
	runtime.Goexit()
}

// run calls f with a recorder on its own goroutine, so Fatal can stop it.
func run(t *testing.T, f func(tb testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

func setUpdate(t *testing.T, v bool) {
	if err := flag.Set("update", fmt.Sprint(v)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = flag.Set("update", "false") })
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.golden")
	if err := os.WriteFile(p, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := run(t, func(tb testing.TB) { Check(tb, p, []byte("a\nb\n")) }); len(r.errs) != 0 {
		t.Errorf("same bytes: %v", r.errs)
	}
	r := run(t, func(tb testing.TB) { Check(tb, p, []byte("a\nc\n")) })
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], p+" differs") || !strings.Contains(r.errs[0], "line 2:\n  want: b\n  got:  c") {
		t.Errorf("different bytes: %q", r.errs)
	}
	if r := run(t, func(tb testing.TB) { Check(tb, filepath.Join(dir, "missing"), nil) }); !r.fatal || !strings.Contains(r.errs[0], "-update creates it") {
		t.Errorf("missing golden: %q", r.errs)
	}
}

func TestCheckUpdate(t *testing.T) {
	setUpdate(t, true)
	p := filepath.Join(t.TempDir(), "new", "out.golden")
	if r := run(t, func(tb testing.TB) { Check(tb, p, []byte("x\n")) }); len(r.errs) != 0 {
		t.Fatalf("update: %v", r.errs)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "x\n" {
		t.Errorf("update wrote %q, %v", b, err)
	}
	if !Update() {
		t.Error("Update() = false under -update")
	}
}

func TestCheckDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	want := map[string][]byte{"a.txt": []byte("a\n"), "sub/b.txt": []byte("b\n")}
	setUpdate(t, true)
	if r := run(t, func(tb testing.TB) { CheckDir(tb, dir, want) }); len(r.errs) != 0 {
		t.Fatalf("update: %v", r.errs)
	}
	setUpdate(t, false)
	if r := run(t, func(tb testing.TB) { CheckDir(tb, dir, want) }); len(r.errs) != 0 {
		t.Errorf("same tree: %v", r.errs)
	}
	got := map[string][]byte{"a.txt": []byte("A\n"), "c.txt": nil}
	r := run(t, func(tb testing.TB) { CheckDir(tb, dir, got) })
	joined := strings.Join(r.errs, "\n")
	for _, w := range []string{"a.txt differs from golden", "c.txt: generated but not in golden", "sub/b.txt: golden file not generated"} {
		if !strings.Contains(joined, w) {
			t.Errorf("tree errors lack %q:\n%s", w, joined)
		}
	}
	if r := run(t, func(tb testing.TB) { CheckDir(tb, filepath.Join(dir, "none"), got) }); !r.fatal || !strings.Contains(r.errs[0], "no golden files") {
		t.Errorf("missing golden dir: %q", r.errs)
	}
}
