package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/testbed"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// TestTestbedNotRoot: any user but root gets the one-line reason and exit 2,
// with nothing made. As root, the real binary is run as nobody.
func TestTestbedNotRoot(t *testing.T) {
	const want = "dstgen testbed: needs root (creates network namespaces and a bridge); run it with sudo\n"
	if os.Geteuid() != 0 {
		code, out, errOut := runCLI(t, "testbed", "up", "2", "--dir", filepath.Join(t.TempDir(), "tb"))
		if code != 2 || errOut != want || out != "" {
			t.Fatalf("not root: code %d out %q err %q; want 2 and %q", code, out, errOut, want)
		}
		return
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) missing: cannot drop root")
	}
	// nobody cannot enter the test's temp dirs: give it its own copy.
	tmp, err := os.MkdirTemp("", "dstgen-notroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "dstgen.test")
	if err := copyExecutable(buildBinary(t), bin); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--", bin, "testbed", "up", "2", "--dir", filepath.Join(tmp, "tb"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || stderr.String() != want {
		t.Fatalf("as nobody: %v, stdout %q stderr %q; want exit 2 and %q", err, stdout.String(), stderr.String(), want)
	}
	if _, err := os.Stat(filepath.Join(tmp, "tb")); err == nil {
		t.Errorf("up as nobody made %s", filepath.Join(tmp, "tb"))
	}
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// TestTestbedBadInput: a bad N, --roles or --dir is one line and exit 2.
func TestTestbedBadInput(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("testbed: the checks after the root check need root")
	}
	dir := filepath.Join(t.TempDir(), "tb")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"testbed", "up", "0"}, `dstgen testbed: up "0": want a number of hosts 1..20`},
		{[]string{"testbed", "up", "x"}, `dstgen testbed: up "x": want a number of hosts 1..20`},
		{[]string{"testbed", "up", "21"}, `dstgen testbed: up "21": want a number of hosts 1..20`},
		{[]string{"testbed", "up", "3", "--dir", dir, "--roles", "sut,client"}, "dstgen testbed: --roles names 2 role(s) for 3 hosts: want one per host, e.g. sut,sut,client"},
		{[]string{"testbed", "up", "1", "--dir", "/tmp/a b"}, `dstgen testbed: --dir "/tmp/a b": want an absolute path`},
		{[]string{"testbed", "env", "--dir", dir}, "dstgen testbed: no testbed at " + dir + " (dstgen testbed up N makes one)"},
	} {
		code, _, errOut := runCLI(t, c.args...)
		if code != 2 || !strings.HasPrefix(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: code %d err %q; want 2 and one line starting %q", c.args, code, errOut, c.want)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("bad input made %s", dir)
	}
}

// TestTestbedCLI: up prints a line per host and the env.yml path; up again
// says already-up; env prints the YAML and --into rewrites an env.yml
// keeping its other sections; down prints what it removed, then
// nothing-up.
func TestTestbedCLI(t *testing.T) {
	sshtest.LockNet(t)
	if err := testbed.CheckTools(exec.LookPath); err != nil {
		t.Skip("testbed:", err)
	}
	dir := filepath.Join(t.TempDir(), "tb")
	t.Cleanup(func() { _, _, _ = runCLI(t, "testbed", "down", "--dir", dir) })
	code, out, errOut := runCLI(t, "testbed", "up", "2", "--dir", dir, "--roles", "sut+client,db", "--data-mib", "8")
	if code != 0 {
		t.Fatalf("up: code %d out %q err %q", code, out, errOut)
	}
	for _, want := range []string{
		"host=h1 address=10.77.0.11 port=22 roles=sut,client netns=dstgen-tb-1 sshd_pid=",
		"host=h2 address=10.77.0.12 port=22 roles=db netns=dstgen-tb-2 sshd_pid=",
		"\nstatus=up hosts=2 env=" + dir + "/env.yml key=" + dir + "/id_ed25519 known_hosts=" + dir + "/known_hosts user=dstgen-tb\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("up output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "testbed", "up", "2", "--dir", dir)
	if code != 0 || strings.Contains(out, "made=") || !strings.Contains(out, "status=already-up hosts=2") || !strings.Contains(out, "roles=sut,client") {
		t.Errorf("second up: code %d:\n%s", code, out)
	}
	code, out, _ = runCLI(t, "testbed", "env", "--dir", dir)
	if code != 0 || !strings.Contains(out, "\nssh:\n  user: dstgen-tb\n") || !strings.Contains(out, "roles: [sut, client]") {
		t.Errorf("env: code %d:\n%s", code, out)
	}
	into := filepath.Join(t.TempDir(), "env.yml")
	if err := os.WriteFile(into, []byte("# mine\nparameters:\n  a: 1 # keep\nhosts: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, "testbed", "env", "--dir", dir, "--into", into)
	got, _ := os.ReadFile(into)
	if code != 0 || out != "wrote="+into+" hosts=2\n" || !strings.HasPrefix(string(got), "# mine\nparameters:\n  a: 1 # keep\n") || !strings.Contains(string(got), "address: 10.77.0.12") {
		t.Errorf("env --into: code %d out %q err %q; file:\n%s", code, out, errOut, got)
	}
	code, out, errOut = runCLI(t, "testbed", "down", "--dir", dir)
	if code != 0 || !strings.Contains(out, `removed="netns dstgen-tb-2"`) || !strings.HasSuffix(out, "status=down dir="+dir+"\n") {
		t.Errorf("down: code %d out %q err %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, "testbed", "down", "--dir", dir)
	if code != 0 || out != "status=nothing-up dir="+dir+"\n" {
		t.Errorf("second down: code %d out %q", code, out)
	}
}
