package runner

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// sessionClock is the old probe's method, kept for the comparison: time a
// whole `date +%s%N` SSH round trip, session setup included, the fastest
// of three.
func sessionClock(ctx context.Context, p *Pool, sh poolShell) (off, rtt time.Duration, err error) {
	best := time.Duration(-1)
	for range 3 {
		var out bytes.Buffer
		t0 := time.Now()
		if _, err = p.Run(ctx, sh.h, "date +%s%N", nil, &out, nil); err != nil {
			return 0, 0, err
		}
		d := time.Since(t0)
		if remote, _, ok := parseEpoch(out.String()); ok && (best < 0 || d < best) {
			best, rtt, off = d, d, remote.Sub(t0.Add(d/2))
		}
	}
	return off, rtt, nil
}

// TestMeasureClockSameClock: sshd on 127.0.0.1 shares this machine's
// clock, so the measured offset must lie within its own uncertainty (plus
// a small epsilon for the remote date's fork), and the uncertainty must be
// far below half the whole-session round trip the old probe reported.
func TestMeasureClockSameClock(t *testing.T) {
	p, e, _, _ := testPool(t, 1, "", Options{})
	h := e.Hosts[0]
	ctx := context.Background()
	cs, err := measurePoolClock(ctx, p, h, ClockSamples)
	if err != nil {
		t.Fatal(err)
	}
	if cs.Samples != ClockSamples || cs.RTT <= 0 || cs.Uncertainty != cs.RTT/2 {
		t.Fatalf("clock = %+v; want %d samples and uncertainty = rtt/2", cs, ClockSamples)
	}
	const eps = 2 * time.Millisecond
	if cs.Offset.Abs() > cs.Uncertainty+eps {
		t.Errorf("offset %v against the same clock exceeds its uncertainty %v + %v", cs.Offset, cs.Uncertainty, eps)
	}
	_, oldRTT, err := sessionClock(ctx, p, poolShell{p, h})
	if err != nil {
		t.Fatal(err)
	}
	// Not a timing assertion between runs: both figures come from the
	// same host in the same moment, and one excludes session setup.
	if cs.Uncertainty >= oldRTT/2 {
		t.Errorf("uncertainty %v not below the old whole-session half round trip %v", cs.Uncertainty, oldRTT/2)
	}
	t.Logf("one session: offset %v ± %v (rtt %v); old whole-session rtt %v", cs.Offset, cs.Uncertainty, cs.RTT, oldRTT)
	if _, err := measurePoolClock(ctx, p, h, 0); err == nil {
		t.Error("0 samples accepted")
	}
}

// BenchmarkClockOffset compares the old session-timing clock offset with
// measurePoolClock on the same sshd: both report |offset| and the implied
// uncertainty (half the round trip) in microseconds.
func BenchmarkClockOffset(b *testing.B) {
	sshtest.Require(b)
	e, _, _ := benchHosts(b)
	p := NewPool(e, Options{})
	defer p.Close()
	h := e.Hosts[0]
	ctx := context.Background()
	b.Run("session", func(b *testing.B) {
		var off, unc time.Duration
		for b.Loop() {
			o, rtt, err := sessionClock(ctx, p, poolShell{p, h})
			if err != nil {
				b.Fatal(err)
			}
			off, unc = off+o.Abs(), unc+rtt/2
		}
		b.ReportMetric(float64(off.Microseconds())/float64(b.N), "abs_offset_us")
		b.ReportMetric(float64(unc.Microseconds())/float64(b.N), "uncertainty_us")
	})
	b.Run("one-session", func(b *testing.B) {
		var off, unc time.Duration
		for b.Loop() {
			cs, err := measurePoolClock(ctx, p, h, ClockSamples)
			if err != nil {
				b.Fatal(err)
			}
			off, unc = off+cs.Offset.Abs(), unc+cs.Uncertainty
		}
		b.ReportMetric(float64(off.Microseconds())/float64(b.N), "abs_offset_us")
		b.ReportMetric(float64(unc.Microseconds())/float64(b.N), "uncertainty_us")
	})
}

// TestProbeNetnsHostFacts probes a host that is a network namespace of
// this machine (our CI's shape): systemd must read false even with a
// systemctl binary (PID 1 is not systemd in the host's network), the
// kernel is shared, and goos/goarch are the control node's.
func TestProbeNetnsHostFacts(t *testing.T) {
	p, e, _ := netnsPool(t, 10*time.Second)
	hc := Probe(context.Background(), p, e.Hosts)[0]
	if !hc.Reachable || hc.Err != "" {
		t.Fatalf("probe = %+v", hc)
	}
	if hc.Systemd {
		c, _ := hc.Cap("systemd")
		t.Errorf("systemd=true in a network namespace: %+v", c)
	}
	if !hc.SharedKernel || hc.BootID == "" {
		t.Errorf("shared_kernel=%v boot_id=%q; a namespace shares this kernel", hc.SharedKernel, hc.BootID)
	}
	if hc.OS != runtime.GOOS || hc.Arch != runtime.GOARCH {
		t.Errorf("goos/goarch = %s/%s, want %s/%s", hc.OS, hc.Arch, runtime.GOOS, runtime.GOARCH)
	}
	if hc.ClockSamples != ClockSamples || hc.ClockOffset.Abs() > hc.ClockUncertainty+2*time.Millisecond {
		t.Errorf("clock on a shared kernel: offset %v ± %v over %d samples", hc.ClockOffset, hc.ClockUncertainty, hc.ClockSamples)
	}
}
