package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// hostileStrings are values that would run `touch CANARY` (or escape a
// directory) if any layer spliced them into shell text or a path unquoted.
func hostileStrings(canary string) []string {
	return []string{
		"a;touch " + canary,
		"$(touch " + canary + ")",
		"`touch " + canary + "`",
		"'; touch " + canary + "; '",
		`"; touch ` + canary + `; "`,
		"x\ntouch " + canary,
		"-rf",
		"--help",
		"../../../tmp/escape",
		"a b\tc",
		"$HOME",
		"*",
		"|| touch " + canary,
		"&& touch " + canary,
		"> " + canary,
	}
}

func newCanary(t *testing.T) string {
	t.Helper()
	c := "/tmp/dstgen-pwned-" + randSuffix()
	t.Cleanup(func() {
		if _, err := os.Lstat(c); err == nil {
			t.Errorf("COMMAND INJECTION: canary %s was created", c)
			_ = os.Remove(c)
		}
	})
	return c
}

func TestHostileJobInputs(t *testing.T) {
	p, e, _, keys := testPool(t, 1, "", Options{})
	h := e.Hosts[0]
	canary := newCanary(t)
	ctx := context.Background()
	base := sshtest.Workdir(t)
	var outputs bytes.Buffer

	// Hostile job IDs and scenario names are rejected before any round trip.
	for _, s := range hostileStrings(canary) {
		if _, err := StartJob(ctx, p, h, base, s, []string{"true"}); err == nil {
			t.Errorf("StartJob accepted id %q", s)
		}
		for _, f := range []func() error{
			func() error { _, err := JobStatusOf(ctx, p, h, base, s); return err },
			func() error { _, err := StopJob(ctx, p, h, base, s, 0); return err },
			func() error { _, err := JobLogs(ctx, p, h, base, s, 5, false); return err },
		} {
			if f() == nil {
				t.Errorf("job call accepted id %q", s)
			}
		}
	}

	// Hostile argv elements reach the command literally, one word each.
	args := hostileStrings(canary)
	st, err := StartJob(ctx, p, h, base, "argv", append([]string{"printf", "%s\\n"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40 && st.Status != StatusFinished; i++ {
		time.Sleep(50 * time.Millisecond)
		st, _ = JobStatusOf(ctx, p, h, base, "argv")
	}
	out, err := JobLogs(ctx, p, h, base, "argv", 100, false)
	if err != nil {
		t.Fatal(err)
	}
	outputs.Write(out)
	if want := strings.Join(args, "\n") + "\n"; string(out) != want {
		t.Errorf("argv did not arrive literally:\n got %q\nwant %q", out, want)
	}

	// A hostile workdir (env.yml allows any absolute path) is one directory.
	wd := filepath.Join(base, "w;touch "+canary+";$(touch "+canary+")`x`'q\"")
	st, err = StartJob(ctx, p, h, wd, "in-hostile-wd", []string{"sh", "-c", "pwd"})
	if err != nil {
		t.Fatalf("start in hostile workdir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(wd, "jobs", "in-hostile-wd", "meta")); err != nil {
		t.Errorf("job dir not under the literal workdir: %v", err)
	}
	for _, f := range []func() error{
		func() error { _, err := JobStatusOf(ctx, p, h, wd, "in-hostile-wd"); return err },
		func() error { _, err := ListJobs(ctx, p, h, wd); return err },
		func() error { _, err := StopJob(ctx, p, h, wd, "in-hostile-wd", time.Second); return err },
	} {
		if err := f(); err != nil {
			t.Errorf("job call in hostile workdir: %v", err)
		}
	}
	ents, _ := os.ReadDir(base)
	if len(ents) != 2 { // jobs/ and the hostile workdir itself
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("workdir parent holds %q; a hostile workdir was split", names)
	}
	noSecrets(t, keys, outputs.Bytes(), base)
}

func TestHostileFileNames(t *testing.T) {
	p, e, _, keys := testPool(t, 2, "", Options{})
	canary := newCanary(t)
	ctx := context.Background()
	src := t.TempDir()
	remote := sshtest.Workdir(t)
	var locals []string
	for _, s := range hostileStrings(canary) {
		n := strings.ReplaceAll(s, "/", "_")
		locals = append(locals, filepath.Join(src, n))
		writeFile(t, filepath.Join(src, n), []byte("content of "+n), 0o644)
	}
	// A hostile remote dir is one literal directory too.
	dst := filepath.Join(remote, "d;touch "+canary+" $(touch "+canary+")")
	var prog bytes.Buffer
	res, err := Push(ctx, p, e.Hosts[:1], locals, dst, 0, &prog)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		name := filepath.Base(r.Source)
		if strings.ContainsAny(name, "\n") {
			if r.Status != FileRejected {
				t.Errorf("newline name %q: %s, want rejected", name, r.Status)
			}
			continue
		}
		if r.Status != FileOK || r.File != filepath.Join(dst, name) {
			t.Errorf("push %q: status %s file %q (%s); want ok at %q", name, r.Status, r.File, r.Reason, filepath.Join(dst, name))
		}
		if b, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(b) != "content of "+name {
			t.Errorf("pushed %q: %q, %v", name, b, err)
		}
	}
	// Nothing landed outside the remote dir.
	_ = filepath.WalkDir(remote, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Dir(p) != dst {
			t.Errorf("push wrote outside REMOTE_DIR: %s", p)
		}
		return nil
	})

	// Collect those hostile remote names back from both hosts (same
	// machine, so the same files) into per-host dirs.
	into := t.TempDir()
	for _, h := range e.Hosts {
		dir := filepath.Join(into, h.Name)
		res, err := Collect(ctx, p, h, []string{dst}, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Status != FileOK {
				t.Errorf("collect %q from %s: %s %s", r.Source, h.Name, r.Status, r.Reason)
			}
			if rel, err := filepath.Rel(dir, r.File); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("collect reported a file outside DIR: %s", r.File)
			}
		}
	}
	_ = filepath.WalkDir(into, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(into, p)
		parts := strings.Split(rel, string(filepath.Separator))
		if len(parts) != 3 || (parts[0] != "h1" && parts[0] != "h2") || parts[1] != filepath.Base(dst) {
			t.Errorf("collected file at unexpected place %q", rel)
		}
		return nil
	})
	// Remote sources that try to climb are refused before any transfer.
	for _, bad := range []string{"../../etc/passwd", remote + "/../../etc/passwd", "a\nb", "x\x00y"} {
		res, err := Collect(ctx, p, e.Hosts[0], []string{bad}, filepath.Join(into, "bad"), nil)
		if err != nil || len(res) != 1 || res[0].Status != FileRejected {
			t.Errorf("collect %q = %+v, %v; want rejected", bad, res, err)
		}
	}
	if _, err := ResolveRemote("/w", "jobs/../../etc"); err == nil {
		t.Error("ResolveRemote cleaned a '..' instead of refusing it")
	}
	noSecrets(t, keys, prog.Bytes(), into)
}

func TestHostileHostAndEnvValues(t *testing.T) {
	sshtest.Require(t)
	canary := newCanary(t)
	// Host names become directory names for collect (DIR/<host>/).
	for _, s := range hostileStrings(canary) {
		if strings.ContainsAny(s, "/\n") || s == "." || strings.HasPrefix(s, "-") {
			if HostDirName(s) == nil {
				t.Errorf("HostDirName accepted %q", s)
			}
		}
	}
	// A hostile host name in env.yml is only ever a label: it is not sent
	// to any shell, and unknown names are refused by Select.
	p, e, _, _ := testPool(t, 1, "", Options{})
	h := e.Hosts[0]
	h.Name = "h1;touch " + canary
	wd := sshtest.Workdir(t)
	st, err := StartJob(context.Background(), p, h, wd, "named", []string{"true"})
	if err != nil || st.Host != h.Name {
		t.Errorf("start with a hostile host label = %+v, %v", st, err)
	}
	if _, err := e.Select("h1;touch " + canary); err == nil {
		t.Error("Select accepted a host name that is not in env.yml")
	}
}

// noSecrets fails if the private key bytes or the passphrase appear in out
// or in any file under dirs (job meta, index, collected files).
func noSecrets(t *testing.T, k *sshtest.Keys, out []byte, dirs ...string) {
	t.Helper()
	var needles [][]byte
	for _, path := range []string{k.Key, k.EncryptedKey} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if len(l) >= 40 && !strings.HasPrefix(l, "-----") {
				needles = append(needles, []byte(l))
			}
		}
	}
	needles = append(needles, []byte(k.Passphrase))
	check := func(what string, b []byte) {
		for _, n := range needles {
			if bytes.Contains(b, n) {
				t.Errorf("secret material found in %s", what)
				return
			}
		}
	}
	check("output", out)
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, de os.DirEntry, err error) error {
			if err == nil && !de.IsDir() {
				if b, err := os.ReadFile(p); err == nil {
					check(p, b)
				}
			}
			return nil
		})
	}
}
