package runner

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/dstgen/dstgen/testsupport/golden"
)

// TestProbeFixtureCaps pins the matrix fillCaps builds from one recorded
// probe's key=value answers (a host without netem, as these machines
// are), exactly as Probe builds it from a live host. The file is the
// input of cmd/dstgen's TestProbeMatrixGolden, so the chain answers →
// matrix → printed table stays pinned without a fixture constructor in
// runner's API.
func TestProbeFixtureCaps(t *testing.T) {
	hc := HostCaps{Host: "n1", Reachable: true}
	fillCaps(&hc, map[string]string{
		"uid": "0", "root": "yes", "kernel": "6.1.0-x", "arch": "x86_64", "os": "Debian GNU/Linux 12",
		"disk.path": "/opt", "disk.free_kb": "1048576",
		"iptables.path": "/usr/sbin/iptables", "iptables.version": "iptables v1.8.9 (nf_tables)", "iptables.works": "yes",
		"ip.path": "/usr/sbin/ip", "netns.works": "yes", "tc.path": "/usr/sbin/tc", "tc.version": "tc utility, iproute2-6.1.0",
		"netem.where": "lo in throwaway netns", "netem.works": "no", "netem.msg": "Error: Specified qdisc kind is unknown.",
		"htb.works": "yes", "go.path": "/usr/local/go/bin/go", "go.version": "go version go1.21.5 linux/amd64",
		"cgroup.version": "2", "cgroup.controllers": "cpu io memory", "tool.setsid": "/usr/bin/setsid",
	})
	b, err := json.MarshalIndent([]HostCaps{hc}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "probe", "n1.caps.json"), append(b, '\n'))
}
