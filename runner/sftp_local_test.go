package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkg/sftp"
)

// pipeSFTP returns a client of an in-process SFTP server over the local
// filesystem: the transfer logic is tested here without SSH; the sshd tests
// cover the real wire.
func pipeSFTP(t *testing.T) *sftp.Client {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	srv, err := sftp.NewServer(struct {
		io.Reader
		io.WriteCloser
	}{sr, sw})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve() }()
	c, err := sftp.NewClientPipe(cr, cw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(); cr.Close(); c.Close(); sr.Close() })
	return c
}

// lyingShell answers every hash request with a wrong hash.
type lyingShell struct{}

func (lyingShell) runScript(context.Context, string) ([]byte, []byte, int, error) {
	return []byte(strings.Repeat("0", 64) + "\n"), nil, 0, nil
}

// noShaShell claims the host has no sha256sum, forcing the SFTP re-read.
type noShaShell struct{}

func (noShaShell) runScript(context.Context, string) ([]byte, []byte, int, error) {
	return []byte("nosha\n"), nil, 0, nil
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

func writeFile(t *testing.T, p string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
}

func noTemps(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("temp file left behind: %s", p)
		}
		return nil
	})
}

func TestPushLocal(t *testing.T) {
	c := pipeSFTP(t)
	src, dst := t.TempDir(), t.TempDir()
	big := bytes.Repeat([]byte("0123456789abcdef"), (9<<20)/16)
	writeFile(t, filepath.Join(src, "bin"), []byte("#!/bin/sh\necho hi\n"), 0o755)
	writeFile(t, filepath.Join(src, "big.dat"), big, 0o644)
	writeFile(t, filepath.Join(src, "tree", "a", "x.txt"), []byte("x"), 0o600)
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "tree", "link")); err != nil {
		t.Fatal(err)
	}
	// An older copy is replaced atomically.
	writeFile(t, filepath.Join(dst, "bin"), []byte("old"), 0o644)

	items, bad := expandLocals([]string{filepath.Join(src, "bin"), filepath.Join(src, "big.dat"), filepath.Join(src, "tree"), filepath.Join(src, "missing")})
	var prog bytes.Buffer
	res := append(bad, pushHost(context.Background(), c, localShell{}, "h1", items, dst, &prog)...)
	got := map[string]FileResult{}
	for _, r := range res {
		got[strings.TrimPrefix(r.File, dst+"/")] = r
	}
	for name, want := range map[string]string{"bin": FileOK, "big.dat": FileOK, "tree/a/x.txt": FileOK, "tree/link": FileRejected, "missing": FileError} {
		if got[name].Status != want {
			t.Errorf("%s: status %q (%s), want %s", name, got[name].Status, got[name].Reason, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "big.dat")); !bytes.Equal(b, big) || got["big.dat"].SHA256 != sum(big) {
		t.Error("big.dat content or sha256 differs")
	}
	if fi, err := os.Stat(filepath.Join(dst, "bin")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("bin mode = %v, %v; want 0755 as local", fi.Mode(), err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "tree", "link")); err == nil {
		t.Error("a local symlink was pushed")
	}
	if !strings.Contains(prog.String(), "progress=transfer") || !strings.Contains(prog.String(), "pct=100") || strings.Contains(prog.String(), "file="+dst+"/bin") {
		t.Errorf("progress = %q; want lines for big.dat only, ending at 100%%", prog.String())
	}
	noTemps(t, dst)
}

func TestPushVerifyFailure(t *testing.T) {
	c := pipeSFTP(t)
	src, dst := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(src, "f"), []byte("payload"), 0o644)
	writeFile(t, filepath.Join(dst, "f"), []byte("old"), 0o644)
	items, _ := expandLocals([]string{filepath.Join(src, "f")})
	res := pushHost(context.Background(), c, lyingShell{}, "h", items, dst, nil)
	if len(res) != 1 || res[0].Status != FileMismatch || !AnyFailed(res) {
		t.Fatalf("push with a lying remote hash = %+v, want mismatch", res)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "f")); string(b) != "old" {
		t.Errorf("target replaced by an unverified copy: %q", b)
	}
	noTemps(t, dst)
	// Without sha256sum on the host the copy is re-read over SFTP.
	res = pushHost(context.Background(), c, noShaShell{}, "h", items, dst, nil)
	if res[0].Status != FileOK {
		t.Errorf("push via SFTP re-read = %+v", res[0])
	}
}

func TestCollectLocal(t *testing.T) {
	c := pipeSFTP(t)
	remote, into, outside := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(remote, "job", "stdout"), []byte("out\n"), 0o644)
	writeFile(t, filepath.Join(remote, "job", "sub", "h.jsonl"), []byte(`{"a":1}`+"\n"), 0o644)
	writeFile(t, filepath.Join(remote, "job", "bad\nname"), []byte("n"), 0o644)
	writeFile(t, filepath.Join(remote, "single.log"), []byte("single"), 0o644)
	writeFile(t, filepath.Join(outside, "secret"), []byte("do not read"), 0o644)
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(remote, "job", "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(remote, "linkdir")); err != nil {
		t.Fatal(err)
	}
	// Symlinks already under DIR must not be written through.
	if err := os.Symlink(filepath.Join(outside, "victim"), filepath.Join(into, "single.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(into, "job")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(into)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	srcs := []string{filepath.Join(remote, "single.log"), filepath.Join(remote, "linkdir"), remote + "/../x", "/", "bad\x00"}
	res := collectHost(context.Background(), c, localShell{}, "h", srcs, root, nil)
	status := map[string]string{}
	for _, r := range res {
		status[r.Source] = r.Status
	}
	want := map[string]string{
		filepath.Join(remote, "single.log"): FileOK,
		filepath.Join(remote, "linkdir"):    FileRejected,
		remote + "/../x":                    FileRejected,
		"/":                                 FileRejected,
		"bad\x00":                           FileRejected,
	}
	for s, w := range want {
		if status[s] != w {
			t.Errorf("source %q: status %q, want %q", s, status[s], w)
		}
	}
	if fi, err := os.Lstat(filepath.Join(into, "single.log")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("single.log is not a regular file in DIR: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "victim")); err == nil {
		t.Error("collect wrote through a local symlink")
	}
	// The job dir collides with a symlink to outside: os.Root refuses it.
	res = collectHost(context.Background(), c, localShell{}, "h", []string{filepath.Join(remote, "job")}, root, nil)
	for _, r := range res {
		if r.Status == FileOK {
			t.Errorf("wrote %s through a symlinked directory", r.File)
		}
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != 1 {
		t.Errorf("outside dir now holds %d entries, want only the secret", len(ents))
	}
	if err := os.Remove(filepath.Join(into, "job")); err != nil {
		t.Fatal(err)
	}
	res = collectHost(context.Background(), c, localShell{}, "h", []string{filepath.Join(remote, "job")}, root, nil)
	got := map[string]string{}
	for _, r := range res {
		got[strings.TrimPrefix(r.Source, remote+"/")] = r.Status
	}
	for s, w := range map[string]string{"job/stdout": FileOK, "job/sub/h.jsonl": FileOK, "job/escape": FileRejected, "job/bad\nname": FileRejected} {
		if got[s] != w {
			t.Errorf("%q: %q, want %q (all: %v)", s, got[s], w, got)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(into, "job", "sub", "h.jsonl")); string(b) != `{"a":1}`+"\n" {
		t.Errorf("collected content = %q", b)
	}
	noTemps(t, into)
}

func TestCollectMismatch(t *testing.T) {
	c := pipeSFTP(t)
	remote, into := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(remote, "f"), []byte("data"), 0o644)
	root, err := os.OpenRoot(into)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	res := collectHost(context.Background(), c, lyingShell{}, "h", []string{filepath.Join(remote, "f")}, root, nil)
	if len(res) != 1 || res[0].Status != FileMismatch {
		t.Fatalf("collect with lying hash = %+v", res)
	}
	if _, err := os.Stat(filepath.Join(into, "f")); err == nil {
		t.Error("unverified file renamed into place")
	}
	noTemps(t, into)
}

func TestNameChecks(t *testing.T) {
	for _, n := range []string{"", ".", "..", "a/b", "a\x00", "a\nb", "a\rb"} {
		if checkName(n) == nil {
			t.Errorf("checkName accepted %q", n)
		}
	}
	for _, n := range []string{"a", "-rf", "$(x)", "a;b", "`x`", "'q'", ".hidden", "a b"} {
		if checkName(n) != nil {
			t.Errorf("checkName rejected %q", n)
		}
	}
	for _, p := range []string{"../a", "a/../b", "a/..", "a\nb", ""} {
		if checkRemoteSource(p) == nil {
			t.Errorf("checkRemoteSource accepted %q", p)
		}
	}
	for _, h := range []string{"../x", "a/b", "-h", ".", "x\ny"} {
		if HostDirName(h) == nil {
			t.Errorf("HostDirName accepted %q", h)
		}
	}
}

func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"a", "..", "a/b", "x\ny", "-rf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkName(s) != nil {
			return
		}
		// An accepted name joined under a dir stays a direct child of it.
		if j := filepath.Join("/base", s); filepath.Dir(j) != "/base" {
			t.Fatalf("accepted %q escapes to %q", s, j)
		}
	})
}

// AnyFailed reports whether some result is not FileOK. Only tests need it:
// the CLI grades results itself (cmd/dstgen filesExit).
func AnyFailed(rs []FileResult) bool {
	for _, r := range rs {
		if r.Status != FileOK {
			return true
		}
	}
	return false
}
