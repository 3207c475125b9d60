package demo

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/runner"
)

// startHosts starts n demo hosts and returns an env and a pool reaching
// them with strict host key checking.
func startHosts(t *testing.T, n int) (*env.Env, *runner.Pool, []*Host) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dir := t.TempDir()
	keys, err := NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(dir, "id_ed25519")
	if err := keys.WriteKey(keyPath); err != nil {
		t.Fatal(err)
	}
	var hosts []*Host
	var yml strings.Builder
	fmt.Fprintf(&yml, "ssh:\n  user: %q\n  key: %q\n  agent: false\n  known_hosts: %q\n  config: none\n  timeout_s: 15\nworkdir: /nonexistent\nhosts:\n",
		"demo", keyPath, filepath.Join(dir, "known_hosts"))
	for i := range n {
		name := fmt.Sprintf("h%d", i+1)
		h, err := StartHost(ctx, name, filepath.Join(dir, "hosts", name), keys.Signer.PublicKey(), nil, "DEMO_HOST_ENV=given-to-StartHost")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := h.Close(); err != nil {
				t.Error(err)
			}
		})
		hosts = append(hosts, h)
		fmt.Fprintf(&yml, "  - {name: %s, address: 127.0.0.1, port: %d, roles: [r], workdir: %q}\n", name, h.Port(), h.Workdir)
	}
	if err := WriteKnownHosts(filepath.Join(dir, "known_hosts"), hosts); err != nil {
		t.Fatal(err)
	}
	e, err := env.Parse(filepath.Join(dir, "env.yml"), []byte(yml.String()))
	if err != nil {
		t.Fatalf("env: %v\n%s", err, yml.String())
	}
	pool := runner.NewPool(e, runner.Options{})
	t.Cleanup(func() { _ = pool.Close() })
	return e, pool, hosts
}

func TestHostExec(t *testing.T) {
	e, pool, _ := startHosts(t, 1)
	h := e.Hosts[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cases := []struct {
		name, cmd, stdin string
		code             int
		out, errOut      string
	}{
		{"stdout and exit 0", `echo hi; echo "$DSTGEN_WORKDIR" | grep -c hosts/h1`, "", 0, "hi\n1\n", ""},
		{"exit status", "exit 7", "", 7, "", ""},
		{"stderr", "echo oops >&2; exit 1", "", 1, "", "oops\n"},
		{"stdin", "cat", "from stdin", 0, "from stdin", ""},
		{"starts in the host's work dir", "pwd | grep -c 'hosts/h1$'", "", 0, "1\n", ""},
		{"the env given to StartHost is in every command's environment", `echo "$DEMO_HOST_ENV"`, "", 0, "given-to-StartHost\n", ""},
		{"a background child holding stdout does not hang", "sleep 30 & echo started", "", 0, "started\n", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			var in *strings.Reader
			if c.stdin != "" {
				in = strings.NewReader(c.stdin)
			}
			var res runner.Result
			var err error
			if in != nil {
				res, err = pool.Run(ctx, h, c.cmd, in, &out, &errb)
			} else {
				res, err = pool.Run(ctx, h, c.cmd, nil, &out, &errb)
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if res.ExitCode != c.code || out.String() != c.out || errb.String() != c.errOut {
				t.Fatalf("got code=%d out=%q err=%q, want %d %q %q", res.ExitCode, out.String(), errb.String(), c.code, c.out, c.errOut)
			}
		})
	}
}

func TestHostRefusesUnknownKey(t *testing.T) {
	e, _, _ := startHosts(t, 1)
	other, err := NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "other")
	if err := other.WriteKey(p); err != nil {
		t.Fatal(err)
	}
	e.Hosts[0].Key = p
	e.SSH.Key = p
	pool := runner.NewPool(e, runner.Options{Timeout: 10 * time.Second})
	defer pool.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := pool.Run(ctx, e.Hosts[0], "true", nil, nil, nil); err == nil {
		t.Fatal("a key the host does not know logged in")
	}
}

func TestHostDetachedJob(t *testing.T) {
	e, pool, _ := startHosts(t, 1)
	h := e.Hosts[0]
	wd := e.HostWorkdir(h)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := runner.StartJob(ctx, pool, h, wd, "sleeper", []string{"sh", "-c", "echo up; sleep 60"})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	if st.Status != runner.StatusRunning && st.Status != runner.StatusStarted {
		t.Fatalf("start status %q", st.Status)
	}
	st, err = runner.JobStatusOf(ctx, pool, h, wd, "sleeper")
	if err != nil || st.Status != runner.StatusRunning {
		t.Fatalf("status %q err %v, want running", st.Status, err)
	}
	st, err = runner.StopJob(ctx, pool, h, wd, "sleeper", 5*time.Second)
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
	st, err = runner.JobStatusOf(ctx, pool, h, wd, "sleeper")
	if err != nil || st.Status == runner.StatusRunning {
		t.Fatalf("after stop: status %q err %v", st.Status, err)
	}
	short, err := runner.StartJob(ctx, pool, h, wd, "short", []string{"sh", "-c", "exit 3"})
	if err != nil {
		t.Fatalf("start short: %v", err)
	}
	_ = short
	for i := 0; i < 50; i++ {
		st, err = runner.JobStatusOf(ctx, pool, h, wd, "short")
		if err == nil && st.Status != runner.StatusRunning {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st.RC == nil || *st.RC != 3 {
		t.Fatalf("short job: status %q rc %v, want finished rc 3", st.Status, st.RC)
	}
}

func TestHostSFTPPushCollect(t *testing.T) {
	e, pool, _ := startHosts(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	local := filepath.Join(t.TempDir(), "payload.txt")
	if err := os.WriteFile(local, []byte("payload\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := runner.Push(ctx, pool, e.Hosts, []string{local}, "up", 0, nil)
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	for _, r := range res {
		if r.Status != runner.FileOK {
			t.Fatalf("push %s: %s %s", r.Host, r.Status, r.Reason)
		}
	}
	for _, h := range e.Hosts {
		b, err := os.ReadFile(filepath.Join(e.HostWorkdir(h), "up", "payload.txt"))
		if err != nil || string(b) != "payload\n" {
			t.Fatalf("%s: pushed file %q %v", h.Name, b, err)
		}
	}
	into := t.TempDir()
	got, err := runner.Collect(ctx, pool, e.Hosts[1], []string{"up/payload.txt"}, into, nil)
	if err != nil {
		t.Fatalf("collect: %v", err)
	}
	if len(got) != 1 || got[0].Status != runner.FileOK {
		t.Fatalf("collect: %+v", got)
	}
	b, err := os.ReadFile(got[0].File)
	if err != nil || string(b) != "payload\n" {
		t.Fatalf("collected %q %v", b, err)
	}
}

// An in-process sshd never listens on a port the demo reserved for a
// kvnode or a proxy and closed until it binds.
func TestListenAvoidsReservedPorts(t *testing.T) {
	reserved, err := freePorts(200)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		ln, err := listenAvoiding(reserved)
		if err != nil {
			t.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		if slices.Contains(reserved, p) {
			t.Fatalf("listened on reserved port %d", p)
		}
	}
}
