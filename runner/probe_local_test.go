package runner

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/plan"
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
	if after := netState(t); after != before {
		t.Errorf("probe left state behind:\nbefore %q\nafter  %q", before, after)
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

func TestCapabilityFor(t *testing.T) {
	tests := map[string]string{
		"iptables (CAP_NET_ADMIN)": "iptables",
		"tc / netem":               "netem",
		"tc":                       "tc",
		"Go toolchain":             "go",
		"Go 1.22":                  "go",
		"MinIO / S3-compatible":    "",
		"libfaketime":              "faketime",
		"Network namespaces":       "netns",
		"docker + compose":         "container-runtime",
		"systemd":                  "systemd",
		"stress-ng":                "stress-ng",
		"dm-flakey":                "dmsetup",
		"cgroup v2 IO controller":  "cgroup-io",
		"root or sudo":             "root",
		"Postgres 15":              "",
	}
	for req, want := range tests {
		if got := CapabilityFor(req); got != want {
			t.Errorf("CapabilityFor(%q) = %q, want %q", req, got, want)
		}
	}
}

func TestMapRequirements(t *testing.T) {
	hosts := []HostCaps{
		{Host: "h1", Reachable: true, Caps: []Cap{
			{Name: "iptables", Present: true, Version: "iptables v1.8.9"},
			{Name: "netem", Present: false, Source: "added a netem qdisc", Message: "Error: Specified qdisc kind is unknown."},
			{Name: "go", Present: true, Version: "go version go1.21.5 linux/amd64"},
		}},
		{Host: "h2", Reachable: false, Err: "dial: refused"},
	}
	reqs := []plan.EnvReq{
		{Requirement: "iptables (CAP_NET_ADMIN)", VersionFloor: "any", UsedBy: []string{"S1", "S3"}, Line: 10},
		{Requirement: "tc / netem", UsedBy: []string{"S3", "S5"}, InstallHint: "apt-get install iproute2", Line: 11},
		{Requirement: "Go toolchain", VersionFloor: "1.22", UsedBy: []string{"S1"}, Line: 12},
		{Requirement: "MinIO / S3-compatible", UsedBy: []string{"S4"}, InstallHint: "brought up by SUT", BroughtUpBySUT: true, Line: 13},
		{Requirement: "Postgres 15", UsedBy: []string{"S6"}, Line: 14},
	}
	rows := MapRequirements(reqs, hosts)
	got := map[string]ReqRow{}
	for _, r := range rows {
		got[r.Host+"|"+r.Requirement] = r
	}
	want := map[string]struct {
		present string
		inconc  string
	}{
		"h1|iptables (CAP_NET_ADMIN)": {ReqPresent, ""},
		"h1|tc / netem":               {ReqMissing, "S3,S5"},
		"h1|Go toolchain":             {ReqMissing, "S1"}, // 1.21.5 < 1.22
		"h1|MinIO / S3-compatible":    {ReqBySUT, ""},
		"h1|Postgres 15":              {ReqUnknown, ""},
		"h2|tc / netem":               {ReqUnknown, ""},
	}
	for k, w := range want {
		r := got[k]
		if r.Present != w.present || strings.Join(r.InconclusiveEnv, ",") != w.inconc {
			t.Errorf("%s: present=%s inconclusive=%v, want %s %s", k, r.Present, r.InconclusiveEnv, w.present, w.inconc)
		}
	}
	if r := got["h1|tc / netem"]; !strings.Contains(r.Source, "Specified qdisc kind is unknown") || r.Line != 11 {
		t.Errorf("netem row = %+v; want the kernel's message and plan line", r)
	}
}

func TestMeetsFloor(t *testing.T) {
	tests := []struct {
		v, f string
		ok   bool
	}{
		{"go1.26.8", "1.22", true}, {"go version go1.21.5", "1.22", false}, {"x", "1.22", true},
		{"1.22", "any", true}, {"iptables v1.8.9", "1.8.10", false}, {"2.0", "1.99.1", true},
	}
	for _, tc := range tests {
		if got := meetsFloor(tc.v, tc.f); got != tc.ok {
			t.Errorf("meetsFloor(%q, %q) = %v", tc.v, tc.f, got)
		}
	}
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

func TestCapabilityForWholeWords(t *testing.T) {
	for _, req := range []string{"Postgres, etc.", "MongoDB 6", "rootless podman-free setup"} {
		if got := CapabilityFor(req); got == "tc" || got == "go" || got == "root" {
			t.Errorf("CapabilityFor(%q) = %q from a partial word", req, got)
		}
	}
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

// TestSummarize: a missing requirement blocks unless env.yml disables its
// capability or selects none of its scenarios; counts are per requirement.
func TestSummarize(t *testing.T) {
	rows := func(present map[string]string) []ReqRow {
		var rs []ReqRow
		for _, h := range []string{"h1", "h2"} {
			rs = append(rs,
				ReqRow{Host: h, Requirement: "systemd", Key: "systemd", Present: present[h], UsedBy: []string{"S2", "S3"}, Line: 9},
				ReqRow{Host: h, Requirement: "iptables", Key: "iptables", Present: ReqPresent, UsedBy: []string{"S1"}, Line: 8},
				ReqRow{Host: h, Requirement: "MinIO", Key: "minio", Present: ReqBySUT, UsedBy: []string{"S4"}, Line: 10})
		}
		return rs
	}
	missing := rows(map[string]string{"h1": ReqPresent, "h2": ReqMissing})
	tests := []struct {
		name      string
		rows      []ReqRow
		caps      map[string]bool
		scenarios []string
		blocking  bool
		line      string
	}{
		{"all present", rows(map[string]string{"h1": ReqPresent, "h2": ReqPresent}), nil, nil, false,
			"capabilities: 2 present, 0 missing, 1 by-sut"},
		{"missing blocks", missing, nil, nil, true,
			"capabilities: 1 present, 1 missing, 1 by-sut: systemd (h2) → S2, S3 INCONCLUSIVE-env, BLOCKING"},
		{"disabled", missing, map[string]bool{"systemd": false}, nil, false,
			"capabilities: 1 present, 1 missing, 1 by-sut: systemd (h2) → S2, S3 INCONCLUSIVE-env, disabled in env.yml"},
		{"enabled is not disabled", missing, map[string]bool{"systemd": true}, nil, true, ""},
		{"not selected", missing, nil, []string{"S1", "S30"}, false,
			"capabilities: 1 present, 1 missing, 1 by-sut: systemd (h2) → S2, S3 INCONCLUSIVE-env, its scenarios not selected"},
		{"arm of a selected scenario", missing, nil, []string{"S3.a"}, true, ""},
	}
	for _, tc := range tests {
		s := Summarize(tc.rows, tc.caps, tc.scenarios)
		if s.Blocking != tc.blocking {
			t.Errorf("%s: blocking=%v want %v (%+v)", tc.name, s.Blocking, tc.blocking, s)
		}
		if tc.line != "" && s.Line() != tc.line {
			t.Errorf("%s: line\n got %q\nwant %q", tc.name, s.Line(), tc.line)
		}
	}
}

func TestBinaryFor(t *testing.T) {
	tests := []struct {
		req, bin string
		explicit bool
	}{
		{"etcd-server", "etcd", true},
		{"etcd-client (etcdctl)", "etcdctl", true},
		{"MinIO / S3-compatible", "minio", false},
		{"redis-server 7", "redis-server", false},
		{"≥ 3 hosts", "", false},
	}
	for _, tc := range tests {
		if b, ex := BinaryFor(tc.req); b != tc.bin || ex != tc.explicit {
			t.Errorf("BinaryFor(%q) = %q, %v; want %q, %v", tc.req, b, ex, tc.bin, tc.explicit)
		}
	}
}
