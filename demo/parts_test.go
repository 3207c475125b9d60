package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDemoStamps: session names strictly increase, also when two parts
// ask in the same second or the clock steps back.
func TestDemoStamps(t *testing.T) {
	base := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		nows []time.Duration // offsets from base
		want []string
	}{
		{"apart", []time.Duration{0, 3 * time.Second}, []string{"20261202T140000Z", "20261202T140003Z"}},
		{"same second", []time.Duration{100 * time.Millisecond, 900 * time.Millisecond}, []string{"20261202T140000Z", "20261202T140001Z"}},
		{"clock back", []time.Duration{5 * time.Second, 0, 0}, []string{"20261202T140005Z", "20261202T140006Z", "20261202T140007Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &stamps{}
			for i, off := range c.nows {
				if got := s.next(base.Add(off)); got != c.want[i] {
					t.Errorf("name %d = %s, want %s", i, got, c.want[i])
				}
			}
		})
	}
}

// lockedBuffer is an io.Writer the race detector accepts from several
// goroutines; runParts must never need it (part 0 and the opened gates
// write one at a time), but a test must not hide a race in its own buffer.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDemoPartsOrder: the parts run at the same time — the second one
// writes while the first is still running — yet out and log read part by
// part, the second part's session name sorts after the first's even when
// it asks first, and its analysis waits for the first's.
func TestDemoPartsOrder(t *testing.T) {
	var out, log lockedBuffer
	secondWrote := make(chan struct{})
	var names [2]string
	var judgedFirst bool
	var mu sync.Mutex
	parts := []partFunc{
		func(ctx context.Context, out, log io.Writer, tn *turn) (partResult, error) {
			fmt.Fprintln(out, "first: start")
			<-secondWrote // the second part has written already
			time.Sleep(50 * time.Millisecond)
			n, err := tn.sessionName(ctx)
			if err != nil {
				return partResult{}, err
			}
			fmt.Fprintln(log, "first: log")
			mu.Lock()
			names[0], judgedFirst = n, true
			mu.Unlock()
			tn.isJudged()
			fmt.Fprintln(out, "first: end")
			return partResult{heads: []headline{{label: "safe", id: "S1"}}, code: 0}, nil
		},
		func(ctx context.Context, out, log io.Writer, tn *turn) (partResult, error) {
			fmt.Fprintln(out, "second: start")
			fmt.Fprintln(log, "second: log")
			close(secondWrote)
			n, err := tn.sessionName(ctx)
			if err != nil {
				return partResult{}, err
			}
			if err := tn.afterPrevJudged(ctx); err != nil {
				return partResult{}, err
			}
			mu.Lock()
			names[1] = n
			if !judgedFirst {
				t.Error("the second part went on before the first was judged")
			}
			mu.Unlock()
			fmt.Fprintln(out, "second: end")
			return partResult{heads: []headline{{label: "stale-reads", id: "S2"}}, code: 1}, nil
		},
	}
	res, err := runParts(context.Background(), &out, &log, parts)
	if err != nil {
		t.Fatal(err)
	}
	if want := "first: start\nfirst: end\nsecond: start\nsecond: end\n"; out.String() != want {
		t.Errorf("out %q, want %q", out.String(), want)
	}
	if want := "first: log\nsecond: log\n"; log.String() != want {
		t.Errorf("log %q, want %q", log.String(), want)
	}
	if len(res) != 2 || res[0].heads[0].id != "S1" || res[1].heads[0].id != "S2" || res[1].code != 1 {
		t.Errorf("results %+v", res)
	}
	if names[0] == "" || names[1] <= names[0] {
		t.Errorf("session names %q: want the second after the first", names)
	}
}

// TestDemoPartsStop: a part that fails stops the other (its context ends,
// its clean-up still runs and is printed) and its error is the one
// returned; an interrupt of the whole demo stops both.
func TestDemoPartsStop(t *testing.T) {
	boom := errors.New("task deploy: exit status 1")
	waiting := func(name string) partFunc {
		return func(ctx context.Context, out, _ io.Writer, tn *turn) (partResult, error) {
			defer fmt.Fprintf(out, "%s: cleanup\n", name)
			select {
			case <-ctx.Done():
				return partResult{}, fmt.Errorf("%s: interrupted: %w", name, context.Cause(ctx))
			case <-time.After(time.Minute):
				return partResult{}, errors.New(name + ": never stopped")
			}
		}
	}
	failing := func(ctx context.Context, out, _ io.Writer, _ *turn) (partResult, error) {
		fmt.Fprintln(out, "failing: cleanup")
		return partResult{}, boom
	}
	cases := []struct {
		name      string
		parts     []partFunc
		interrupt bool
		wantErr   string
		wantOut   string
	}{
		{"second fails", []partFunc{waiting("first"), failing}, false, boom.Error(), "first: cleanup\nfailing: cleanup\n"},
		{"first fails", []partFunc{failing, waiting("second")}, false, boom.Error(), "failing: cleanup\nsecond: cleanup\n"},
		{"interrupted", []partFunc{waiting("first"), waiting("second")}, true, "interrupted", "first: cleanup\nsecond: cleanup\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.interrupt {
				time.AfterFunc(50*time.Millisecond, cancel)
			}
			var out, log lockedBuffer
			done := make(chan error, 1)
			go func() {
				_, err := runParts(ctx, &out, &log, c.parts)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Errorf("err %v, want one with %q", err, c.wantErr)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("runParts did not return after a part failed")
			}
			if out.String() != c.wantOut {
				t.Errorf("out %q, want %q", out.String(), c.wantOut)
			}
		})
	}
}

// TestDemoStacksShareNothing: two stacks served at the same time from one
// port reservation have no port, directory, key or known_hosts in common,
// and each one's down closes every listener it opened (what Ctrl-C runs).
func TestDemoStacksShareNothing(t *testing.T) {
	dir := t.TempDir()
	d := &demo{dir: dir, bin: filepath.Join(dir, "bin"), start: time.Now()}
	free, err := freePorts(2 * portsPerStack)
	if err != nil {
		t.Fatal(err)
	}
	stacks := []*stack{
		d.newStack(labelSafe, dir, free[:portsPerStack], io.Discard, io.Discard),
		d.newStack(labelStale, filepath.Join(dir, labelStale), free[portsPerStack:], io.Discard, &lockedBuffer{}),
	}
	downs := make([]func(), len(stacks))
	errs := make([]error, len(stacks))
	var wg sync.WaitGroup
	for i, s := range stacks {
		wg.Go(func() { downs[i], errs[i] = s.serve(context.Background()) })
	}
	wg.Wait()
	for i := range stacks {
		defer downs[i]()
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
	}
	ports := map[int]string{}
	claim := func(p int, what string) {
		if prev, ok := ports[p]; ok {
			t.Errorf("port %d is %s and %s", p, prev, what)
		}
		ports[p] = what
	}
	paths := map[string]string{}
	for _, s := range stacks {
		for i, p := range s.ports {
			claim(p, fmt.Sprintf("%s kvnode %d", s.label, i))
		}
		for i, p := range s.ins {
			claim(p, fmt.Sprintf("%s in-%d", s.label, i))
		}
		for k, p := range s.outs {
			claim(p, fmt.Sprintf("%s out-%v", s.label, k))
		}
		_, api, _ := net.SplitHostPort(s.api)
		var ap int
		fmt.Sscan(api, &ap)
		claim(ap, s.label+" proxy api")
		for _, h := range s.hosts {
			claim(h.Port(), s.label+" host "+h.Name)
			if prev, ok := paths[h.Workdir]; ok {
				t.Errorf("workdir %s is %s's and %s's", h.Workdir, prev, s.label)
			}
			paths[h.Workdir] = s.label
		}
		for _, f := range []string{filepath.Join(s.dir, "ssh", "known_hosts"), filepath.Join(s.dir, "ssh", "id_ed25519"), s.testing} {
			if prev, ok := paths[f]; ok {
				t.Errorf("%s is %s's and %s's", f, prev, s.label)
			}
			paths[f] = s.label
		}
		if _, err := os.Stat(filepath.Join(s.dir, "ssh", "known_hosts")); err != nil {
			t.Error(err)
		}
	}
	// Every host and the proxy API answer now, and refuse once down ran.
	listening := func(s *stack) []string {
		var addrs []string
		for _, h := range s.hosts {
			addrs = append(addrs, loopback(h.Port()))
		}
		return append(addrs, s.api)
	}
	for i, s := range stacks {
		addrs := listening(s)
		for _, a := range addrs {
			c, err := net.DialTimeout("tcp", a, 5*time.Second)
			if err != nil {
				t.Fatalf("%s %s before down: %v", s.label, a, err)
			}
			_ = c.Close()
		}
		mine := ownListeners(t)
		for _, a := range addrs {
			if !mine[a] {
				t.Fatalf("%s %s answers, but not from a listener of this process", s.label, a)
			}
		}
		downs[i]()
		downs[i] = func() {}
		// Whether a port still answers says nothing once it is free: another
		// package's test may bind it the moment down released it (suite
		// 82f748e: one port of each stack answered 10 ms after down). What
		// down owns is this process's listeners.
		mine = ownListeners(t)
		for _, a := range addrs {
			if mine[a] {
				t.Errorf("%s %s still listening after down", s.label, a)
			}
		}
	}
}

// ownListeners is the set of IPv4 addresses ("127.0.0.1:port") this process
// holds a listening TCP socket on: the LISTEN rows of /proc/net/tcp whose
// socket inode is one of /proc/self/fd's.
func ownListeners(t *testing.T) map[string]bool {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil {
			if in, ok := strings.CutPrefix(l, "socket:["); ok {
				inodes[strings.TrimSuffix(in, "]")] = true
			}
		}
	}
	b, err := os.ReadFile("/proc/self/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
			continue
		}
		hexIP, hexPort, ok := strings.Cut(f[1], ":")
		var ip, port uint32
		if _, err := fmt.Sscanf(hexIP+" "+hexPort, "%x %x", &ip, &port); !ok || err != nil {
			t.Fatalf("/proc/self/net/tcp: bad local address %q", f[1])
		}
		// The address is the kernel's 32-bit word printed in host order.
		own[fmt.Sprintf("%d.%d.%d.%d:%d", ip&0xff, ip>>8&0xff, ip>>16&0xff, ip>>24, port)] = true
	}
	return own
}

// TestDemoMoveSession: the stale-read part's session moves into the
// results dir of the safe part's (same plan slug and name), is left where
// it is when it is there already, and never replaces a session.
func TestDemoMoveSession(t *testing.T) {
	root := t.TempDir()
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(p, "artifacts", "S2"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	results := filepath.Join(root, "testing", "results")
	cases := []struct {
		name, sess, want, wantErr string
		before                    func()
	}{
		{name: "moved", sess: filepath.Join(root, "stale-reads", "testing", "results", "kv", "20261202T140001Z"),
			want: filepath.Join(results, "kv", "20261202T140001Z")},
		{name: "there already", sess: filepath.Join(results, "kv", "20261202T140002Z"),
			want: filepath.Join(results, "kv", "20261202T140002Z")},
		{name: "taken", sess: filepath.Join(root, "other", "results", "kv", "20261202T140003Z"), wantErr: "exists",
			before: func() { mk(filepath.Join(results, "kv", "20261202T140003Z")) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mk(c.sess)
			if c.before != nil {
				c.before()
			}
			got, err := moveSession(c.sess, results)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				if _, err := os.Stat(c.sess); err != nil {
					t.Errorf("the session moved anyway: %v", err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("moveSession = %q, %v; want %q", got, err, c.want)
			}
			if _, err := os.Stat(filepath.Join(got, "artifacts", "S2")); err != nil {
				t.Error(err)
			}
		})
	}
}
