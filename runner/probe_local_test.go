package runner

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestProbeLocal runs the probe script with the local sh (as root here) and
// checks its netem and iptables answers against a direct attempt made by
// the test itself in its own namespace.
func TestProbeLocal(t *testing.T) {
	if out, _ := exec.Command("id", "-u").Output(); strings.TrimSpace(string(out)) != "0" {
		t.Skip("needs root: the probe creates a throwaway netns and iptables chain")
	}
	before := netState(t)
	hc := probeHost(context.Background(), localShell{}, "local", t.TempDir(), localBootID(), []string{"sh", "no-such-binary-dstgen"})
	if !hc.Reachable || hc.Err != "" {
		t.Fatalf("probe = %+v", hc)
	}
	// A probe of another package's test (validate on loopback hosts) may
	// hold its own chain for a moment: only what outlives every such
	// probe is left behind, so a new line must be gone within 15 s.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		extra := newLines(before, netState(t))
		if extra == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("probe left state behind:\nbefore %q\nnew    %q", before, extra)
			break
		}
	}
	if c, _ := hc.Cap("root"); !c.Present {
		t.Error("root not detected")
	}
	if c, _ := hc.Cap("iptables"); !c.Present {
		t.Errorf("iptables as root = %+v", c)
	}
	// Ground truth for netem, in the test's own namespace.
	ns := "dstgen-t-" + randSuffix()[:6]
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v %s", err, out)
	}
	defer exec.Command("ip", "netns", "del", ns).Run()
	out, err := exec.Command("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms").CombinedOutput()
	netem, _ := hc.Cap("netem")
	if netem.Present != (err == nil) {
		t.Errorf("probe netem present=%v, direct attempt err=%v %s", netem.Present, err, out)
	}
	if err != nil && !strings.Contains(netem.Message, strings.TrimSpace(strings.TrimPrefix(string(out), "Error: "))) {
		t.Errorf("netem message %q does not carry the kernel's %q", netem.Message, out)
	}
	if hc.DiskFreeKB <= 0 || hc.Kernel == "" || hc.Arch == "" || hc.RTT <= 0 {
		t.Errorf("facts missing: %+v", hc)
	}
	if hc.ClockOffset > time.Second || hc.ClockOffset < -time.Second {
		t.Errorf("clock offset against itself = %v", hc.ClockOffset)
	}
	// The facts deploy and cleanup read, against this machine's own.
	if !hc.SharedKernel || hc.BootID != localBootID() {
		t.Errorf("shared_kernel=%v boot_id=%q; the local sh runs on this kernel (%q)", hc.SharedKernel, hc.BootID, localBootID())
	}
	if hc.OS != runtime.GOOS || hc.Arch != runtime.GOARCH {
		t.Errorf("goos/goarch = %s/%s, want %s/%s", hc.OS, hc.Arch, runtime.GOOS, runtime.GOARCH)
	}
	if b, _ := os.ReadFile("/proc/1/comm"); strings.TrimSpace(string(b)) != "systemd" && hc.Systemd {
		t.Errorf("systemd=true although PID 1 is %q", b)
	}
	if _, err := os.Stat("/.dockerenv"); err == nil && hc.Container != "docker" {
		t.Errorf("container=%q with /.dockerenv present", hc.Container)
	}
	if c, ok := hc.Cap(BinaryCap("sh")); !ok || !c.Present {
		t.Errorf("binary sh row = %+v, %v", c, ok)
	}
	if c, ok := hc.Cap(BinaryCap("no-such-binary-dstgen")); !ok || c.Present {
		t.Errorf("missing binary row = %+v, %v", c, ok)
	}
}

// newLines is the lines of after that before lacks.
func newLines(before, after string) string {
	had := map[string]bool{}
	for _, l := range strings.Split(before, "\n") {
		had[l] = true
	}
	var b strings.Builder
	for _, l := range strings.Split(after, "\n") {
		if l != "" && !had[l] {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func netState(t *testing.T) string {
	t.Helper()
	ns, _ := exec.Command("ip", "netns", "list").Output()
	ipt, _ := exec.Command("iptables", "-S").Output()
	links, _ := exec.Command("ip", "-o", "link").Output()
	var b strings.Builder
	for _, s := range []string{string(ns), string(ipt), string(links)} {
		for _, l := range strings.Split(s, "\n") {
			if strings.Contains(l, "dstgen-probe") || strings.Contains(l, "DSTGEN_PROBE") || strings.Contains(l, "dgp") {
				b.WriteString(l + "\n")
			}
		}
	}
	return b.String()
}

func FuzzParseProbeOutput(f *testing.F) {
	f.Add([]byte("uid=0\nroot=yes\nnetem.works=no\nnetem.msg=Error: x\ndisk.free_kb=12\nprobe.done=1\n"))
	f.Add([]byte("garbage\n=x\n--\ncgroup.version=2\ncgroup.controllers=io cpu\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		kv := map[string]string{}
		for _, rec := range parseRecords(b) {
			for k, v := range rec {
				kv[k] = v
			}
		}
		var hc HostCaps
		fillCaps(&hc, kv)
		if _, ok := hc.Cap("netem"); !ok {
			t.Fatal("netem row missing")
		}
		if kv["netem.works"] != "yes" {
			if c, _ := hc.Cap("netem"); c.Present {
				t.Fatal("netem present without netem.works=yes")
			}
		}
	})
}

// TestFillCapsTrafficShapingMessages: when netem and htb could not be tried
// (no root) or tc is missing, the rows say why, never that a qdisc is "not
// installed" as if it were a program.
func TestFillCapsTrafficShapingMessages(t *testing.T) {
	tests := []struct {
		name string
		kv   map[string]string
		want string
	}{
		{"no root", map[string]string{"tc.path": "/usr/sbin/tc", "netem.works": "no", "netem.msg": "no throwaway netns or dummy link to test on (needs root)",
			"htb.works": "no", "htb.msg": "no throwaway netns or dummy link to test on (needs root)"}, "needs root"},
		{"no tc, old script without htb.msg", map[string]string{"tc.path": "no", "netem.works": "no"}, "tc not installed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hc HostCaps
			fillCaps(&hc, tc.kv)
			for _, name := range []string{"netem", "htb"} {
				c, ok := hc.Cap(name)
				if !ok || c.Present || !strings.Contains(c.Message, tc.want) || strings.Contains(c.Message, name+" not installed") {
					t.Errorf("%s row = %+v; want absent with a message containing %q", name, c, tc.want)
				}
				if strings.HasSuffix(c.Source, " on ") {
					t.Errorf("%s source %q names no device", name, c.Source)
				}
			}
		})
	}
}
