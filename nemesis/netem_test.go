package nemesis

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/session"
)

// netemOf is the netem row id with its fallback replaced.
func netemOf(t *testing.T, id string, fallback func(context.Context, Exec, Fault) (Active, error)) netemNemesis {
	t.Helper()
	n, err := Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	nn, ok := n.(netemNemesis)
	if !ok {
		t.Fatalf("%s is a %T, not a netem nemesis", id, n)
	}
	if fallback != nil {
		nn.fallback = fallback
	}
	return nn
}

// TestNetemCommands: each row's params become the qdisc command it adds
// (the undo armed before it), and bad params are refused before any host
// is touched.
func TestNetemCommands(t *testing.T) {
	one := []Host{{Host: env.Host{Name: "h1", Address: "10.77.0.10"}, Workdir: "/w"}}
	two := append(one, Host{Host: env.Host{Name: "h2", Address: "10.77.0.11"}, Workdir: "/w2"})
	cases := []struct {
		id      string
		params  map[string]string
		targets []Host
		want    string // the add command, or the error
		wantErr bool
	}{
		{id: "latency", want: "tc qdisc add dev eth0 parent d57:4 handle d58: netem delay 200ms"},
		{id: "latency", params: map[string]string{"delay": "50ms", "jitter": "10ms"}, want: "tc qdisc add dev eth0 parent d57:4 handle d58: netem delay 50ms 10ms"},
		{id: "latency", params: map[string]string{"dev": "ens5"}, want: "tc qdisc add dev ens5 parent d57:4 handle d58: netem delay 200ms"},
		{id: "packet-loss", want: "tc qdisc add dev eth0 parent d57:4 handle d58: netem loss 30%"},
		{id: "packet-loss", params: map[string]string{"loss": "2.5%"}, want: "tc qdisc add dev eth0 parent d57:4 handle d58: netem loss 2.5%"},
		{id: "bandwidth", want: "tc qdisc add dev eth0 parent d57:4 handle d58: netem rate 1mbit"},
		{id: "bandwidth", params: map[string]string{"rate": "512kbit"}, want: "tc qdisc add dev eth0 parent d57:4 handle d58: netem rate 512kbit"},
		{id: "slow-follower", want: "tc qdisc add dev eth0 parent d57:4 handle d58: netem delay 200ms"},
		{id: "packet-dup", want: "tc qdisc add dev eth0 parent d57:4 handle d58: netem duplicate 10%"},
		{id: "packet-reorder", want: "tc qdisc add dev eth0 parent d57:4 handle d58: netem delay 50ms reorder 25%"},
		{id: "latency", params: map[string]string{"delay": "200"}, want: `param delay="200": want the form 200ms`, wantErr: true},
		{id: "latency", params: map[string]string{"delay": "1ms; reboot"}, want: `param delay="1ms; reboot"`, wantErr: true},
		{id: "latency", params: map[string]string{"jitter": "x"}, want: `param jitter="x"`, wantErr: true},
		{id: "packet-loss", params: map[string]string{"loss": "30"}, want: `param loss="30": want the form 30%`, wantErr: true},
		{id: "bandwidth", params: map[string]string{"rate": "fast"}, want: `param rate="fast": want the form 1mbit`, wantErr: true},
		{id: "latency", params: map[string]string{"dev": "eth0 root"}, want: `param dev="eth0 root": not an interface name`, wantErr: true},
		{id: "slow-follower", targets: two, want: "needs exactly one target (the follower), got 2", wantErr: true},
		{id: "latency", targets: []Host{}, want: "needs at least one target", wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.id+"/"+c.want, func(t *testing.T) {
			n := netemOf(t, c.id, func(context.Context, Exec, Fault) (Active, error) {
				t.Error("fallback called although tc succeeded")
				return nil, errors.New("no")
			})
			targets := c.targets
			if targets == nil {
				targets = one
			}
			f := Fault{Epoch: "S1-w1", Targets: targets, Cluster: two, Params: c.params}
			if c.wantErr {
				_, err := n.Inject(context.Background(), refuseExec{t}, f)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("err = %v, want %q", err, c.want)
				}
				return
			}
			x := &recordExec{answer: func(_ env.Host, script string) (string, error) {
				if strings.Contains(script, "ip -o -4 addr show") {
					return "eth0\n", nil
				}
				if strings.Contains(script, "tc qdisc add") {
					return "qdisc prio d57: root refcnt 2 bands 4\n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)\nqdisc netem d58: parent d57:4 limit 1000\n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)\n", nil
				}
				return "", nil
			}}
			if _, err := n.Inject(context.Background(), x, f); err != nil {
				t.Fatal(err)
			}
			var add, arm = -1, -1
			for i, s := range x.scripts["h1"] {
				if strings.Contains(s, c.want+"\n") && strings.Contains(s, "flowid d57:4") {
					add = i
				}
				if strings.Contains(s, "nemesis/active/S1-w1.netem.sh") && strings.Contains(s, "tc qdisc del dev") {
					arm = i
				}
			}
			if add < 0 || arm < 0 || arm > add {
				t.Fatalf("want the undo armed (at %d) before %q (at %d); scripts:\n%s", arm, c.want, add, strings.Join(x.scripts["h1"], "\n---\n"))
			}
		})
	}
}

// TestParseQdiscStats reads the counters of dstgen's qdisc only.
func TestParseQdiscStats(t *testing.T) {
	out := `qdisc noqueue 0: dev lo root refcnt 2
 Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)
qdisc prio d57: root refcnt 2 bands 4 priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
 Sent 99999 bytes 500 pkt (dropped 0, overlimits 0 requeues 0)
qdisc netem d58: parent d57:4 limit 1000 loss 30%
 Sent 12345 bytes 87 pkt (dropped 31, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
`
	st, err := parseQdiscStats(out)
	if err != nil || st != (qdiscStats{found: true, sent: 87, dropped: 31}) {
		t.Fatalf("got %+v, %v; want sent 87 dropped 31", st, err)
	}
	if st, _ := parseQdiscStats("qdisc noqueue 0: dev lo root refcnt 2\n Sent 5 bytes 1 pkt (dropped 0, overlimits 0 requeues 0)\n"); st.found {
		t.Errorf("found dstgen's qdisc in a listing without it: %+v", st)
	}
}

// kernelHasNetem says whether a netem qdisc can be added in a namespace.
func kernelHasNetem(t *testing.T, x nsExec, h Host) bool {
	t.Helper()
	_, err := x.Run(context.Background(), h.Host, "tc qdisc add dev lo root handle d57: netem delay 1ms && tc qdisc del dev lo root")
	if err == nil {
		return true
	}
	if _, ok := noNetem(err); ok {
		return false
	}
	t.Fatalf("probing netem: %v", err)
	return false
}

// fakeActive is what a fake proxy fallback returns.
type fakeActive struct{}

func (fakeActive) Evidence(context.Context) (session.Evidence, error)     { return session.Evidence{}, nil }
func (fakeActive) TargetCheck(context.Context) (*session.Evidence, error) { return nil, nil }
func (fakeActive) Heal(context.Context) error                             { return nil }

// TestNetemFallsBackToProxy runs on a kernel without netem (this one):
// the real `tc qdisc add` fails, the fault goes to the proxy fallback with
// the same Fault, an error from it is reported with both reasons, its
// success is returned as is, and nothing of the tc attempt is left.
func TestNetemFallsBackToProxy(t *testing.T) {
	requireRoot(t)
	if _, err := exec.LookPath("tc"); err != nil {
		t.Skip("needs tc (iproute2)")
	}
	hosts, x := newCluster(t, 2)
	if kernelHasNetem(t, x, hosts[0]) {
		t.Skip("this kernel has netem: the proxy fallback is not taken (TestNetemQdisc covers the netem path)")
	}
	f := Fault{Epoch: "S2-w1", Nemesis: "latency", Targets: hosts[:1], Cluster: hosts, Params: map[string]string{"delay": "100ms"}, Pick: 3}
	for _, ok := range []bool{false, true} {
		var calls []Fault
		n := netemOf(t, "latency", func(_ context.Context, _ Exec, got Fault) (Active, error) {
			calls = append(calls, got)
			if ok {
				return fakeActive{}, nil
			}
			return nil, errors.New("no proxy in the traffic path")
		})
		a, err := n.Inject(context.Background(), x, f)
		if len(calls) != 1 || calls[0].Epoch != f.Epoch || calls[0].Params["delay"] != "100ms" || len(calls[0].Targets) != 1 {
			t.Fatalf("fallback calls = %+v, want one with the fault", calls)
		}
		if ok {
			if _, isFake := a.(fakeActive); err != nil || !isFake {
				t.Fatalf("inject = %T, %v; want the proxy's Active", a, err)
			}
		} else if want := "latency S2-w1: tc netem: kernel has no netem qdisc; proxy: no proxy in the traffic path"; err == nil || err.Error() != want {
			t.Fatalf("err = %v, want %q", err, want)
		}
		if m, _ := os.ReadDir(undoDir(hosts[0].Workdir)); len(m) > 0 {
			t.Errorf("undo scripts left after the fallback: %v", m)
		}
		if out, err := x.Run(context.Background(), hosts[0].Host, "tc qdisc show"); err != nil || strings.Contains(out, netemHandle) {
			t.Errorf("tc qdisc show = %q, %v; want no dstgen qdisc", out, err)
		}
	}
}

// TestNetemQdisc is the netem path itself, on a kernel that has netem
// (not the one this package is developed on): the qdisc lands on the
// interface of the host's address, its counters move with traffic, and
// Heal and HealAll remove it.
func TestNetemQdisc(t *testing.T) {
	requireRoot(t)
	if _, err := exec.LookPath("tc"); err != nil {
		t.Skip("needs tc (iproute2)")
	}
	hosts, x := newCluster(t, 2)
	if !kernelHasNetem(t, x, hosts[0]) {
		t.Skip("this kernel has no netem qdisc: the netem path cannot run here (TestNetemFallsBackToProxy covers the fallback)")
	}
	ps := startProbes(t, hosts, x)
	ctx := context.Background()
	f := Fault{Epoch: "S3-w1", Nemesis: "packet-loss", Targets: hosts[:1], Cluster: hosts, Params: map[string]string{"loss": "100%"}, For: time.Minute}
	a, err := netemOf(t, "packet-loss", nil).Inject(ctx, x, f)
	if err != nil {
		t.Fatal(err)
	}
	ps.expectReach(t, "100% loss on h1", func(s, d string) bool { return s == "h1" })
	ev, err := a.Evidence(ctx)
	if err != nil || ev.Kind != "qdisc_counter" || ev.Verdict != session.SignalChanged {
		t.Errorf("evidence = %+v, %v; want qdisc_counter changed", ev, err)
	}
	tc, err := a.TargetCheck(ctx)
	if err != nil || tc == nil || tc.Verdict != session.SignalChanged || !strings.Contains(tc.Raw, "eth0") {
		t.Errorf("target check = %+v, %v; want the qdisc on eth0", tc, err)
	}
	if err := a.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	ps.expectReach(t, "after heal", never)
	if _, err := netemOf(t, "packet-loss", nil).Inject(ctx, x, f); err != nil {
		t.Fatal(err)
	}
	if _, err := HealAll(ctx, x, hosts); err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		if out, _ := x.Run(ctx, h.Host, "tc qdisc show"); strings.Contains(out, netemHandle) {
			t.Errorf("%s: dstgen qdisc left after HealAll: %s", h.Name, out)
		}
	}
}

// A netem fault shapes the SUT's traffic only: filters lead the packets to
// the other cluster hosts and the clients into the netem band, never the
// target's own address, and the SSH session the script runs in is kept in
// the untouched first band — dstgen's line is never slowed, and the
// counters count the SUT's packets, not the replies to dstgen's reads.
func TestNetemShapesOnlyTheSUTsTraffic(t *testing.T) {
	hosts := []Host{
		{Host: env.Host{Name: "h1", Address: "10.77.0.10"}, Workdir: "/w1"},
		{Host: env.Host{Name: "h2", Address: "10.77.0.11"}, Workdir: "/w2"},
		{Host: env.Host{Name: "h3", Address: "10.77.0.12"}, Workdir: "/w3"},
	}
	client := Host{Host: env.Host{Name: "c1", Address: "10.77.0.20"}, Workdir: "/wc"}
	x := &recordExec{answer: func(_ env.Host, script string) (string, error) {
		if strings.Contains(script, "ip -o -4 addr show") {
			return "eth0\n", nil
		}
		return "qdisc netem d58: parent d57:4 limit 1000\n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)\n", nil
	}}
	f := Fault{Epoch: "S1-w1", Session: "20261202T000000Z", Nemesis: "latency", Targets: hosts[:1], Cluster: hosts, Clients: []Host{client}}
	if _, err := netemOf(t, "latency", nil).Inject(context.Background(), x, f); err != nil {
		t.Fatal(err)
	}
	var add string
	for _, s := range x.scripts["h1"] {
		if strings.Contains(s, "tc qdisc add") {
			add = s
		}
	}
	for _, want := range []string{"match ip dst 10.77.0.11/32 flowid d57:4", "match ip dst 10.77.0.12/32 flowid d57:4", "match ip dst 10.77.0.20/32 flowid d57:4",
		`match ip dst "$1"/32 match ip sport "$4" 0xffff flowid d57:1`, "dstgen-deadman"} {
		if !strings.Contains(add, want) {
			t.Errorf("the add script lacks %q:\n%s", want, add)
		}
	}
	if strings.Contains(add, "10.77.0.10/32") {
		t.Errorf("the target's own address is shaped:\n%s", add)
	}
}
