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
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dstgen/dstgen/env"
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
	// One rule for root, the pre-flight's and the nemeses': uid 0. The
	// faults run their commands as the SSH user, so passwordless sudo
	// counts for deploy's package installs (row sudo), never as root.
	if kv["root"] == "yes" {
		add(Cap{Name: "root", Present: true, Source: "id -u = 0"})
	} else {
		add(Cap{Name: "root", Present: false, Source: "id -u = " + kv["uid"], Message: "not root: the faults run as the SSH user and need uid 0 (log in as root or a uid-0 user)"})
	}
	switch kv["sudo"] {
	case "yes":
		add(Cap{Name: "sudo", Present: true, Source: "sudo -n true"})
	case "no":
		add(Cap{Name: "sudo", Present: false, Source: "sudo -n true failed", Message: "no passwordless sudo (deploy installs packages only as root or with it)"})
	}
	// Probed by doing: present means it really worked.
	for _, t := range []struct{ name, key, ver, how string }{
		{"iptables", "iptables", "iptables.version", "added and deleted a RETURN rule in a private chain"},
		{"netns", "netns", "ip.version", "created and deleted a throwaway network namespace"},
		{"netem", "netem", "tc.version", "added a netem qdisc on " + orNot(kv["netem.where"], "a throwaway netns or dummy link")},
		{"htb", "htb", "tc.version", "added an htb qdisc on " + orNot(kv["netem.where"], "a throwaway netns or dummy link")},
		{"faketime", "faketime", "faketime.version", "faketime -f +1d date shifted the clock (libc programs only; not Go)"},
		{"systemd", "systemctl", "systemctl.version", "checked: is PID 1 systemd in this network namespace, then systemctl is-system-running (it answered " + orNot(kv["systemd.state"], "nothing") + ")"},
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

// BinaryCap is the capability row name of a binary found by path.
func BinaryCap(bin string) string { return "binary:" + bin }
