package nemesis

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/proxy"
	"github.com/dstgen/dstgen/session"
)

// localExec runs scripts on this machine with sh -c: the proxy faults need
// no root and no namespace, and the SSH transport is proven elsewhere.
type localExec struct{}

func (localExec) Run(ctx context.Context, _ env.Host, script string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg, _, _ := strings.Cut(strings.TrimSpace(errb.String()), "\n")
		return out.String(), &runErr{err: err, msg: msg}
	}
	return out.String(), nil
}

type runErr struct {
	err error
	msg string
}

func (e *runErr) Error() string { return e.err.Error() + ": " + e.msg }

// proxyBed is a real `dstgen proxy serve` (the binary built from this
// tree) with proxy "echo" in front of a real echo upstream, and the host
// the nemesis sees.
type proxyBed struct {
	host   Host
	params map[string]string
	listen string
	api    string
}

func newProxyBed(t *testing.T) proxyBed {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "dstgen")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/dstgen").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	cmd := exec.Command(bin, "proxy", "serve", "--api", "127.0.0.1:0", "--proxy", "echo=127.0.0.1:0>"+ln.Addr().String())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	b := proxyBed{}
	deadline := time.After(60 * time.Second)
	for b.api == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("proxy serve exited before serving")
			}
			kv := map[string]string{}
			for _, f := range strings.Fields(l) {
				if k, v, ok := strings.Cut(f, "="); ok {
					kv[k] = v
				}
			}
			if kv["proxy"] == "echo" {
				b.listen = kv["listen"]
			}
			if kv["status"] == "serving" {
				b.api = kv["api"]
			}
		case <-deadline:
			t.Fatal("proxy serve: not serving within 60s")
		}
	}
	go func() {
		for range lines { // keep the pipe drained until it closes
		}
	}()
	wd := t.TempDir()
	b.host = Host{Host: env.Host{Name: "h1", Address: "127.0.0.1"}, Workdir: wd}
	b.params = map[string]string{"proxy_bin": bin, "proxy_api": b.api}
	return b
}

// echo does n round trips of line on one connection through the proxy
// and returns the slowest.
func (b proxyBed) echo(t *testing.T, n int) (time.Duration, error) {
	t.Helper()
	c, err := net.DialTimeout("tcp", b.listen, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	rd := bufio.NewReader(c)
	var worst time.Duration
	for i := 0; i < n; i++ {
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		start := time.Now()
		if _, err := io.WriteString(c, "ping\n"); err != nil {
			return 0, err
		}
		if _, err := rd.ReadString('\n'); err != nil {
			return 0, err
		}
		worst = max(worst, time.Since(start))
	}
	return worst, nil
}

func (b proxyBed) fault(nemesis, epoch string, params map[string]string) Fault {
	p := map[string]string{}
	for k, v := range b.params {
		p[k] = v
	}
	for k, v := range params {
		p[k] = v
	}
	return Fault{Epoch: epoch, Nemesis: nemesis, Targets: []Host{b.host}, Cluster: []Host{b.host}, Params: p, For: time.Minute}
}

func (b proxyBed) proxy(t *testing.T) proxy.Proxy {
	t.Helper()
	p, err := proxy.NewClient(b.api).Proxy(context.Background(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProxiedLatencyEvidenceAndHeal: latency through the proxy adds at
// least the delay to a round trip; the evidence is unchanged until
// traffic passes and changed after; the target check finds the toxic;
// Heal removes toxic and undo script, and is idempotent.
func TestProxiedLatencyEvidenceAndHeal(t *testing.T) {
	b := newProxyBed(t)
	ctx := context.Background()
	x := localExec{}
	a, err := injectProxied(ctx, x, b.fault("latency", "S1-w1", map[string]string{"delay": "150ms"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(undoPath(b.host.Workdir, "S1-w1", undoKindProxy)); err != nil {
		t.Errorf("undo script: %v", err)
	}
	ev, err := a.Evidence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != ProxyEvidenceKind || ev.Verdict != session.SignalUnchanged {
		t.Errorf("before traffic: %+v, want %s unchanged", ev, ProxyEvidenceKind)
	}
	worst, err := b.echo(t, 3)
	if err != nil {
		t.Fatal(err)
	}
	if worst < 150*time.Millisecond {
		t.Errorf("round trip with delay=150ms took %v", worst)
	}
	ev, err = a.Evidence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Verdict != session.SignalChanged || ev.Delta == nil || *ev.Delta < 30 {
		t.Errorf("after 3 round trips: %+v, want changed with ≥ 30 bytes", ev)
	}
	tc, err := a.TargetCheck(ctx)
	if err != nil || tc == nil || tc.Verdict != session.SignalChanged || tc.Name != "dstgen-S1-w1" {
		t.Errorf("target check %+v %v", tc, err)
	}
	if err := a.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if p := b.proxy(t); len(p.Toxics) != 0 {
		t.Errorf("after heal toxics %+v", p.Toxics)
	}
	if _, err := os.Stat(undoPath(b.host.Workdir, "S1-w1", undoKindProxy)); !os.IsNotExist(err) {
		t.Errorf("undo script after heal: %v", err)
	}
	if err := a.Heal(ctx); err != nil {
		t.Errorf("second heal: %v", err)
	}
	if ev, _ := a.Evidence(ctx); ev.Verdict != session.SignalAbsent {
		t.Errorf("evidence after heal %+v, want absent", ev)
	}
}

// TestProxiedCrashHealedByHealAll: a fault injected and never healed (the
// orchestrator died) is removed by HealAll through its undo script.
func TestProxiedCrashHealedByHealAll(t *testing.T) {
	b := newProxyBed(t)
	ctx := context.Background()
	x := localExec{}
	a, err := injectProxied(ctx, x, b.fault("packet-loss", "S2-w1", map[string]string{"loss": "50%", "stream": "both"}))
	if err != nil {
		t.Fatal(err)
	}
	p := b.proxy(t)
	if !p.HasToxic("dstgen-S2-w1") || !p.HasToxic("dstgen-S2-w1-up") {
		t.Fatalf("toxics %+v: want dstgen-S2-w1 and dstgen-S2-w1-up", p.Toxics)
	}
	for _, tx := range p.Toxics {
		if tx.Type != "reset_peer" || tx.Toxicity != 0.5 {
			t.Errorf("toxic %+v: want reset_peer at toxicity 0.5", tx)
		}
	}
	ev, err := a.Evidence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ev.Raw, "per connection, not per packet") {
		t.Errorf("raw %q does not say loss is approximated per connection", ev.Raw)
	}
	removed, err := HealAll(ctx, x, []Host{b.host})
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].What != "undo S2-w1.proxy" {
		t.Errorf("removed %+v, want the undo S2-w1.proxy", removed)
	}
	if p := b.proxy(t); len(p.Toxics) != 0 {
		t.Errorf("after HealAll toxics %+v", p.Toxics)
	}
}

// TestProxiedPartition: partition-full via the proxy disables it (no
// round trip gets through), the evidence says traffic stopped on a proxy
// that carried it before, and Heal restores it.
func TestProxiedPartition(t *testing.T) {
	b := newProxyBed(t)
	ctx := context.Background()
	x := localExec{}
	if _, err := b.echo(t, 2); err != nil {
		t.Fatal(err)
	}
	// Through the catalog: partition-full with via=proxy is routed here.
	n, err := Lookup("partition-full")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Inject(ctx, x, b.fault("partition-full", "S3-w1", map[string]string{"via": "carrier-pigeon"})); err == nil || !strings.Contains(err.Error(), "via=") {
		t.Errorf("via=carrier-pigeon: %v, want a refusal naming via", err)
	}
	a, err := n.Inject(ctx, x, b.fault("partition-full", "S3-w1", map[string]string{"via": "proxy", "proxies": "echo"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.echo(t, 1); err == nil {
		t.Error("a round trip went through the partitioned proxy")
	}
	ev, err := a.Evidence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Verdict != session.SignalChanged || *ev.Delta != 0 {
		t.Errorf("evidence %+v: want changed (traffic stopped)", ev)
	}
	if tc, err := a.TargetCheck(ctx); err != nil || tc.Verdict != session.SignalChanged || tc.Kind != "proxy_disabled" {
		t.Errorf("target check %+v %v", tc, err)
	}
	if err := a.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.echo(t, 1); err != nil {
		t.Errorf("after heal: %v", err)
	}
}

// trafficBeforeDisable is an Exec that pushes a round trip through the
// proxy just before each `dstgen proxy disable`: traffic that flows
// between the nemesis's first counter reading and the disable.
type trafficBeforeDisable struct {
	localExec
	t *testing.T
	b proxyBed
}

func (x trafficBeforeDisable) Run(ctx context.Context, h env.Host, script string) (string, error) {
	if strings.Contains(script, " proxy disable ") || strings.Contains(script, " proxy 'disable' ") {
		if _, err := x.b.echo(x.t, 1); err != nil {
			x.t.Errorf("round trip before the disable: %v", err)
		}
	}
	return x.localExec.Run(ctx, h, script)
}

// TestProxiedPartitionTrafficBeforeDisable: bytes that passed between the
// nemesis's first reading of the counters and the disable are not
// traffic through the partition: the evidence is changed, delta 0.
func TestProxiedPartitionTrafficBeforeDisable(t *testing.T) {
	b := newProxyBed(t)
	ctx := context.Background()
	if _, err := b.echo(t, 2); err != nil {
		t.Fatal(err)
	}
	n, err := Lookup("partition-full")
	if err != nil {
		t.Fatal(err)
	}
	x := trafficBeforeDisable{t: t, b: b}
	a, err := n.Inject(ctx, x, b.fault("partition-full", "S3-w1", map[string]string{"via": "proxy", "proxies": "echo"}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := a.Heal(ctx); err != nil {
			t.Error(err)
		}
	}()
	ev, err := a.Evidence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Verdict != session.SignalChanged || *ev.Delta != 0 {
		t.Errorf("evidence %+v: want changed with delta 0 (no byte since the disable)", ev)
	}
}

// TestProxiedRefusals: what a TCP proxy cannot do, bad params and a proxy
// the server lacks are errors saying so, and leave no toxic behind.
func TestProxiedRefusals(t *testing.T) {
	b := newProxyBed(t)
	ctx := context.Background()
	two := b.fault("slow-follower", "S4-w1", nil)
	two.Targets = []Host{b.host, b.host}
	for _, tc := range []struct {
		name string
		f    Fault
		want string
	}{
		{"dup", b.fault("packet-dup", "S4-w1", nil), "not possible through a TCP proxy"},
		{"reorder", b.fault("packet-reorder", "S4-w1", nil), "not possible through a TCP proxy"},
		{"slow-follower two targets", two, "exactly one target"},
		{"bad delay", b.fault("latency", "S4-w1", map[string]string{"delay": "soon"}), "param delay"},
		{"bad rate", b.fault("bandwidth", "S4-w1", map[string]string{"rate": "fast"}), "param rate"},
		{"bad loss", b.fault("packet-loss", "S4-w1", map[string]string{"loss": "150%"}), "param loss"},
		{"bad stream", b.fault("latency", "S4-w1", map[string]string{"stream": "sideways"}), "param stream"},
		{"unknown proxy", b.fault("latency", "S4-w1", map[string]string{"proxies": "echo,nope"}), `no proxy "nope"`},
		{"bad epoch", b.fault("latency", "../x", nil), "fault epoch"},
		{"no server", b.fault("latency", "S4-w1", map[string]string{"proxy_api": "127.0.0.1:1"}), "unreachable"},
	} {
		_, err := injectProxied(ctx, localExec{}, tc.f)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	if p := b.proxy(t); len(p.Toxics) != 0 || !p.Enabled {
		t.Errorf("after refusals: %+v", p)
	}
	if m, _ := filepath.Glob(filepath.Join(undoDir(b.host.Workdir), "*.sh")); len(m) != 0 {
		t.Errorf("undo scripts left: %v", m)
	}
}

// TestRateKBps: tc-style rates become Toxiproxy's KB/s, never 0.
func TestRateKBps(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{in: "1mbit", want: 125}, {in: "800kbit", want: 100}, {in: "1gbit", want: 125000},
		{in: "100kbps", want: 100}, {in: "8bit", want: 1}, {in: "2.5mbps", want: 2500},
		{in: "fast", err: true}, {in: "10", err: true},
	} {
		got, err := rateKBps(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("%q: %d %v, want %d err=%v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// A partition through the proxy is proven only by traffic just before the
// cut: a proxy the SUT used once, long ago, and no longer (nothing moved
// between the reading ahead of the window and the disable) reads
// unchanged — the SUT is not behind it — never "the cut held".
func TestProxiedPartitionNeedsTrafficJustBeforeTheCut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		recent bool
		want   string
	}{
		{"the SUT stopped using the proxy", false, session.SignalUnchanged},
		{"the SUT used it up to the cut", true, session.SignalChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newProxyBed(t)
			ctx := context.Background()
			if _, err := b.echo(t, 2); err != nil { // long ago
				t.Fatal(err)
			}
			n, err := Lookup("partition-full")
			if err != nil {
				t.Fatal(err)
			}
			f := b.fault("partition-full", "S3-w1", map[string]string{"via": "proxy", "proxies": "echo"})
			if f.Primed, err = n.(Primer).Prime(ctx, localExec{}, f); err != nil {
				t.Fatal(err)
			}
			if tc.recent {
				if _, err := b.echo(t, 1); err != nil {
					t.Fatal(err)
				}
			}
			a, err := n.Inject(ctx, localExec{}, f)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = a.Heal(ctx) }()
			ev, err := a.Evidence(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Verdict != tc.want {
				t.Errorf("evidence %s (%s), want %s", ev.Verdict, ev.Raw, tc.want)
			}
		})
	}
}
