package capability

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

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
	hosts := []runner.HostCaps{
		{Host: "h1", Reachable: true, Caps: []runner.Cap{
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

func TestCapabilityForWholeWords(t *testing.T) {
	for _, req := range []string{"Postgres, etc.", "MongoDB 6", "rootless podman-free setup"} {
		if got := CapabilityFor(req); got == "tc" || got == "go" || got == "root" {
			t.Errorf("CapabilityFor(%q) = %q from a partial word", req, got)
		}
	}
}

// TestSummarize: a missing requirement makes the selected scenarios that
// need it INCONCLUSIVE-env and leaves the others runnable; only "nothing
// can run" blocks. Counts are per requirement.
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
	everyone := func(present string) []ReqRow {
		return append(rows(map[string]string{"h1": ReqPresent, "h2": ReqPresent}),
			ReqRow{Host: "h1", Requirement: "go", Key: "go", Present: present, Line: 11})
	}
	all := []string{"S1", "S2", "S3", "S4"}
	missing := rows(map[string]string{"h1": ReqPresent, "h2": ReqMissing})
	tests := []struct {
		name              string
		rows              []ReqRow
		caps              map[string]bool
		selected          []string
		blocking          bool
		runnable, inconcl string
		line              string
	}{
		{"all present", rows(map[string]string{"h1": ReqPresent, "h2": ReqPresent}), nil, nil, false, "S1,S2,S3,S4", "",
			"capabilities: 2 present, 0 missing, 1 by-sut"},
		{"missing for some scenarios", missing, nil, nil, false, "S1,S4", "S2,S3",
			"capabilities: 1 present, 1 missing, 1 by-sut: systemd (h2) → S2, S3 INCONCLUSIVE-env; runnable: S1, S4"},
		{"disabled", missing, map[string]bool{"systemd": false}, nil, false, "S1,S4", "S2,S3",
			"capabilities: 1 present, 1 missing, 1 by-sut: systemd (h2) → S2, S3 INCONCLUSIVE-env, disabled in env.yml; runnable: S1, S4"},
		{"not selected", missing, nil, []string{"S1", "S30"}, false, "S1,S30", "",
			"capabilities: 1 present, 1 missing, 1 by-sut: systemd (h2) → its scenarios not selected; runnable: S1, S30"},
		{"only its scenarios selected: nothing can run", missing, nil, []string{"S3.a", "S2"}, true, "", "S3.a,S2",
			"capabilities: 1 present, 1 missing, 1 by-sut: systemd (h2) → S3.a, S2 INCONCLUSIVE-env; nothing can run, BLOCKING"},
		{"needed by every scenario (none named)", everyone(ReqMissing), nil, nil, true, "", "S1,S2,S3,S4", ""},
		{"unknown never blocks", everyone(ReqUnknown), nil, nil, false, "S1,S2,S3,S4", "", ""},
	}
	for _, tc := range tests {
		s := Summarize(tc.rows, tc.caps, tc.selected, all)
		if s.Blocking != tc.blocking || strings.Join(s.Runnable, ",") != tc.runnable || strings.Join(s.Inconclusive, ",") != tc.inconcl {
			t.Errorf("%s: blocking=%v runnable=%v inconclusive=%v; want %v %s %s", tc.name, s.Blocking, s.Runnable, s.Inconclusive, tc.blocking, tc.runnable, tc.inconcl)
		}
		if tc.line != "" && s.Line() != tc.line {
			t.Errorf("%s: line\n got %q\nwant %q", tc.name, s.Line(), tc.line)
		}
	}
}

// TestProblemLine: one line per missing requirement, with the scenarios
// it affects and the fix (the plan's install hint, or the env.yml key).
func TestProblemLine(t *testing.T) {
	m := MissingReq{Key: "systemd", Requirement: "systemd", Hosts: []string{"h1", "h2"}, UsedBy: []string{"S2"}, Selected: []string{"S2"}, InstallHint: "`apt-get install systemd`"}
	if got, want := m.Problem("env.yml"), "systemd missing on h1,h2 → S2 INCONCLUSIVE-env; fix: apt-get install systemd, or set dstgen.capabilities.systemd: false in env.yml to say the hosts lack it"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	m.Disabled = true
	if got := m.Problem("env.yml"); !strings.HasSuffix(got, "dstgen.capabilities.systemd: false in env.yml says so") || strings.Contains(got, "fix:") {
		t.Errorf("disabled: %q", got)
	}
}

// MissingFor: the requirement a scenario (or an arm of it) needs, or one
// the plan gives every scenario.
func TestMissingFor(t *testing.T) {
	rows := []ReqRow{
		{Requirement: "iptables", Present: ReqPresent, UsedBy: []string{"S1"}},
		{Requirement: "systemd", Present: ReqMissing, UsedBy: []string{"S2", "S3"}},
		{Requirement: "netem", Present: ReqUnknown, UsedBy: []string{"S1"}},
	}
	for id, want := range map[string]string{"S1": "", "S2": "systemd", "S3.a": "systemd", "S30": ""} {
		got := ""
		if r := MissingFor(rows, id); r != nil {
			got = r.Requirement
		}
		if got != want {
			t.Errorf("MissingFor(%s) = %q, want %q", id, got, want)
		}
	}
	if r := MissingFor(append(rows, ReqRow{Requirement: "go", Present: ReqMissing}), "S1"); r == nil || r.Requirement != "go" {
		t.Errorf("a requirement of every scenario: %+v", r)
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

// TestProbeBinaryRequirements probes a real sshd with the etcd example
// plan: etcd-server and "etcd-client (etcdctl)" name binaries, which must
// be found with their versions (the real etcd and etcdctl of this
// machine) and meet the plan's 3.4 floor.
func TestProbeBinaryRequirements(t *testing.T) {
	for _, b := range []string{"etcd", "etcdctl"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s not installed (scripts/test.sh installs it)", b)
		}
	}
	pl, err := plan.Parse(filepath.Join("..", "examples", "etcd", "docs", "testing-plans", "etcd-kv-guarantees.md"))
	if err != nil {
		t.Fatal(err)
	}
	bins := RequirementBinaries(pl.EnvReqs)
	if !strings.Contains(strings.Join(bins, " "), "etcd etcdctl") {
		t.Fatalf("binaries from the plan = %v; want etcd and etcdctl", bins)
	}
	sshtest.Require(t)
	k := sshtest.NewKeys(t)
	e, err := env.Load(k.WriteEnv(t, sshtest.StartTrusted(t, k, 1), nil, ""))
	if err != nil {
		t.Fatal(err)
	}
	p := runner.NewPool(e, runner.Options{})
	t.Cleanup(func() { _ = p.Close() })
	caps := runner.Probe(context.Background(), p, e.Hosts, bins...)
	rows := MapRequirements(pl.EnvReqs, caps)
	for _, want := range []struct{ req, cap string }{{"etcd-server", "binary:etcd"}, {"etcd-client (etcdctl)", "binary:etcdctl"}} {
		found := false
		for _, r := range rows {
			if r.Requirement != want.req {
				continue
			}
			found = true
			if r.Capability != want.cap || r.Present != ReqPresent || !strings.Contains(r.Version, "3.") {
				t.Errorf("%s row = %+v; want %s present with its version", want.req, r, want.cap)
			}
		}
		if !found {
			t.Errorf("no row for %s in %+v", want.req, rows)
		}
	}
}
