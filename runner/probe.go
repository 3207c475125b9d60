package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// HostCaps is one host's capability matrix plus the facts the session log,
// deploy and cleanup read. When Reachable is false only Host, Err (and
// Sources) mean anything: JSON carries nothing else, so no zero can pass
// for a fact.
type HostCaps struct {
	Host      string `json:"host"`
	Reachable bool   `json:"reachable"`
	// Refused: the host answered but refused us (authentication, host
	// key): a setup error, not a network one.
	Refused bool   `json:"refused,omitempty"`
	Err     string `json:"error,omitempty"`
	UID     int    `json:"uid"`
	Kernel  string `json:"kernel,omitempty"`
	// OS and Arch are GOOS/GOARCH spellings (linux, amd64): what deploy
	// builds the workload for. Machine is uname -m, Distro os-release's
	// PRETTY_NAME.
	OS      string `json:"goos,omitempty"`
	Arch    string `json:"goarch,omitempty"`
	Machine string `json:"machine,omitempty"`
	Distro  string `json:"distro,omitempty"`
	// Systemd: PID 1 is systemd, in this host's network namespace, and
	// systemctl is-system-running answers; a systemctl binary alone is not.
	Systemd bool `json:"systemd"`
	// SharedKernel: the host's boot_id is the control node's (a network
	// namespace or container on this very kernel).
	SharedKernel bool   `json:"shared_kernel"`
	Container    string `json:"container"` // docker, podman, lxc, ...; "" none found
	BootID       string `json:"boot_id,omitempty"`
	DiskPath     string `json:"disk_path,omitempty"`
	DiskFreeKB   int64  `json:"disk_free_kb"`
	// ClockOffset is remote minus local at the midpoint of the fastest of
	// Clock.Samples round trips on one session, ± ClockUncertainty; RTT is
	// that round trip.
	ClockOffset      time.Duration     `json:"clock_offset_ns"`
	ClockUncertainty time.Duration     `json:"clock_uncertainty_ns"`
	ClockSamples     int               `json:"clock_samples"`
	RTT              time.Duration     `json:"rtt_ns"`
	Caps             []Cap             `json:"capabilities"`
	Sources          map[string]string `json:"sources,omitempty"` // env.Host.Sources: where each SSH value came from
}

// MarshalJSON writes an unreachable host as host, reachable, error and
// sources only.
func (h HostCaps) MarshalJSON() ([]byte, error) {
	type plain HostCaps
	if h.Reachable {
		return json.Marshal(plain(h))
	}
	return json.Marshal(struct {
		Host      string            `json:"host"`
		Reachable bool              `json:"reachable"`
		Refused   bool              `json:"refused,omitempty"`
		Err       string            `json:"error,omitempty"`
		Sources   map[string]string `json:"sources,omitempty"`
	}{h.Host, false, h.Refused, h.Err, h.Sources})
}

// Cap returns the named row.
func (h HostCaps) Cap(name string) (Cap, bool) {
	i := slices.IndexFunc(h.Caps, func(c Cap) bool { return c.Name == name })
	if i < 0 {
		return Cap{}, false
	}
	return h.Caps[i], true
}

// ClockSamples is how many round trips Probe's clock measurement takes.
const ClockSamples = 8

// Probe builds every host's capability matrix, hosts in parallel. Each host
// costs one session for the clock (ClockSamples round trips on it) and one
// round trip for the probe script. bins are binaries to look for (plan
// requirements that name one, see RequirementBinaries). An unreachable
// host is a HostCaps with Reachable false and Err set, so Probe itself
// cannot fail.
func Probe(ctx context.Context, pool *Pool, hosts []env.Host, bins ...string) []HostCaps {
	out := make([]HostCaps, len(hosts))
	local := localBootID()
	var g errgroup.Group
	g.SetLimit(8)
	for i, h := range hosts {
		g.Go(func() error {
			out[i] = probeHost(ctx, poolShell{pool, h}, h.Name, pool.env.HostWorkdir(h), local, bins)
			out[i].Sources = maps.Clone(h.Sources)
			return nil
		})
	}
	_ = g.Wait()
	return out
}

// Reach is one host's answer to a reachability check.
type Reach struct {
	Host      string            `json:"host"`
	Reachable bool              `json:"reachable"`
	Refused   bool              `json:"refused,omitempty"`
	RTT       time.Duration     `json:"rtt_ns,omitempty"` // the whole round trip, session setup included
	Err       string            `json:"error,omitempty"`
	Sources   map[string]string `json:"sources,omitempty"`
}

// ProbeReach checks that every host answers one bounded round trip, hosts
// in parallel: what deploy needs before it starts, without the whole
// capability matrix.
func ProbeReach(ctx context.Context, pool *Pool, hosts []env.Host) []Reach {
	out := make([]Reach, len(hosts))
	var g errgroup.Group
	g.SetLimit(8)
	for i, h := range hosts {
		g.Go(func() error {
			r := Reach{Host: h.Name, Sources: maps.Clone(h.Sources)}
			res, err := pool.Run(ctx, h, "true", nil, nil, nil)
			switch {
			case err != nil:
				r.Err, r.Refused = err.Error(), !unreachableErr(err)
			case res.ExitCode != 0:
				r.Err = fmt.Sprintf("true exited %d", res.ExitCode)
				r.Reachable, r.RTT = true, res.Elapsed
			default:
				r.Reachable, r.RTT = true, res.Elapsed
			}
			out[i] = r
			return nil
		})
	}
	_ = g.Wait()
	return out
}

// probeShell is what probing a host needs: scripts, and one streaming
// session for the clock.
type probeShell interface {
	hostShell
	streamShell
}

func probeHost(ctx context.Context, sh probeShell, host, workdir, localBoot string, bins []string) HostCaps {
	hc := HostCaps{Host: host}
	// The clock first: it also proves the host is reachable.
	cs, err := measureClock(ctx, sh, ClockSamples)
	if err != nil {
		hc.Err = fmt.Sprintf("probe %s: %v", host, err)
		hc.Refused = !unreachableErr(err)
		return hc
	}
	hc.Reachable = true
	hc.ClockOffset, hc.ClockUncertainty, hc.RTT, hc.ClockSamples = cs.Offset, cs.Uncertainty, cs.RTT, cs.Samples
	tag := randSuffix()[:8]
	out, errOut, code, err := sh.runScript(ctx, probeScript(workdir, tag, bins))
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
	hc.SharedKernel = hc.BootID != "" && hc.BootID == localBoot
	return hc
}

// localBootID is the control node's boot id ("" when unreadable, so that
// no host can match it).
func localBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// ClockSample is one host's clock against the control node's, measured
// NTP-style: Offset is remote minus local at the midpoint of the fastest
// round trip, within ± Uncertainty (half that round trip, plus half a
// second on a host whose date has no %N).
type ClockSample struct {
	Offset      time.Duration `json:"offset_ns"`
	Uncertainty time.Duration `json:"uncertainty_ns"`
	RTT         time.Duration `json:"rtt_ns"`
	Samples     int           `json:"samples"` // round trips answered
}

// MaxClockSamples bounds measurePoolClock's samples.
const MaxClockSamples = 64

// clockScript answers each line on stdin with the remote clock. The
// session is opened once, before the first sample, so no sample pays for
// SSH setup.
const clockScript = `while IFS= read -r _; do date +%s%N || exit 1; done`

// clockSampleTimeout bounds one sample's round trip.
const clockSampleTimeout = 5 * time.Second

// measurePoolClock measures host's clock offset on one open session: it sends
// samples (1..MaxClockSamples) lines to a remote read loop, timing each
// answer, and keeps the fastest round trip. The whole measurement is one
// bounded round trip of pool.
func measurePoolClock(ctx context.Context, pool *Pool, host env.Host, samples int) (ClockSample, error) {
	return measureClock(ctx, poolShell{pool, host}, samples)
}

// streamShell runs one script with stdin and stdout attached, until it
// exits or ctx ends.
type streamShell interface {
	runStream(ctx context.Context, script string, stdin io.Reader, stdout io.Writer) error
}

// runStream is one bounded Pool.Run: no retry, since the stream cannot be
// replayed.
func (s poolShell) runStream(ctx context.Context, script string, stdin io.Reader, stdout io.Writer) error {
	var errOut bytes.Buffer
	res, err := s.p.Run(ctx, s.h, script, stdin, stdout, &errOut)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("clock loop exited %d%s", res.ExitCode, stderrHint(errOut.Bytes()))
	}
	return nil
}

// stampedLine is one line of output and when its newline arrived.
type stampedLine struct {
	text string
	at   time.Time
}

// lineStamper timestamps every complete line written to it the moment the
// newline arrives, and hands it on without blocking (a full channel drops
// lines, which a sample then reports as missing).
type lineStamper struct {
	mu  sync.Mutex
	buf []byte
	ch  chan stampedLine
}

func (l *lineStamper) Write(b []byte) (int, error) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, b...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		select {
		case l.ch <- stampedLine{strings.TrimRight(string(l.buf[:i]), "\r"), now}:
		default:
		}
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 4096 { // not a clock: drop the noise
		l.buf = l.buf[:0]
	}
	return len(b), nil
}

func measureClock(ctx context.Context, sh streamShell, samples int) (ClockSample, error) {
	if samples < 1 || samples > MaxClockSamples {
		return ClockSample{}, fmt.Errorf("clock: samples %d outside 1..%d", samples, MaxClockSamples)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	lines := &lineStamper{ch: make(chan stampedLine, samples+4)}
	done := make(chan error, 1)
	go func() {
		err := sh.runStream(ctx, clockScript, pr, lines)
		// Unblock a Write that nobody will read (the session never started).
		_ = pr.CloseWithError(io.ErrClosedPipe)
		done <- err
	}()
	var best ClockSample
	bestRTT := time.Duration(-1)
	var runErr error
	ended := false
sampling:
	for range samples {
		t0 := time.Now()
		if _, err := pw.Write([]byte("\n")); err != nil {
			break // the session ended; done says why
		}
		var l stampedLine
		select {
		case l = <-lines.ch:
		case runErr = <-done:
			ended = true
			break sampling
		case <-time.After(clockSampleTimeout):
			break sampling
		case <-ctx.Done():
			break sampling
		}
		remote, whole, ok := parseEpoch(l.text)
		if !ok {
			continue
		}
		rtt := l.at.Sub(t0)
		best.Samples++
		if bestRTT >= 0 && rtt >= bestRTT {
			continue
		}
		bestRTT = rtt
		mid := t0.Add(rtt / 2)
		best.RTT, best.Offset, best.Uncertainty = rtt, remote.Sub(mid), rtt/2
		if whole {
			// Whole seconds truncate: the true time is in [s, s+1).
			best.Offset += 500 * time.Millisecond
			best.Uncertainty += 500 * time.Millisecond
		}
	}
	_ = pw.Close() // EOF ends the remote loop
	if !ended {
		select {
		case runErr = <-done:
		case <-time.After(2 * time.Second):
			cancel()
			runErr = <-done
		}
	}
	got := best.Samples
	err := runErr
	if got == 0 {
		if err == nil {
			err = errors.New("no clock answer")
		}
		return ClockSample{}, fmt.Errorf("clock: %w", err)
	}
	return best, nil
}

// orNot is v, or def when the probe never got as far as recording v.
func orNot(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// parseEpoch reads `date +%s%N`; a date without %N prints a literal "N"
// (busybox), read as whole seconds (whole true).
func parseEpoch(s string) (t time.Time, whole, ok bool) {
	s = strings.TrimSpace(s)
	if strings.HasSuffix(s, "N") {
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSuffix(s, "N"), "%"), 10, 64)
		return time.Unix(n, 0), true, err == nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1e18 {
		return time.Time{}, false, false
	}
	return time.Unix(0, n), false, true
}

// fillCaps turns the probe's key=value answer into capability rows.
func fillCaps(hc *HostCaps, kv map[string]string) {
	hc.UID, _ = strconv.Atoi(kv["uid"])
	hc.Kernel, hc.Machine, hc.Distro, hc.DiskPath = kv["kernel"], kv["arch"], kv["os"], kv["disk.path"]
	hc.OS, hc.Arch = goOS(kv["sysname"]), goArch(kv["arch"])
	hc.BootID, hc.Container = kv["boot_id"], kv["container"]
	hc.Systemd = kv["systemctl.works"] == "yes"
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
		{"systemd", "systemctl", "systemctl.version", "PID 1 is systemd in this network namespace and systemctl is-system-running answered " + orNot(kv["systemd.state"], "nothing")},
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
	// Binaries the plan names, found by path and asked for their version.
	for k, p := range kv {
		b, ok := strings.CutPrefix(k, "bin.")
		if !ok || !strings.HasSuffix(b, ".path") {
			continue
		}
		b = strings.TrimSuffix(b, ".path")
		c := Cap{Name: BinaryCap(b), Present: p != "" && p != "no", Version: kv["bin."+b+".version"], Source: "command -v " + b}
		if c.Present {
			c.Source += " = " + p + "; " + b + " --version"
		} else {
			c.Message = b + " not found on PATH, /usr/sbin or /sbin"
		}
		add(c)
	}
	slices.SortStableFunc(hc.Caps, func(a, b Cap) int {
		// Keep the fixed rows in order; binary rows after them, by name.
		ab, bb := strings.HasPrefix(a.Name, "binary:"), strings.HasPrefix(b.Name, "binary:")
		switch {
		case ab && bb:
			return strings.Compare(a.Name, b.Name)
		case ab:
			return 1
		case bb:
			return -1
		}
		return 0
	})
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

// goOS turns uname -s into GOOS.
func goOS(sys string) string {
	s := strings.ToLower(strings.TrimSpace(sys))
	switch {
	case s == "":
		return ""
	case s == "sunos":
		return "solaris"
	case strings.HasPrefix(s, "mingw"), strings.HasPrefix(s, "msys"), strings.HasPrefix(s, "cygwin"):
		return "windows"
	}
	return s // linux, darwin, freebsd, netbsd, openbsd, dragonfly, aix
}

// goArch turns uname -m into GOARCH; an unknown machine is passed through.
func goArch(m string) string {
	switch m = strings.TrimSpace(m); m {
	case "x86_64", "amd64":
		return "amd64"
	case "aarch64", "arm64", "aarch64_be":
		return "arm64"
	case "i386", "i486", "i586", "i686", "x86":
		return "386"
	case "riscv64", "ppc64le", "ppc64", "s390x", "mips64", "mips64le", "mips", "mipsle", "loong64", "loongarch64":
		if m == "loongarch64" {
			return "loong64"
		}
		return m
	}
	if strings.HasPrefix(m, "armv") || m == "arm" {
		return "arm"
	}
	return m
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

// BinaryCap is the capability row name of a binary found by path.
func BinaryCap(bin string) string { return "binary:" + bin }

// binaryName is what a requirement may name as a binary: one safe shell
// word, so it can be spliced into the probe script.
var binaryName = regexp.MustCompile(`^[a-z0-9][a-z0-9._+-]{0,63}$`)

// parenName is a parenthesised name in a requirement: "etcd-client (etcdctl)".
var parenName = regexp.MustCompile(`\(\s*([A-Za-z0-9][A-Za-z0-9._+-]*)\s*\)`)

// packageBinaries maps a distro package a §6b row may name to the binary
// it installs, where the two differ.
var packageBinaries = map[string]string{
	"etcd-server": "etcd",
	"etcd-client": "etcdctl",
}

// BinaryFor returns the binary a §6b requirement names, for requirements
// no capability probe covers: the parenthesised name, else the binary of
// the package it names (etcd-server → etcd), else its first word.
// explicit is false for the first-word guess, which a host that lacks the
// binary leaves unknown rather than missing ("MinIO" need not be a binary
// called minio). "" when nothing could be a binary name.
func BinaryFor(requirement string) (bin string, explicit bool) {
	if m := parenName.FindStringSubmatch(requirement); m != nil && binaryName.MatchString(m[1]) {
		return m[1], true
	}
	f := strings.Fields(strings.ToLower(requirement))
	if len(f) == 0 {
		return "", false
	}
	w := strings.Trim(f[0], ",;:/")
	if b, ok := packageBinaries[w]; ok {
		return b, true
	}
	if binaryName.MatchString(w) {
		return w, false
	}
	return "", false
}

// RequirementBinaries lists, once each, the binaries Probe must look for
// so that MapRequirements can decide reqs no capability covers.
func RequirementBinaries(reqs []plan.EnvReq) []string {
	var out []string
	for _, rq := range reqs {
		if rq.BroughtUpBySUT || CapabilityFor(rq.Requirement) != "" {
			continue
		}
		if b, _ := BinaryFor(rq.Requirement); b != "" && !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
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
	Key          string   `json:"key,omitempty"` // dstgen.capabilities.<key> in env.yml
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
	return [][2]string{{"host", r.Host}, {"requirement", r.Requirement}, {"key", r.Key}, {"capability", r.Capability},
		{"present", r.Present}, {"version", r.Version}, {"source", r.Source}, {"floor", r.VersionFloor},
		{"used_by", strings.Join(r.UsedBy, ",")}, {"hint", r.InstallHint},
		{"inconclusive_env", strings.Join(r.InconclusiveEnv, ",")}, {"line", strconv.Itoa(r.Line)}}
}

// MapRequirements checks each §6b requirement against each reachable
// host's matrix. A requirement is present on a host when its capability is
// present and its version meets the floor (when both carry a number). A
// requirement no capability covers is checked as the binary it names (see
// BinaryFor), when Probe was asked to look for it.
func MapRequirements(reqs []plan.EnvReq, hosts []HostCaps) []ReqRow {
	var rows []ReqRow
	keys := plan.CapKeys(reqs)
	for _, h := range hosts {
		for i, rq := range reqs {
			r := ReqRow{Host: h.Host, Requirement: rq.Requirement, Key: keys[i], VersionFloor: rq.VersionFloor,
				InstallHint: rq.InstallHint, UsedBy: rq.UsedBy, Line: rq.Line, Capability: CapabilityFor(rq.Requirement)}
			explicit := true
			if r.Capability == "" && !rq.BroughtUpBySUT {
				if b, ex := BinaryFor(rq.Requirement); b != "" {
					if _, probed := h.Cap(BinaryCap(b)); probed {
						r.Capability, explicit = BinaryCap(b), ex
					}
				}
			}
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
				if r.Present == ReqMissing && !explicit {
					// Only a guess at the binary's name: not finding it
					// proves nothing.
					r.Present, r.Source = ReqUnknown, r.Source+"; confirm by hand"
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

// MissingReq is one requirement missing on at least one host, and whether
// the user's env.yml excuses it.
type MissingReq struct {
	Key         string   `json:"key"`
	Requirement string   `json:"requirement"`
	Hosts       []string `json:"hosts"`
	UsedBy      []string `json:"used_by,omitempty"`
	// Disabled: dstgen.capabilities.<key> is false (the user says the
	// environment lacks it; its scenarios will be INCONCLUSIVE-env).
	Disabled bool `json:"disabled,omitempty"`
	// Unselected: none of UsedBy is in dstgen.scenarios.
	Unselected bool `json:"unselected,omitempty"`
	// Blocking: neither excuse holds; validate fails on it.
	Blocking bool `json:"blocking"`
	// Selected are the selected scenarios that need it (all of UsedBy
	// when every scenario runs).
	Selected []string `json:"selected,omitempty"`
}

// CapSummary is the requirement verdict of a probe: counts over the
// plan's §6b requirements (one requirement counts once, however many
// hosts), the missing ones, and whether any of them blocks.
type CapSummary struct {
	Present  int          `json:"present"`
	Missing  int          `json:"missing"`
	Unknown  int          `json:"unknown"`
	BySUT    int          `json:"by_sut"`
	Details  []MissingReq `json:"missing_requirements,omitempty"`
	Blocking bool         `json:"blocking"`
}

// Summarize folds rows into a CapSummary. A requirement is missing when
// it is missing on any host, unknown when it is unknown on any other, and
// present only when present on every host. capabilities is env.yml's
// dstgen.capabilities (false = disabled); scenarios is dstgen.scenarios
// (empty = every scenario runs).
func Summarize(rows []ReqRow, capabilities map[string]bool, scenarios []string) CapSummary {
	type agg struct {
		row     ReqRow
		state   string
		missing []string
	}
	var order []string
	by := map[string]*agg{}
	for _, r := range rows {
		id := r.Key + "\x00" + r.Requirement + "\x00" + strconv.Itoa(r.Line)
		a := by[id]
		if a == nil {
			a = &agg{row: r, state: r.Present}
			by[id] = a
			order = append(order, id)
		}
		switch r.Present {
		case ReqMissing:
			a.state = ReqMissing
			a.missing = append(a.missing, r.Host)
		case ReqUnknown:
			if a.state != ReqMissing {
				a.state = ReqUnknown
			}
		}
	}
	var s CapSummary
	for _, id := range order {
		a := by[id]
		switch a.state {
		case ReqPresent:
			s.Present++
		case ReqUnknown:
			s.Unknown++
		case ReqBySUT:
			s.BySUT++
		case ReqMissing:
			s.Missing++
			m := MissingReq{Key: a.row.Key, Requirement: a.row.Requirement, Hosts: a.missing, UsedBy: a.row.UsedBy}
			if v, ok := capabilities[m.Key]; ok && !v {
				m.Disabled = true
			}
			if len(scenarios) == 0 {
				m.Selected = m.UsedBy
			} else {
				for _, u := range m.UsedBy {
					if slices.ContainsFunc(scenarios, func(sel string) bool { return sameScenario(sel, u) }) {
						m.Selected = append(m.Selected, u)
					}
				}
				m.Unselected = len(m.UsedBy) > 0 && len(m.Selected) == 0
			}
			m.Blocking = !m.Disabled && !m.Unselected
			s.Blocking = s.Blocking || m.Blocking
			s.Details = append(s.Details, m)
		}
	}
	return s
}

// sameScenario: a and b name the same scenario, or one is an arm of the
// other ("S3" and "S3a" or "S3.a"; never "S1" and "S10").
func sameScenario(a, b string) bool {
	if a == b {
		return true
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	if !strings.HasPrefix(b, a) {
		return false
	}
	c := b[len(a)]
	return c < '0' || c > '9'
}

// Line is the summary line probe ends with, e.g.
// "capabilities: 3 present, 1 missing, 1 unknown: systemd (h1) → S2, S3 INCONCLUSIVE-env, disabled in env.yml".
func (s CapSummary) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "capabilities: %d present, %d missing", s.Present, s.Missing)
	if s.Unknown > 0 {
		fmt.Fprintf(&b, ", %d unknown", s.Unknown)
	}
	if s.BySUT > 0 {
		fmt.Fprintf(&b, ", %d by-sut", s.BySUT)
	}
	for i, m := range s.Details {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		name := m.Key
		if name == "" {
			name = m.Requirement
		}
		fmt.Fprintf(&b, "%s (%s)", name, strings.Join(m.Hosts, ","))
		if len(m.UsedBy) > 0 {
			fmt.Fprintf(&b, " → %s INCONCLUSIVE-env", strings.Join(m.UsedBy, ", "))
		}
		switch {
		case m.Disabled:
			b.WriteString(", disabled in env.yml")
		case m.Unselected:
			b.WriteString(", its scenarios not selected")
		default:
			b.WriteString(", BLOCKING")
		}
	}
	return b.String()
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
