package nemesis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/session"
)

// probePort is the UDP port every namespace's helper listens on.
const probePort = "7077"

// TestNetHelperProcess is not a test: run inside a namespace as
// `ip netns exec NS <test binary> -test.run=^TestNetHelperProcess$` with
// DSTGEN_NET_HELPER=1, it is the traffic probe of the partition tests. It
// listens on DSTGEN_NET_ADDR:7077/udp and prints "got <round> <sender>"
// for every datagram; a stdin line "send <round> <ip>..." sends three
// datagrams "<round> <name>" to each ip and prints "sent <round>". It ends
// at stdin EOF, or after two minutes whatever happens.
func TestNetHelperProcess(t *testing.T) {
	if os.Getenv("DSTGEN_NET_HELPER") != "1" {
		return
	}
	time.AfterFunc(2*time.Minute, func() { os.Exit(3) })
	name, addr := os.Getenv("DSTGEN_NET_NAME"), os.Getenv("DSTGEN_NET_ADDR")
	conn, err := net.ListenPacket("udp4", net.JoinHostPort(addr, probePort))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	say := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", a...)
	}
	go func() {
		buf := make([]byte, 512)
		for {
			n, _, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			say("got %s", buf[:n])
		}
	}()
	say("ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 || fs[0] != "send" {
			continue
		}
		for range 3 {
			for _, ip := range fs[2:] {
				if ua, err := net.ResolveUDPAddr("udp4", net.JoinHostPort(ip, probePort)); err == nil {
					_, _ = conn.WriteTo([]byte(fs[1]+" "+name), ua)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		say("sent %s", fs[1])
	}
	os.Exit(0)
}

// probe is one namespace's helper process, seen from the test.
type probe struct {
	name  string
	stdin io.WriteCloser
	mu    sync.Mutex
	got   map[string]map[string]bool // round → senders heard
	sent  map[string]bool
	ready chan struct{}
}

// probes are the helpers of every host of a cluster.
type probes struct {
	hosts []Host
	by    map[string]*probe
	round int
}

// startProbes starts a helper in every host's namespace; each is stopped
// by PID when the test ends.
func startProbes(t *testing.T, hosts []Host, x nsExec) *probes {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ps := &probes{hosts: hosts, by: map[string]*probe{}}
	for _, h := range hosts {
		cmd := exec.Command("ip", "netns", "exec", x.ns[h.Name], self, "-test.run=^TestNetHelperProcess$")
		cmd.Env = append(os.Environ(), "DSTGEN_NET_HELPER=1", "DSTGEN_NET_NAME="+h.Name, "DSTGEN_NET_ADDR="+h.Address)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatalf("start probe in %s: %v", h.Name, err)
		}
		p := &probe{name: h.Name, stdin: stdin, got: map[string]map[string]bool{}, sent: map[string]bool{}, ready: make(chan struct{})}
		ps.by[h.Name] = p
		done := make(chan struct{})
		go func() {
			defer close(done)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				fs := strings.Fields(sc.Text())
				p.mu.Lock()
				switch {
				case len(fs) == 1 && fs[0] == "ready":
					close(p.ready)
				case len(fs) == 3 && fs[0] == "got":
					if p.got[fs[1]] == nil {
						p.got[fs[1]] = map[string]bool{}
					}
					p.got[fs[1]][fs[2]] = true
				case len(fs) == 2 && fs[0] == "sent":
					p.sent[fs[1]] = true
				}
				p.mu.Unlock()
			}
		}()
		t.Cleanup(func() {
			_ = stdin.Close()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill() // by PID
			}
			_ = cmd.Wait()
		})
		select {
		case <-p.ready:
		case <-done:
			t.Fatalf("probe in %s exited before it was ready", h.Name)
		case <-time.After(20 * time.Second):
			t.Fatalf("probe in %s not ready after 20 s", h.Name)
		}
	}
	return ps
}

// reach sends a round of datagrams from every host to every other and
// returns who heard whom: heard[dst][src]. It waits (bounded) until every
// sender is done, every datagram cut(src, dst) says should arrive has
// arrived (cut nil: nothing is known), and nothing new arrived for 150 ms.
func (ps *probes) reach(t *testing.T, cut func(src, dst string) bool) map[string]map[string]bool {
	t.Helper()
	ps.round++
	r := fmt.Sprintf("r%d", ps.round)
	for _, src := range ps.hosts {
		var ips []string
		for _, dst := range ps.hosts {
			if dst.Name != src.Name {
				ips = append(ips, dst.Address)
			}
		}
		if _, err := fmt.Fprintf(ps.by[src.Name].stdin, "send %s %s\n", r, strings.Join(ips, " ")); err != nil {
			t.Fatalf("probe %s: %v", src.Name, err)
		}
	}
	// state says whether the expected part is complete, and how many
	// datagrams arrived so far.
	state := func() (bool, int) {
		done, n := true, 0
		for _, dst := range ps.hosts {
			p := ps.by[dst.Name]
			p.mu.Lock()
			done = done && p.sent[r]
			n += len(p.got[r])
			for _, src := range ps.hosts {
				if cut != nil && src.Name != dst.Name && !cut(src.Name, dst.Name) && !p.got[r][src.Name] {
					done = false
				}
			}
			p.mu.Unlock()
		}
		return done, n
	}
	last, stableSince := -1, time.Now()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		done, n := state()
		if n != last {
			last, stableSince = n, time.Now()
		}
		if done && time.Since(stableSince) >= 150*time.Millisecond {
			break
		}
	}
	heard := map[string]map[string]bool{}
	for _, dst := range ps.hosts {
		p := ps.by[dst.Name]
		p.mu.Lock()
		heard[dst.Name] = map[string]bool{}
		for src := range p.got[r] {
			heard[dst.Name][src] = true
		}
		p.mu.Unlock()
	}
	return heard
}

// expectReach fails for every pair whose datagram arrival differs from
// what cut says.
func (ps *probes) expectReach(t *testing.T, what string, cut func(src, dst string) bool) {
	t.Helper()
	heard := ps.reach(t, cut)
	var bad []string
	for _, dst := range ps.hosts {
		for _, src := range ps.hosts {
			if src.Name == dst.Name {
				continue
			}
			if got, want := heard[dst.Name][src.Name], !cut(src.Name, dst.Name); got != want {
				bad = append(bad, fmt.Sprintf("%s→%s arrived=%v want %v", src.Name, dst.Name, got, want))
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("%s: %s", what, strings.Join(bad, "; "))
	}
}

// never cuts nothing.
func never(string, string) bool { return false }

// iptablesS is `iptables -S` of every host, by host (hosts in parallel).
func iptablesS(t *testing.T, x nsExec, hosts []Host) map[string]string {
	t.Helper()
	outs, errs := make([]string, len(hosts)), make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() { outs[i], errs[i] = x.Run(context.Background(), h.Host, "iptables -w -S") })
	}
	wg.Wait()
	out := map[string]string{}
	for i, h := range hosts {
		if errs[i] != nil {
			t.Fatalf("%s: iptables -S: %v", h.Name, errs[i])
		}
		out[h.Name] = outs[i]
	}
	return out
}

// expectClean fails when any host still has a dstgen rule or chain, or an
// undo script.
func expectClean(t *testing.T, x nsExec, hosts []Host, after string) {
	t.Helper()
	for name, s := range iptablesS(t, x, hosts) {
		if strings.Contains(strings.ToLower(s), "dstgen") {
			t.Errorf("after %s, %s still has dstgen rules:\n%s", after, name, s)
		}
	}
	for _, h := range hosts {
		if m, _ := os.ReadDir(undoDir(h.Workdir)); len(m) > 0 {
			t.Errorf("after %s, %s still has undo scripts: %v", after, h.Name, m)
		}
	}
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: real iptables in network namespaces")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("needs iptables")
	}
}

func in(name string, set ...string) bool { return slices.Contains(set, name) }

// sees is the symmetric reachability of a round: a and b hear each other.
// A pair heard one way only is returned in oneWay.
func sees(heard map[string]map[string]bool, names []string) (both map[[2]string]bool, oneWay []string) {
	both = map[[2]string]bool{}
	for _, a := range names {
		for _, b := range names {
			if a >= b {
				continue
			}
			ab, ba := heard[b][a], heard[a][b]
			if ab && ba {
				both[[2]string{a, b}] = true
			} else if ab != ba {
				oneWay = append(oneWay, a+"/"+b)
			}
		}
	}
	return both, oneWay
}

func seen(both map[[2]string]bool, a, b string) bool {
	if a > b {
		a, b = b, a
	}
	return both[[2]string{a, b}]
}

// splitOf reads the minority/majority split off a round: the groups of
// mutually reaching cluster hosts, smallest first.
func splitOf(t *testing.T, heard map[string]map[string]bool, cluster []string) [][]string {
	t.Helper()
	both, oneWay := sees(heard, cluster)
	if len(oneWay) > 0 {
		t.Errorf("one-way pairs inside the cluster: %v", oneWay)
	}
	var groups [][]string
	placed := map[string]bool{}
	for _, a := range cluster {
		if placed[a] {
			continue
		}
		g := []string{a}
		placed[a] = true
		for _, b := range cluster {
			if !placed[b] && seen(both, a, b) {
				g = append(g, b)
				placed[b] = true
			}
		}
		for _, x := range g {
			for _, y := range g {
				if x != y && !seen(both, x, y) {
					t.Errorf("group %v is not a clique: %s and %s do not reach each other", g, x, y)
				}
			}
		}
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool { return len(groups[i]) < len(groups[j]) })
	return groups
}

// TestPartitions injects every iptables nemesis on five namespace hosts
// (and one client), proves with real datagrams that exactly the shape's
// pairs are cut, that the DROP counters moved, that Heal restores every
// path and leaves no dstgen rule, and that HealAll after a second inject
// of the same fault (same pick: the same rules) without Heal removes
// everything too.
func TestPartitions(t *testing.T) {
	requireRoot(t)
	all, x := newCluster(t, 6)
	cluster, clients := all[:5], all[5:]
	names := func(hs []Host) []string {
		var s []string
		for _, h := range hs {
			s = append(s, h.Name)
		}
		return s
	}
	cn := names(cluster)
	ps := startProbes(t, all, x)
	ctx := context.Background()
	var majoritySplit [][]string // what partition-minority with pick 7 chose

	cases := []struct {
		nemesis string
		targets []string
		params  map[string]string
		pick    int64
		// cut says which datagrams must not arrive; nil = check reaches
		// with check instead.
		cut   func(src, dst string) bool
		check func(t *testing.T, heard map[string]map[string]bool)
		// noLanding: the rules must not catch traffic (hook=FORWARD).
		noLanding bool
	}{
		{nemesis: "partition-full", targets: []string{"h1", "h2"}, cut: func(s, d string) bool {
			return in(s, cn...) && in(d, cn...) && in(s, "h1", "h2") != in(d, "h1", "h2")
		}},
		{nemesis: "partition-asym", targets: []string{"h1"}, cut: func(s, d string) bool {
			return d == "h1" && in(s, cn...)
		}},
		// direction=out: the rest hears nothing from h1, h1 hears them.
		{nemesis: "partition-asym", targets: []string{"h1"}, params: map[string]string{"direction": "out"}, cut: func(s, d string) bool {
			return s == "h1" && in(d, cn...)
		}},
		{nemesis: "leader-isolation", targets: []string{"h3"}, cut: func(s, d string) bool {
			return in(s, cn...) && in(d, cn...) && (s == "h3") != (d == "h3")
		}},
		{nemesis: "partition-minority", targets: []string{"h4"}, cut: func(s, d string) bool {
			return in(s, cn...) && in(d, cn...) && (s == "h4") != (d == "h4")
		}},
		{nemesis: "partition-minority", targets: cn, pick: 7, check: func(t *testing.T, heard map[string]map[string]bool) {
			g := splitOf(t, heard, cn)
			if len(g) != 2 || len(g[0]) != 2 || len(g[1]) != 3 {
				t.Fatalf("split %v, want a minority of 2 and a majority of 3", g)
			}
			for _, h := range cn {
				if !heard[h]["h6"] || !heard["h6"][h] {
					t.Errorf("client h6 and %s no longer reach each other", h)
				}
			}
			majoritySplit = g
		}},
		{nemesis: "partition-majority", targets: cn, pick: 7, check: func(t *testing.T, heard map[string]map[string]bool) {
			g := splitOf(t, heard, cn)
			if fmt.Sprint(g) != fmt.Sprint(majoritySplit) {
				t.Errorf("split %v, want the one partition-minority made with the same pick: %v", g, majoritySplit)
			}
			if len(g) != 2 {
				return
			}
			for _, h := range g[0] {
				if !heard[h]["h6"] {
					t.Errorf("minority host %s no longer hears the client", h)
				}
			}
			for _, h := range g[1] {
				if heard[h]["h6"] {
					t.Errorf("majority host %s still hears the client", h)
				}
				if !heard["h6"][h] {
					t.Errorf("the client no longer hears majority host %s (only traffic into the majority is dropped)", h)
				}
			}
		}},
		{nemesis: "partition-bridge", pick: 11, targets: cn, check: func(t *testing.T, heard map[string]map[string]bool) {
			both, oneWay := sees(heard, cn)
			if len(oneWay) > 0 {
				t.Errorf("one-way pairs: %v", oneWay)
			}
			var middle []string
			for _, a := range cn {
				n := 0
				for _, b := range cn {
					if a != b && seen(both, a, b) {
						n++
					}
				}
				if n == len(cn)-1 {
					middle = append(middle, a)
				}
			}
			if len(middle) != 1 {
				t.Fatalf("hosts that see everyone: %v, want exactly one middle node", middle)
			}
			var rest []string
			for _, h := range cn {
				if h != middle[0] {
					rest = append(rest, h)
				}
			}
			if g := splitOf(t, heard, rest); len(g) != 2 || len(g[0]) != 2 || len(g[1]) != 2 {
				t.Errorf("without the middle %s the cluster splits into %v, want two halves of 2", middle[0], g)
			}
		}},
		{nemesis: "partition-ring", pick: 5, targets: cn, check: func(t *testing.T, heard map[string]map[string]bool) {
			both, oneWay := sees(heard, cn)
			if len(oneWay) > 0 {
				t.Errorf("one-way pairs: %v", oneWay)
			}
			// Degree 2 everywhere and connected: one cycle through all.
			for _, a := range cn {
				n := 0
				for _, b := range cn {
					if a != b && seen(both, a, b) {
						n++
					}
				}
				if n != 2 {
					t.Errorf("%s sees %d others, want its 2 ring neighbours", a, n)
				}
			}
			visited := map[string]bool{cn[0]: true}
			for queue := []string{cn[0]}; len(queue) > 0; queue = queue[1:] {
				for _, b := range cn {
					if !visited[b] && seen(both, queue[0], b) {
						visited[b] = true
						queue = append(queue, b)
					}
				}
			}
			if len(visited) != len(cn) {
				t.Errorf("the ring is not one cycle: from %s only %d hosts are reached", cn[0], len(visited))
			}
		}},
		{nemesis: "metadata-outage", targets: []string{"h1", "h2"}, params: map[string]string{"addr": cluster[4].Address, "port": probePort, "proto": "udp"},
			cut: func(s, d string) bool {
				return (in(s, "h1", "h2") && d == "h5") || (s == "h5" && in(d, "h1", "h2"))
			}},
		{nemesis: "partition-full", targets: []string{"h1"}, params: map[string]string{"hook": "FORWARD"}, cut: never, noLanding: true},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%d-%s", i, c.nemesis), func(t *testing.T) {
			n, err := Lookup(c.nemesis)
			if err != nil {
				t.Fatal(err)
			}
			var targets []Host
			for _, h := range cluster {
				if in(h.Name, c.targets...) {
					targets = append(targets, h)
				}
			}
			f := Fault{Epoch: fmt.Sprintf("T%d-w1", i), Nemesis: c.nemesis, Targets: targets, Cluster: cluster, Clients: clients, Params: c.params, Pick: c.pick, For: time.Minute}
			a, err := n.Inject(ctx, x, f)
			if err != nil {
				t.Fatalf("inject: %v", err)
			}
			healed := false
			t.Cleanup(func() {
				if !healed {
					_, _ = HealAll(context.Background(), x, all)
				}
			})
			first := iptablesS(t, x, all)
			if c.cut != nil {
				ps.expectReach(t, "while injected", c.cut)
			} else {
				c.check(t, ps.reach(t, nil))
			}
			ev, err := a.Evidence(ctx)
			if err != nil {
				t.Fatalf("evidence: %v", err)
			}
			tc, err := a.TargetCheck(ctx)
			if err != nil {
				t.Fatalf("target check: %v", err)
			}
			if ev.Kind != "iptables_counter" || ev.Name != "DROP packets dstgen:"+f.Epoch || string(ev.Before) != "0" || ev.Delta == nil {
				t.Errorf("evidence = %+v, want iptables_counter named for the epoch, before 0, with a delta", ev)
			}
			wantEv, wantTC := session.SignalChanged, session.SignalChanged
			if c.noLanding {
				wantEv, wantTC = session.SignalUnchanged, session.SignalUnchanged
			}
			if ev.Verdict != wantEv || (wantEv == session.SignalChanged) != (*ev.Delta > 0) {
				t.Errorf("evidence verdict %s delta %v (raw %s), want %s", ev.Verdict, *ev.Delta, ev.Raw, wantEv)
			}
			if tc == nil || tc.Kind != "iptables_rules" || tc.Verdict != wantTC || string(tc.Before) != "0" || !strings.HasSuffix(tc.Name, ", "+string(tc.After)+" expected") {
				t.Errorf("target check = %+v, want iptables_rules %s with every rule found", tc, wantTC)
			}
			if err := a.Heal(ctx); err != nil {
				t.Fatalf("heal: %v", err)
			}
			if after, err := a.Evidence(ctx); err != nil || after.Verdict != ev.Verdict || *after.Delta < *ev.Delta {
				t.Errorf("evidence after heal = %+v, %v; want the last reading kept (%v)", after, err, *ev.Delta)
			}
			if err := a.Heal(ctx); err != nil {
				t.Errorf("second heal (idempotent): %v", err)
			}
			expectClean(t, x, all, "Heal")
			ps.expectReach(t, "after Heal", never)

			// A crash: the same fault again, then HealAll instead of Heal.
			if _, err := n.Inject(ctx, x, f); err != nil {
				t.Fatalf("second inject: %v", err)
			}
			if again := iptablesS(t, x, all); fmt.Sprint(again) != fmt.Sprint(first) {
				t.Errorf("the same fault and pick made different rules:\nfirst %v\nagain %v", first, again)
			}
			removed, err := HealAll(ctx, x, all)
			healed = true
			if err != nil {
				t.Fatalf("HealAll: %v", err)
			}
			if len(removed) == 0 {
				t.Errorf("HealAll removed nothing")
			}
			expectClean(t, x, all, "HealAll")
		})
	}
	// Two windows at once share the DSTGEN chain: healing one leaves the
	// other's rules, and the other's cut, in place.
	t.Run("overlap", func(t *testing.T) {
		full, _ := Lookup("partition-full")
		asym, _ := Lookup("partition-asym")
		a, err := full.Inject(ctx, x, Fault{Epoch: "O-w1", Targets: cluster[:1], Cluster: cluster})
		if err != nil {
			t.Fatal(err)
		}
		b, err := asym.Inject(ctx, x, Fault{Epoch: "O-w2", Targets: cluster[1:2], Cluster: cluster})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = HealAll(context.Background(), x, all) })
		cutB := func(s, d string) bool { return d == "h2" && in(s, cn...) }
		ps.expectReach(t, "both windows", func(s, d string) bool {
			return cutB(s, d) || (in(s, cn...) && in(d, cn...) && (s == "h1") != (d == "h1"))
		})
		if err := a.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		ps.expectReach(t, "O-w1 healed, O-w2 still on", cutB)
		if ev, err := b.Evidence(ctx); err != nil || ev.Verdict != session.SignalChanged {
			t.Errorf("O-w2 evidence after O-w1's heal = %+v, %v; want changed", ev, err)
		}
		if err := b.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		expectClean(t, x, all, "healing both")
	})
}

// TestPartitionBadInput: faults that cannot be applied are refused with a
// reason before any host is touched.
func TestPartitionBadInput(t *testing.T) {
	hosts := func(n int) []Host {
		var hs []Host
		for i := range n {
			hs = append(hs, Host{Host: env.Host{Name: fmt.Sprintf("h%d", i+1), Address: fmt.Sprintf("10.77.0.%d", 10+i)}})
		}
		return hs
	}
	five := hosts(5)
	cases := []struct {
		nemesis string
		f       Fault
		want    string
	}{
		{"metadata-outage", Fault{Targets: five[:1], Cluster: five}, "needs params addr"},
		{"metadata-outage", Fault{Targets: five[:1], Cluster: five, Params: map[string]string{"addr": "10.0.0.1"}}, "needs params addr"},
		{"metadata-outage", Fault{Targets: five[:1], Cluster: five, Params: map[string]string{"addr": "db.example", "port": "5432"}}, "want an IPv4 address"},
		{"metadata-outage", Fault{Targets: five[:1], Cluster: five, Params: map[string]string{"addr": "10.0.0.1", "port": "99999"}}, "want a port number"},
		{"metadata-outage", Fault{Targets: five[:1], Cluster: five, Params: map[string]string{"addr": "10.0.0.1", "port": "53", "proto": "sctp"}}, "want tcp or udp"},
		{"partition-full", Fault{Targets: five, Cluster: five}, "proper subset"},
		{"partition-full", Fault{Cluster: five}, "proper subset"},
		{"partition-full", Fault{Targets: hosts(6)[5:], Cluster: five}, "h6 is not a host of the cluster"},
		{"partition-full", Fault{Targets: five[:1], Cluster: five, Params: map[string]string{"hook": "PREROUTING"}}, `"PREROUTING" is not one of`},
		{"leader-isolation", Fault{Targets: five[:2], Cluster: five}, "exactly one target"},
		{"partition-ring", Fault{Cluster: five[:3]}, "at least 4 hosts"},
		{"partition-bridge", Fault{Cluster: five[:2]}, "at least 3 hosts"},
		{"partition-minority", Fault{Cluster: five[:1]}, "at least 2 hosts"},
		{"partition-asym", Fault{Epoch: "../x", Targets: five[:1], Cluster: five}, "fault epoch"},
		{"partition-asym", Fault{Targets: five[:1], Cluster: five, Params: map[string]string{"direction": "both"}}, `direction "both"`},
		{"partition-full", Fault{Targets: []Host{{Host: env.Host{Name: "h1", Address: "fd00::1"}}}, Cluster: []Host{{Host: env.Host{Name: "h1", Address: "fd00::1"}}, five[1]}}, "not IPv4"},
	}
	for _, c := range cases {
		t.Run(c.nemesis+"/"+c.want, func(t *testing.T) {
			n, err := Lookup(c.nemesis)
			if err != nil {
				t.Fatal(err)
			}
			if c.f.Epoch == "" {
				c.f.Epoch = "S1-w1"
			}
			_, err = n.Inject(context.Background(), refuseExec{t}, c.f)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want one line containing %q", err, c.want)
			}
		})
	}
}

// refuseExec fails the test when anything reaches a host.
type refuseExec struct{ t *testing.T }

func (r refuseExec) Run(_ context.Context, h env.Host, script string) (string, error) {
	r.t.Errorf("host %s touched: %s", h.Name, script)
	return "", fmt.Errorf("refused")
}

// recordExec records the scripts per host and answers from canned output.
type recordExec struct {
	mu      sync.Mutex
	scripts map[string][]string
	answer  func(h env.Host, script string) (string, error)
}

func (r *recordExec) Run(_ context.Context, h env.Host, script string) (string, error) {
	r.mu.Lock()
	if r.scripts == nil {
		r.scripts = map[string][]string{}
	}
	r.scripts[h.Name] = append(r.scripts[h.Name], script)
	r.mu.Unlock()
	if r.answer != nil {
		return r.answer(h, script)
	}
	return "", nil
}

// TestShapesDeterministic: a shape is a pure function of the fault — the
// same pick gives the same rules on every host — and the pick does
// choose (over 32 picks more than one minority comes out).
func TestShapesDeterministic(t *testing.T) {
	var cluster []Host
	ips := ipSet{}
	for i := range 5 {
		h := Host{Host: env.Host{Name: fmt.Sprintf("h%d", i+1), Address: fmt.Sprintf("10.77.0.%d", 10+i)}}
		cluster = append(cluster, h)
		ips[h.Name] = h.Address
	}
	for _, id := range []string{"partition-minority", "partition-majority", "partition-bridge", "partition-ring"} {
		n, _ := Lookup(id)
		shape := n.(partitionNemesis).shape
		distinct := map[string]bool{}
		for pick := range int64(32) {
			f := Fault{Cluster: cluster, Targets: cluster, Pick: pick}
			a, err := shape(f, ips)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := shape(f, ips)
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("%s pick %d: two calls gave different rules", id, pick)
			}
			distinct[fmt.Sprint(a)] = true
		}
		if len(distinct) < 2 {
			t.Errorf("%s: 32 picks all gave the same shape", id)
		}
	}
}

// TestParseListing reads counters of exactly one epoch's rules, not of an
// epoch it is a prefix of.
func TestParseListing(t *testing.T) {
	out := `Chain DSTGEN (2 references)
    pkts      bytes target     prot opt in     out     source               destination
      12      840 DROP       0    --  *      *       10.77.0.11           0.0.0.0/0            /* dstgen:S1-w1 */
       3      252 DROP       0    --  *      *       0.0.0.0/0            10.77.0.11           /* dstgen:S1-w1 */
     999     9999 DROP       0    --  *      *       10.77.0.12           0.0.0.0/0            /* dstgen:S1-w10 */
       5      300 DROP       6    --  *      *       0.0.0.0/0            10.1.2.3             tcp dpt:2379 /* dstgen:S1-w1 */
`
	rs := parseListing(out, "dstgen:S1-w1")
	var sum int64
	for _, r := range rs {
		sum += r.pkts
	}
	if len(rs) != 3 || sum != 20 {
		t.Fatalf("rules %v sum %d, want 3 rules summing to 20", rs, sum)
	}
}

// TestIptablesScriptsQuoteValues: the undo deletes exactly the rule the
// apply added, values quoted.
func TestIptablesScriptsQuoteValues(t *testing.T) {
	s := iptablesApply(Chain, []string{"INPUT"}, "S1-w1", []dropRule{{in: true, addr: "10.0.0.1", proto: "tcp", port: "53"}})
	want := "iptables -w -A DSTGEN -s 10.0.0.1 -p tcp --sport 53 -m comment --comment dstgen:S1-w1 -j DROP"
	if !strings.Contains(s, want) {
		t.Errorf("apply script lacks %q:\n%s", want, s)
	}
	u := iptablesUndo(Chain, "S1-w1", []dropRule{{in: true, addr: "10.0.0.1", proto: "tcp", port: "53"}})
	if want := "iptables -w -D DSTGEN -s 10.0.0.1 -p tcp --sport 53 -m comment --comment dstgen:S1-w1 -j DROP"; !strings.Contains(u, want) {
		t.Errorf("undo script lacks %q:\n%s", want, u)
	}
}

// TestTargetCheckSeesMissingRules: a rule or jump gone from a host (a
// firewall reload, a hand-made flush) makes the target check unchanged
// and says what is missing.
func TestTargetCheckSeesMissingRules(t *testing.T) {
	h := Host{Host: env.Host{Name: "h1", Address: "10.77.0.10"}}
	listing := "Chain DSTGEN (1 references)\n pkts bytes target prot opt in out source destination\n 4 240 DROP 0 -- * * 10.77.0.11 0.0.0.0/0 /* dstgen:S1-w1 */\n"
	cases := []struct {
		name, out, want string
		verdict         string
	}{
		{"all present", "jump INPUT yes\njump OUTPUT yes\n" + listing, "h1 ok", session.SignalChanged},
		{"jump gone", "jump INPUT no\njump OUTPUT yes\n" + listing, "MISSING no jump from INPUT", session.SignalUnchanged},
		{"rule gone", "jump INPUT yes\njump OUTPUT yes\n", "MISSING 0 of 1 rules", session.SignalUnchanged},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := &recordExec{answer: func(env.Host, string) (string, error) { return c.out, nil }}
			a := &iptablesActive{x: x, epoch: "S1-w1", tag: "S1-w1", chain: Chain, hooks: []string{"INPUT", "OUTPUT"},
				hosts: []hostRules{{host: h, rules: []dropRule{{in: true, addr: "10.77.0.11"}}}}, last: map[string]int64{}}
			ev, err := a.TargetCheck(context.Background())
			if err != nil || ev.Verdict != c.verdict || !strings.Contains(ev.Raw, c.want) {
				t.Fatalf("target check = %+v, %v; want %s with %q", ev, err, c.verdict, c.want)
			}
		})
	}
}

// TestInjectFailureHeals: when one host refuses the rules, the fault is
// an error naming it and every host that got an undo script is healed.
func TestInjectFailureHeals(t *testing.T) {
	var cluster []Host
	for i := range 3 {
		cluster = append(cluster, Host{Host: env.Host{Name: fmt.Sprintf("h%d", i+1), Address: fmt.Sprintf("10.77.0.%d", 10+i)}, Workdir: "/w"})
	}
	x := &recordExec{answer: func(h env.Host, script string) (string, error) {
		if h.Name == "h2" && strings.HasPrefix(script, "set -e") {
			return "", errors.New("exit status 4: iptables: Permission denied")
		}
		return "", nil
	}}
	n, _ := Lookup("partition-full")
	_, err := n.Inject(context.Background(), x, Fault{Epoch: "S1-w1", Targets: cluster[:1], Cluster: cluster})
	if err == nil || !strings.Contains(err.Error(), "h2: add iptables rules") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v, want one line naming h2", err)
	}
	for _, h := range cluster {
		ss := x.scripts[h.Name]
		if len(ss) == 0 || !strings.Contains(ss[len(ss)-1], "S1-w1.iptables.sh") || !strings.Contains(ss[len(ss)-1], "rm -f") {
			t.Errorf("%s: last script is not the undo run: %q", h.Name, ss)
		}
	}
}
