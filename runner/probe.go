package runner

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/plan"
	"golang.org/x/sync/errgroup"
)

// Cap is one row of a host's capability matrix.
type Cap struct {
	Name    string `json:"capability"`
	Present bool   `json:"present"`
	Version string `json:"version,omitempty"`
	Source  string `json:"source"`            // how it was established
	Message string `json:"message,omitempty"` // the tool's own words when absent
}

// HostCaps is one host's capability matrix plus the facts the session log
// records (kernel, clock offset, round trip).
type HostCaps struct {
	Host        string        `json:"host"`
	Reachable   bool          `json:"reachable"`
	Err         string        `json:"error,omitempty"`
	UID         int           `json:"uid"`
	Kernel      string        `json:"kernel,omitempty"`
	Arch        string        `json:"arch,omitempty"`
	OS          string        `json:"os,omitempty"`
	DiskPath    string        `json:"disk_path,omitempty"`
	DiskFreeKB  int64         `json:"disk_free_kb"`
	ClockOffset time.Duration `json:"clock_offset_ns"` // remote minus local, at the midpoint of the round trip
	RTT         time.Duration `json:"rtt_ns"`
	Caps        []Cap         `json:"capabilities"`
}

// Cap returns the named row.
func (h HostCaps) Cap(name string) (Cap, bool) {
	i := slices.IndexFunc(h.Caps, func(c Cap) bool { return c.Name == name })
	if i < 0 {
		return Cap{}, false
	}
	return h.Caps[i], true
}

// Probe builds every host's capability matrix, hosts in parallel. Each host
// costs one round trip for the probe script and three tiny ones for clock
// offset and RTT (the fastest of three is kept). An unreachable host is a
// HostCaps with Reachable false and Err set, so Probe itself cannot fail.
func Probe(ctx context.Context, pool *Pool, hosts []env.Host) []HostCaps {
	out := make([]HostCaps, len(hosts))
	var g errgroup.Group
	g.SetLimit(8)
	for i, h := range hosts {
		g.Go(func() error {
			out[i] = probeHost(ctx, poolShell{pool, h}, h.Name, pool.env.Workdir)
			return nil
		})
	}
	_ = g.Wait()
	return out
}

func probeHost(ctx context.Context, sh hostShell, host, workdir string) HostCaps {
	hc := HostCaps{Host: host}
	// The clock first: it also proves the host is reachable.
	best := time.Duration(-1)
	for range 3 {
		t0 := time.Now()
		out, _, code, err := sh.runScript(ctx, "date +%s%N")
		t1 := time.Now()
		if err != nil || code != 0 {
			if best < 0 {
				hc.Err = fmt.Sprintf("probe %s: %v", host, errOr(err, code))
				return hc
			}
			break
		}
		rtt := t1.Sub(t0)
		if best >= 0 && rtt >= best {
			continue
		}
		if remote, ok := parseEpochNanos(strings.TrimSpace(string(out))); ok {
			mid := t0.Add(rtt / 2)
			best, hc.RTT, hc.ClockOffset = rtt, rtt, remote.Sub(mid)
		} else if best < 0 {
			best, hc.RTT = rtt, rtt
		}
	}
	hc.Reachable = true
	tag := randSuffix()[:8]
	out, errOut, code, err := sh.runScript(ctx, probeScript(workdir, tag))
	if err != nil {
		hc.Err = fmt.Sprintf("probe %s: %v", host, err)
		return hc
	}
	kv := map[string]string{}
	for _, rec := range parseRecords(out) {
		for k, v := range rec {
			kv[k] = v
		}
	}
	if kv["probe.done"] != "1" {
		hc.Err = fmt.Sprintf("probe %s: script stopped early (exit %d)%s", host, code, stderrHint(errOut))
	}
	fillCaps(&hc, kv)
	return hc
}

// orNot is v, or def when the probe never got as far as recording v.
func orNot(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func errOr(err error, code int) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("exit %d", code)
}

// parseEpochNanos reads `date +%s%N`; a date without %N prints a literal
// "N" (busybox), read as whole seconds.
func parseEpochNanos(s string) (time.Time, bool) {
	if strings.HasSuffix(s, "N") {
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSuffix(s, "N"), "%"), 10, 64)
		return time.Unix(n, 0), err == nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1e18 {
		return time.Time{}, false
	}
	return time.Unix(0, n), true
}

// fillCaps turns the probe's key=value answer into capability rows.
func fillCaps(hc *HostCaps, kv map[string]string) {
	hc.UID, _ = strconv.Atoi(kv["uid"])
	hc.Kernel, hc.Arch, hc.OS, hc.DiskPath = kv["kernel"], kv["arch"], kv["os"], kv["disk.path"]
	hc.DiskFreeKB, _ = strconv.ParseInt(kv["disk.free_kb"], 10, 64)
	add := func(c Cap) { hc.Caps = append(hc.Caps, c) }
	yes := func(k string) bool { return kv[k] == "yes" }
	path := func(t string) string {
		if p := kv[t+".path"]; p != "no" {
			return p
		}
		return ""
	}
	switch {
	case kv["root"] == "yes":
		add(Cap{Name: "root", Present: true, Source: "id -u = 0"})
	case kv["sudo"] == "yes":
		add(Cap{Name: "root", Present: true, Source: "sudo -n true"})
	default:
		add(Cap{Name: "root", Present: false, Source: "id -u = " + kv["uid"] + "; sudo -n true failed", Message: "not root and no passwordless sudo"})
	}
	// Probed by doing: present means it really worked.
	for _, t := range []struct{ name, key, ver, how string }{
		{"iptables", "iptables", "iptables.version", "added and deleted a RETURN rule in a private chain"},
		{"netns", "netns", "ip.version", "created and deleted a throwaway network namespace"},
		{"netem", "netem", "tc.version", "added a netem qdisc on " + orNot(kv["netem.where"], "a throwaway netns or dummy link")},
		{"htb", "htb", "tc.version", "added an htb qdisc on " + orNot(kv["netem.where"], "a throwaway netns or dummy link")},
		{"faketime", "faketime", "faketime.version", "faketime -f +1d date shifted the clock (libc programs only; not Go)"},
		{"systemd", "systemctl", "systemctl.version", "/run/systemd/system exists (systemd is PID 1)"},
		{"docker", "docker", "docker.version", "docker info"},
		{"podman", "podman", "podman.version", "podman info"},
	} {
		c := Cap{Name: t.name, Present: yes(t.key + ".works"), Version: kv[t.ver], Source: t.how, Message: kv[t.key+".msg"]}
		if !c.Present && c.Message == "" {
			tool := t.key
			switch t.name {
			case "netns":
				tool = "ip"
			case "netem", "htb":
				tool = "tc"
			}
			if path(tool) == "" {
				c.Message = tool + " not installed"
			}
		}
		add(c)
	}
	dk, _ := hc.Cap("docker")
	pk, _ := hc.Cap("podman")
	cr := Cap{Name: "container-runtime", Present: dk.Present || pk.Present, Source: "docker or podman info"}
	if dk.Present {
		cr.Version = dk.Version
	} else if pk.Present {
		cr.Version = pk.Version
	}
	add(cr)
	// Found by path: the tool itself is the capability.
	for _, t := range []struct{ name, tool string }{
		{"tc", "tc"}, {"ip", "ip"}, {"stress-ng", "stress-ng"}, {"go", "go"}, {"dmsetup", "dmsetup"},
		{"toxiproxy", "toxiproxy-server"}, {"toxiproxy-cli", "toxiproxy-cli"},
	} {
		p := path(t.tool)
		c := Cap{Name: t.name, Present: p != "", Version: kv[t.tool+".version"], Source: "command -v " + t.tool}
		if p != "" {
			c.Source += " = " + p
		} else {
			c.Message = t.tool + " not installed"
		}
		add(c)
	}
	cg := kv["cgroup.version"]
	io := (cg == "2" && slices.Contains(strings.Fields(kv["cgroup.controllers"]), "io")) || (cg == "1" && kv["cgroup.controllers"] == "blkio")
	add(Cap{Name: "cgroup-io", Present: io, Version: "cgroup v" + cg, Source: "/sys/fs/cgroup controllers: " + kv["cgroup.controllers"]})
	// What dstgen itself relies on for bounded exec, jobs and verification.
	for _, t := range []string{"setsid", "timeout", "sha256sum", "nohup"} {
		p := kv["tool."+t]
		add(Cap{Name: t, Present: p != "" && p != "no", Source: "command -v " + t})
	}
	add(Cap{Name: "disk", Present: hc.DiskFreeKB > 0, Version: fmt.Sprintf("%d MiB free", hc.DiskFreeKB/1024), Source: "df -Pk " + hc.DiskPath})
}

// capKeywords maps §6b requirement text to a capability, first match wins,
// so the specific (netem) is tried before the general (tc, root). Keywords
// match whole words only: "etc" is not tc and "MongoDB" is not Go.
var capKeywords = []struct {
	cap  string
	keys []string
}{
	{"netem", []string{"netem"}},
	{"htb", []string{"htb", "bandwidth"}},
	{"iptables", []string{"iptables", "nftables", "cap_net_admin"}},
	{"netns", []string{"netns", "network namespace", "network namespaces", "net namespace"}},
	{"tc", []string{"tc", "traffic control"}},
	{"faketime", []string{"faketime", "libfaketime"}},
	{"systemd", []string{"systemd", "systemctl"}},
	{"stress-ng", []string{"stress-ng", "stress ng"}},
	{"container-runtime", []string{"docker", "podman", "container runtime", "compose"}},
	{"go", []string{"go toolchain", "golang", "go compiler", "go"}},
	{"dmsetup", []string{"dm-flakey", "dm-error", "device-mapper", "device mapper", "dmsetup"}},
	{"cgroup-io", []string{"cgroup", "cgroups", "cgroup v2", "cgroup v1"}},
	{"toxiproxy", []string{"toxiproxy"}},
	{"root", []string{"root", "sudo"}},
}

var capKeywordRes = func() [][]*regexp.Regexp {
	out := make([][]*regexp.Regexp, len(capKeywords))
	for i, k := range capKeywords {
		for _, key := range k.keys {
			out[i] = append(out[i], regexp.MustCompile(`(?i)(^|[^a-z0-9_-])`+regexp.QuoteMeta(key)+`($|[^a-z0-9_-])`))
		}
	}
	return out
}()

// CapabilityFor returns the capability a §6b requirement names, or "" when
// no probe covers it.
func CapabilityFor(requirement string) string {
	for i, res := range capKeywordRes {
		for _, re := range res {
			if re.MatchString(requirement) {
				return capKeywords[i].cap
			}
		}
	}
	return ""
}

// Requirement presence values in a ReqRow.
const (
	ReqPresent = "yes"
	ReqMissing = "no"
	ReqUnknown = "unknown" // no probe covers it; the operator must confirm
	ReqBySUT   = "by-sut"  // brought up by the SUT, not an operator install
)

// ReqRow is one plan §6b requirement checked on one host: the row the
// session log's capability matrix and the analyzer's INCONCLUSIVE-env
// decision read.
type ReqRow struct {
	Host         string   `json:"host"`
	Requirement  string   `json:"requirement"`
	VersionFloor string   `json:"version_floor,omitempty"`
	Capability   string   `json:"capability,omitempty"`
	Present      string   `json:"present"` // yes | no | unknown | by-sut
	Version      string   `json:"version,omitempty"`
	Source       string   `json:"source"`
	InstallHint  string   `json:"install_hint,omitempty"`
	UsedBy       []string `json:"used_by,omitempty"`
	// InconclusiveEnv lists the scenarios this row makes INCONCLUSIVE-env
	// (its UsedBy) when Present is no; empty otherwise.
	InconclusiveEnv []string `json:"inconclusive_env,omitempty"`
	Line            int      `json:"line,omitempty"`
}

// Fields returns the row as key=value pairs.
func (r ReqRow) Fields() [][2]string {
	return [][2]string{{"host", r.Host}, {"requirement", r.Requirement}, {"capability", r.Capability},
		{"present", r.Present}, {"version", r.Version}, {"source", r.Source}, {"floor", r.VersionFloor},
		{"used_by", strings.Join(r.UsedBy, ",")}, {"hint", r.InstallHint},
		{"inconclusive_env", strings.Join(r.InconclusiveEnv, ",")}, {"line", strconv.Itoa(r.Line)}}
}

// MapRequirements checks each §6b requirement against each reachable
// host's matrix. A requirement is present on a host when its capability is
// present and its version meets the floor (when both carry a number).
func MapRequirements(reqs []plan.EnvReq, hosts []HostCaps) []ReqRow {
	var rows []ReqRow
	for _, h := range hosts {
		for _, rq := range reqs {
			r := ReqRow{Host: h.Host, Requirement: rq.Requirement, VersionFloor: rq.VersionFloor,
				InstallHint: rq.InstallHint, UsedBy: rq.UsedBy, Line: rq.Line, Capability: CapabilityFor(rq.Requirement)}
			switch {
			case rq.BroughtUpBySUT:
				r.Present, r.Source = ReqBySUT, "brought up by SUT (not an operator install)"
			case !h.Reachable:
				r.Present, r.Source = ReqUnknown, "host unreachable: "+h.Err
			case r.Capability == "":
				r.Present, r.Source = ReqUnknown, "no probe for this requirement; confirm by hand"
			default:
				c, _ := h.Cap(r.Capability)
				r.Version, r.Source = c.Version, c.Source
				r.Present = ReqMissing
				if c.Present {
					r.Present = ReqPresent
				} else if c.Message != "" {
					r.Source += ": " + c.Message
				}
				if r.Present == ReqPresent && !meetsFloor(c.Version, rq.VersionFloor) {
					r.Present = ReqMissing
					r.Source += fmt.Sprintf(": version %q below floor %q", c.Version, rq.VersionFloor)
				}
			}
			if r.Present == ReqMissing {
				r.InconclusiveEnv = rq.UsedBy
			}
			rows = append(rows, r)
		}
	}
	return rows
}

var versionNum = regexp.MustCompile(`\d+(\.\d+)+`)

// meetsFloor compares the first dotted number of version against floor's;
// a floor without one ("any") or an unparseable version passes.
func meetsFloor(version, floor string) bool {
	f := versionNum.FindString(floor)
	v := versionNum.FindString(version)
	if f == "" || v == "" {
		return true
	}
	fs, vs := strings.Split(f, "."), strings.Split(v, ".")
	for i := range max(len(fs), len(vs)) {
		var a, b int
		if i < len(vs) {
			a, _ = strconv.Atoi(vs[i])
		}
		if i < len(fs) {
			b, _ = strconv.Atoi(fs[i])
		}
		if a != b {
			return a > b
		}
	}
	return true
}

// FixtureHostCaps builds a reachable host's matrix from probe key=value
// answers, exactly as Probe does from a live host: for golden tests and for
// replaying a recorded probe.
func FixtureHostCaps(host string, kv map[string]string) HostCaps {
	hc := HostCaps{Host: host, Reachable: true}
	fillCaps(&hc, kv)
	return hc
}
