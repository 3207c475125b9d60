package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// echoServer is a real TCP upstream that echoes every line back; it stops
// with the test.
func echoServer(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// running is a Serve started by a test on loopback ports.
type running struct {
	api    string
	srv    *Server
	client *Client
}

func (r running) listen(tb testing.TB, name string) string {
	tb.Helper()
	a, err := r.srv.Listen(name)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// serve runs Serve in the test with one proxy "echo" in front of a real
// echo upstream; it is stopped (and waited for) at cleanup.
func serve(tb testing.TB) running {
	tb.Helper()
	up := echoServer(tb)
	ctx, cancel := context.WithCancel(context.Background())
	readyc := make(chan running, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- Serve(ctx, "127.0.0.1:0", []Spec{{Name: "echo", Listen: "127.0.0.1:0", Upstream: up}}, io.Discard, func(api string, s *Server) {
			readyc <- running{api: api, srv: s, client: NewClient(api)}
		})
	}()
	var r running
	select {
	case r = <-readyc:
	case err := <-errc:
		cancel()
		tb.Fatalf("serve: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		tb.Fatal("serve: not ready within 30s")
	}
	tb.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				tb.Errorf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			tb.Error("serve did not stop within 30s")
		}
	})
	return r
}

// roundTrip writes one line on c and reads it back, bounded.
func roundTrip(tb testing.TB, c net.Conn, rd *bufio.Reader, line string) time.Duration {
	tb.Helper()
	if err := c.SetDeadline(time.Now().Add(20 * time.Second)); err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		tb.Fatalf("write: %v", err)
	}
	got, err := rd.ReadString('\n')
	if err != nil {
		tb.Fatalf("read: %v", err)
	}
	if strings.TrimSpace(got) != line {
		tb.Fatalf("echo %q, want %q", got, line)
	}
	return time.Since(start)
}

func dial(tb testing.TB, addr string) (net.Conn, *bufio.Reader) {
	tb.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		tb.Fatalf("dial %s: %v", addr, err)
	}
	tb.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// TestLatencyToxicDelaysRoundTrip: a 200 ms latency toxic on the
// downstream makes a round trip through the proxy take at least 200 ms
// (a lower bound only: the machine is noisy), and removing it by name
// takes it off the proxy's list.
func TestLatencyToxicDelaysRoundTrip(t *testing.T) {
	r := serve(t)
	ctx := context.Background()
	c, rd := dial(t, r.listen(t, "echo"))
	roundTrip(t, c, rd, "warm")
	if _, err := r.client.AddToxic(ctx, "echo", Toxic{Name: "dstgen-S1-w1", Type: "latency", Toxicity: 1, Attributes: map[string]any{"latency": 200}}); err != nil {
		t.Fatal(err)
	}
	if d := roundTrip(t, c, rd, "slow"); d < 200*time.Millisecond {
		t.Errorf("round trip with a 200ms latency toxic took %v", d)
	}
	p, err := r.client.Proxy(ctx, "echo")
	if err != nil {
		t.Fatal(err)
	}
	if !p.HasToxic("dstgen-S1-w1") || len(p.Toxics) != 1 {
		t.Errorf("toxics %+v: want exactly dstgen-S1-w1 (the counters hidden)", p.Toxics)
	}
	if err := r.client.RemoveToxic(ctx, "echo", "dstgen-S1-w1"); err != nil {
		t.Fatal(err)
	}
	if err := r.client.RemoveToxic(ctx, "echo", "dstgen-S1-w1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second remove: %v, want ErrNotFound", err)
	}
	if p, _ := r.client.Proxy(ctx, "echo"); p.HasToxic("dstgen-S1-w1") {
		t.Error("toxic still listed after remove")
	}
}

// TestDisableCutsEnableRestores: disabling the proxy closes the open
// connection and refuses new ones; enabling it carries traffic again.
func TestDisableCutsEnableRestores(t *testing.T) {
	r := serve(t)
	ctx := context.Background()
	addr := r.listen(t, "echo")
	c, rd := dial(t, addr)
	roundTrip(t, c, rd, "before")
	if err := r.client.SetEnabled(ctx, "echo", false); err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	_, _ = io.WriteString(c, "during\n")
	if line, err := rd.ReadString('\n'); err == nil {
		t.Errorf("open connection still echoed %q through a disabled proxy", line)
	}
	if nc, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
		nc.Close()
		t.Error("a disabled proxy accepted a new connection")
	}
	if p, _ := r.client.Proxy(ctx, "echo"); p.Enabled {
		t.Error("proxy listed enabled after disable")
	}
	if err := r.client.SetEnabled(ctx, "echo", true); err != nil {
		t.Fatal(err)
	}
	c2, rd2 := dial(t, addr)
	roundTrip(t, c2, rd2, "after")
}

// TestCountersRiseWithLiveTraffic: the counters move while a connection
// is still open (Toxiproxy's own byte metrics only move when it closes),
// by at least the bytes sent each way, and count the connection.
func TestCountersRiseWithLiveTraffic(t *testing.T) {
	r := serve(t)
	ctx := context.Background()
	before, err := r.client.Proxy(ctx, "echo")
	if err != nil {
		t.Fatal(err)
	}
	if !before.Counted || before.Stats.Bytes() != 0 || before.Stats.Connections != 0 {
		t.Fatalf("fresh proxy stats %+v counted=%v: want zero and counted", before.Stats, before.Counted)
	}
	c, rd := dial(t, r.listen(t, "echo"))
	line := strings.Repeat("x", 1000)
	for i := 0; i < 5; i++ {
		roundTrip(t, c, rd, line)
	}
	after, err := r.client.Proxy(ctx, "echo")
	if err != nil {
		t.Fatal(err)
	}
	if after.Stats.BytesUpstream < 5005 || after.Stats.BytesDownstream < 5005 {
		t.Errorf("stats %+v: want ≥ 5005 bytes each way while the connection is open", after.Stats)
	}
	if after.Stats.Connections != 1 {
		t.Errorf("connections %d, want 1", after.Stats.Connections)
	}
}

// TestCountersCannotBeRemoved: the API refuses to remove or change a
// counter, and /reset removes the faults but keeps the counters.
func TestCountersCannotBeRemoved(t *testing.T) {
	r := serve(t)
	ctx := context.Background()
	if err := r.client.RemoveToxic(ctx, "echo", counterUp); err == nil || !strings.Contains(err.Error(), "cannot be changed") {
		t.Errorf("remove counter: %v, want refused", err)
	}
	if _, err := r.client.AddToxic(ctx, "echo", Toxic{Name: "t1", Type: "latency", Toxicity: 1, Attributes: map[string]any{"latency": 1}}); err != nil {
		t.Fatal(err)
	}
	if err := r.client.do(ctx, "POST", "/reset", nil, nil); err != nil {
		t.Fatal(err)
	}
	p, err := r.client.Proxy(ctx, "echo")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Toxics) != 0 {
		t.Errorf("after reset toxics %+v, want none", p.Toxics)
	}
	c, rd := dial(t, r.listen(t, "echo"))
	roundTrip(t, c, rd, "counted")
	if p, _ := r.client.Proxy(ctx, "echo"); p.Stats.BytesUpstream == 0 {
		t.Error("counters gone after reset")
	}
}

// TestServeRefusesTakenAddress: a proxy or API address in use is an
// error naming it, before anything is served.
func TestServeRefusesTakenAddress(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	taken := busy.Addr().String()
	for _, tc := range []struct {
		name  string
		api   string
		specs []Spec
	}{
		{"proxy listen", "127.0.0.1:0", []Spec{{Name: "p", Listen: taken, Upstream: "127.0.0.1:1"}}},
		{"api", taken, nil},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := Serve(ctx, tc.api, tc.specs, io.Discard, nil)
		cancel()
		if err == nil || !strings.Contains(err.Error(), taken) || !strings.Contains(err.Error(), "in use") {
			t.Errorf("%s: %v, want an error naming %s in use", tc.name, err, taken)
		}
	}
}

// TestParseSpec: NAME=LISTEN>UPSTREAM, and a one-line reason otherwise.
func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		want    Spec
	}{
		{in: "peer=127.0.0.1:12380>10.77.0.11:2380", want: Spec{Name: "peer", Listen: "127.0.0.1:12380", Upstream: "10.77.0.11:2380"}},
		{in: "peer=:12380>db:5432", want: Spec{Name: "peer", Listen: ":12380", Upstream: "db:5432"}},
		{in: "peer", err: "NAME=LISTEN>UPSTREAM"},
		{in: "=a:1>b:2", err: "NAME=LISTEN>UPSTREAM"},
		{in: "p=a:1", err: "NAME=LISTEN>UPSTREAM"},
		{in: "p=a>b:2", err: "not HOST:PORT"},
		{in: "dstgen-counter-x=a:1>b:2", err: "must not"},
	} {
		got, err := ParseSpec(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want an error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v %v, want %+v", tc.in, got, err, tc.want)
		}
	}
}

// TestClientUnreachable: a client of an API nobody serves fails within
// its bound with an error naming the address.
func TestClientUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = NewClient(addr).Proxies(context.Background())
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("err %v, want unreachable naming %s", err, addr)
	}
}

// BenchmarkProxyRoundTrip times one echo round trip through the proxy
// (no fault) against one on a direct connection to the same upstream,
// alternating them in each iteration so both see the same machine load,
// and reports the ratio.
func BenchmarkProxyRoundTrip(b *testing.B) {
	r := serve(b)
	up, err := r.srv.api.Collection.Get("echo")
	if err != nil {
		b.Fatal(err)
	}
	pc, prd := dial(b, r.listen(b, "echo"))
	dc, drd := dial(b, up.Upstream)
	var direct, proxied time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		direct += roundTrip(b, dc, drd, "ping")
		proxied += roundTrip(b, pc, prd, "ping")
	}
	b.ReportMetric(float64(direct.Nanoseconds())/float64(b.N), "ns-direct/op")
	b.ReportMetric(float64(proxied.Nanoseconds())/float64(b.N), "ns-proxy/op")
	if direct > 0 {
		b.ReportMetric(float64(proxied)/float64(direct), "proxy/direct")
	}
}
