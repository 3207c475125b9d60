package orchestrator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/nemesis"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
)

// fakeWorld is Hosts and SUT without SSH: each host is a directory of this
// machine, and a script runs there with the real /bin/sh — so undo
// scripts, HealAll and custom nemesis commands behave as on a host — but
// on a PATH without iptables, tc or ip, so nothing of this machine's
// network is ever touched. Jobs run a Go workload in a goroutine that
// writes a real dst-history/1 file, failing its ops while a host is
// faulted (its workdir holds "faulted"), so the history victim sees the
// fault.
type fakeWorld struct {
	t     *testing.T
	dir   string
	bin   string
	hosts []env.Host

	mu          sync.Mutex
	calls       []fakeCall
	unreachable map[string]bool              // Reach says no
	hang        map[string]bool              // Run blocks until its context ends
	panicOn     string                       // Run panics on a script holding it
	failOn      map[string]string            // a script holding the key fails with the value
	failOnHost  map[string]string            // host → a script holding the value fails there
	logs        bool                         // SUT hosts log to <workdir>/sut.log
	jobs        map[string]*fakeJob          // by <host>/<job id>
	jobVars     map[string]map[string]string // the DSTGEN_* each job started with
	exitAtOnce  int                          // a started job exits with this rc at once (0 = runs)
	noClock     map[string]bool              // Probe measured no clock for these hosts
	clockEnd    time.Duration                // the offset Clock measures after the run
	lostOps     int                          // the driver counts this many ops its history lacks
	noBinary    map[string]bool              // Probe finds these binaries on no host
	deployed    bool                         // Deployed says yes
	checkErr    func(call int) error         // Check's answer on its call-th call (nil func: up)
	checks      int                          // Check calls so far
}

type fakeCall struct {
	host, script string
	at           time.Time
}

type fakeJob struct {
	cancel  context.CancelFunc
	done    chan struct{}
	rc      int
	stopped string
	started time.Time
}

// newFakeWorld makes n SUT hosts h1..hn and one client host c1.
func newFakeWorld(t *testing.T, n int) *fakeWorld { return newFakeWorldClients(t, n, 1) }

// newFakeWorldClients makes n SUT hosts h1..hn and client hosts c1..cm.
func newFakeWorldClients(t *testing.T, n, m int) *fakeWorld {
	t.Helper()
	w := &fakeWorld{t: t, dir: t.TempDir(), unreachable: map[string]bool{}, hang: map[string]bool{}, failOn: map[string]string{}, failOnHost: map[string]string{}, noClock: map[string]bool{}, noBinary: map[string]bool{}, jobs: map[string]*fakeJob{}, jobVars: map[string]map[string]string{}}
	w.bin = filepath.Join(w.dir, "bin")
	if err := os.MkdirAll(w.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"sh", "mkdir", "printf", "mv", "rm", "cat", "basename", "wc", "touch", "echo", "sleep", "head", "tr", "grep", "tail", "awk", "expr", "true", "false", "test", "[", "date", "ls", "cp", "env", "cut", "sed"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			continue
		}
		_ = os.Symlink(p, filepath.Join(w.bin, tool))
	}
	for i := 1; i <= n+m; i++ {
		name, roles := "h"+strconv.Itoa(i), []string{"sut"}
		if i > n {
			name, roles = "c"+strconv.Itoa(i-n), []string{"client"}
		}
		w.hosts = append(w.hosts, env.Host{Name: name, Address: "10.99.0." + strconv.Itoa(i), Roles: roles})
		if err := os.MkdirAll(w.workdir(name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(w.stopAll)
	return w
}

func (w *fakeWorld) workdir(host string) string { return filepath.Join(w.dir, "hosts", host) }

func (w *fakeWorld) env() *env.Env {
	return &env.Env{Path: filepath.Join(w.dir, "env.yml"), Hosts: w.hosts, SUT: env.SUT{Roles: []string{"sut"}}}
}

func (w *fakeWorld) record(host, script string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, fakeCall{host: host, script: script, at: time.Now()})
}

// ran is every script run on host that holds sub.
func (w *fakeWorld) ran(host, sub string) []fakeCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []fakeCall
	for _, c := range w.calls {
		if (host == "" || c.host == host) && strings.Contains(c.script, sub) {
			out = append(out, c)
		}
	}
	return out
}

// noNetwork shadows the network tools in every fake host's shell: the
// scripts put /usr/sbin on their PATH themselves (a host's sweep must find
// iptables there), and this machine's firewall and links are not a fake
// host's — a sweep listing them raced other packages' namespaces (suite
// b58d97c: "Peer netns reference is invalid", past the 2 s bound), and a
// heal would have removed their DSTGEN chains.
const noNetwork = `for t in iptables ip6tables tc ip nft; do eval "$t() { echo \"fake host: no $t\" >&2; return 127; }"; done
`

// callBound is the fake transport's ceiling of one round trip (the real
// one's is 30 s).
const callBound = 2 * time.Second

func (w *fakeWorld) Run(ctx context.Context, h env.Host, script string) (string, error) {
	w.record(h.Name, script)
	ctx, cancel := context.WithTimeout(ctx, callBound)
	defer cancel()
	w.mu.Lock()
	hang, panicOn := w.hang[h.Name], w.panicOn
	var fail string
	for sub, msg := range w.failOn {
		if strings.Contains(script, sub) {
			fail = msg
		}
	}
	if sub, ok := w.failOnHost[h.Name]; ok && strings.Contains(script, sub) {
		fail = "refused on " + h.Name
	}
	w.mu.Unlock()
	if panicOn != "" && strings.Contains(script, panicOn) {
		panic("fake host: " + panicOn)
	}
	if hang {
		<-ctx.Done()
		return "", fmt.Errorf("%s: timeout: %w", h.Name, ctx.Err())
	}
	if fail != "" {
		return "", fmt.Errorf("%s: exit 1: %s", h.Name, fail)
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", noNetwork+script)
	cmd.Dir = w.workdir(h.Name)
	cmd.Env = []string{"PATH=" + w.bin, "HOME=" + w.workdir(h.Name)}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out.String(), fmt.Errorf("%s: exit %d: %s", h.Name, ee.ExitCode(), strings.TrimSpace(errb.String()))
		}
		return out.String(), fmt.Errorf("%s: %w", h.Name, err)
	}
	return out.String(), nil
}

// Probe: every host reachable unless told otherwise, uid 0, iptables.
func (w *fakeWorld) Probe(_ context.Context, hs []env.Host, bins ...string) []runner.HostCaps {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []runner.HostCaps
	for _, h := range hs {
		samples := 1
		if w.noClock[h.Name] {
			samples = 0
		}
		hc := runner.HostCaps{Host: h.Name, Reachable: !w.unreachable[h.Name], ClockUncertainty: time.Millisecond, ClockSamples: samples,
			Caps: []runner.Cap{{Name: "root", Present: true, Source: "id -u = 0"}, {Name: "iptables", Present: true, Source: "fake"}}}
		for _, b := range bins {
			c := runner.Cap{Name: runner.BinaryCap(b), Present: !w.noBinary[b], Version: b + " 3.5.0", Source: "command -v " + b}
			if !c.Present {
				c.Version, c.Message = "", "not on PATH"
			}
			hc.Caps = append(hc.Caps, c)
		}
		if !hc.Reachable {
			hc.Err = "dial tcp " + h.Address + ":22: i/o timeout"
		}
		out = append(out, hc)
	}
	return out
}

// Clock: the same machine, unless clockEnd says otherwise.
func (w *fakeWorld) Clock(context.Context, env.Host) (runner.ClockSample, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return runner.ClockSample{Offset: w.clockEnd, Uncertainty: time.Millisecond, Samples: 1}, nil
}

// StartJob runs the fake workload with the job's DSTGEN_* environment.
func (w *fakeWorld) StartJob(ctx context.Context, h env.Host, workdir, id string, argv []string) (runner.JobStatus, error) {
	w.record(h.Name, "job start "+id+" "+strings.Join(argv, " "))
	vars := map[string]string{}
	for _, a := range argv[1:] {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			break
		}
		vars[k] = v
	}
	jctx, cancel := context.WithCancel(context.Background())
	j := &fakeJob{cancel: cancel, done: make(chan struct{}), started: time.Now()}
	w.mu.Lock()
	w.jobs[h.Name+"/"+id] = j
	w.jobVars[h.Name+"/"+id] = vars
	rc := w.exitAtOnce
	w.mu.Unlock()
	go func() {
		defer close(j.done)
		if rc != 0 {
			j.rc = rc
			return
		}
		j.rc = w.workload(jctx, vars, filepath.Join(workdir, "jobs", id))
	}()
	return runner.JobStatus{Host: h.Name, ID: id, Status: runner.StatusStarted, PID: 4242}, nil
}

func (w *fakeWorld) JobStatus(_ context.Context, h env.Host, _, id string) (runner.JobStatus, error) {
	w.mu.Lock()
	j := w.jobs[h.Name+"/"+id]
	w.mu.Unlock()
	if j == nil {
		return runner.JobStatus{Host: h.Name, ID: id, Status: runner.StatusAbsent}, nil
	}
	select {
	case <-j.done:
		rc := j.rc
		return runner.JobStatus{Host: h.Name, ID: id, Status: runner.StatusFinished, RC: &rc, Stopped: j.stopped}, nil
	default:
		return runner.JobStatus{Host: h.Name, ID: id, Status: runner.StatusRunning, PID: 4242}, nil
	}
}

func (w *fakeWorld) StopJob(ctx context.Context, h env.Host, workdir, id string, _ time.Duration) (runner.JobStatus, error) {
	w.record(h.Name, "job stop "+id)
	w.mu.Lock()
	j := w.jobs[h.Name+"/"+id]
	w.mu.Unlock()
	if j != nil {
		j.stopped = "TERM"
		j.cancel()
		<-j.done
	}
	return w.JobStatus(ctx, h, workdir, id)
}

// running is the ids of the jobs still running.
func (w *fakeWorld) running() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for id, j := range w.jobs {
		select {
		case <-j.done:
		default:
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func (w *fakeWorld) stopAll() {
	w.mu.Lock()
	jobs := w.jobs
	w.mu.Unlock()
	for _, j := range jobs {
		j.cancel()
		<-j.done
	}
}

// Fetch copies each remote path's file (or dir) into into, as runner.Collect does.
func (w *fakeWorld) Fetch(_ context.Context, h env.Host, remotes []string, into string) ([]runner.FileResult, error) {
	if err := os.MkdirAll(into, 0o755); err != nil {
		return nil, err
	}
	var res []runner.FileResult
	for _, r := range remotes {
		fr := runner.FileResult{Host: h.Name, Source: r, File: filepath.Join(into, filepath.Base(r)), Status: runner.FileOK}
		if err := os.CopyFS(filepath.Join(into, filepath.Base(r)), os.DirFS(r)); err != nil {
			data, rerr := os.ReadFile(r)
			if rerr != nil {
				fr.Status, fr.Reason = runner.FileError, rerr.Error()
			} else if werr := os.WriteFile(fr.File, data, 0o644); werr != nil {
				fr.Status, fr.Reason = runner.FileError, werr.Error()
			}
		}
		res = append(res, fr)
	}
	return res, nil
}

// faulted reports whether any host's workdir holds the fault marker.
func (w *fakeWorld) faulted() bool {
	for _, h := range w.hosts {
		if _, err := os.Stat(filepath.Join(w.workdir(h.Name), "faulted")); err == nil {
			return true
		}
	}
	return false
}

// workload is the fake driver: writes on 2 processes every 5 ms for
// DSTGEN_DURATION_S, each failing while a host is faulted; at its end it
// prints the driver contract's summary line to its job's stdout — lostOps
// more ops than its history holds, when a test asks it to lose some.
func (w *fakeWorld) workload(ctx context.Context, vars map[string]string, jobDir string) int {
	f, err := os.Create(vars["DSTGEN_HISTORY"])
	if err != nil {
		return 2
	}
	defer f.Close()
	rec := history.NewRecorder(f, history.Meta{})
	dur, _ := strconv.Atoi(vars["DSTGEN_DURATION_S"])
	deadline := time.Now().Add(time.Duration(dur) * time.Second)
	n := 0
	defer func() {
		w.mu.Lock()
		lost := w.lostOps
		w.mu.Unlock()
		if err := os.MkdirAll(jobDir, 0o755); err == nil {
			_ = os.WriteFile(filepath.Join(jobDir, "stdout"), fmt.Appendf(nil, "driving\ndstgen-driver: ops_produced=%d ok=%d\n", n+lost, n), 0o644)
		}
	}()
	for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		n++
		p := rec.Invoke(strconv.Itoa(i%2), "write", vars["DSTGEN_RUN_ID"]+"/k", vars["DSTGEN_SHARE"]+"/"+strconv.Itoa(i))
		if w.faulted() {
			_ = p.Fail("unavailable")
		} else {
			_ = p.Ok(nil)
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
	}
	return 0
}

// SUT: the hosts with role sut, run as dstgen jobs.
func (w *fakeWorld) Hosts(map[string]string) []nemesis.Host {
	var out []nemesis.Host
	for _, h := range w.hosts {
		nh := nemesis.Host{Host: h, Workdir: w.workdir(h.Name)}
		if slices.Contains(h.Roles, "sut") {
			nh.SUT = &nemesis.SUT{DataDir: filepath.Join(w.workdir(h.Name), "data")}
			if w.logs {
				nh.SUT.Logs = []string{filepath.Join(w.workdir(h.Name), "sut.log")}
			}
		}
		out = append(out, nh)
	}
	return out
}

func (w *fakeWorld) Modes(context.Context) map[string]string { return nil }
func (w *fakeWorld) Deployed() bool                          { return w.deployed }
func (w *fakeWorld) Check(context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checks++
	if w.checkErr == nil {
		return nil
	}
	return w.checkErr(w.checks)
}
func (w *fakeWorld) Render(_, text, _ string) (string, error) {
	return text, nil
}

// markerFault is a custom fault whose inject marks its targets faulted
// and counts injections, whose heal removes the mark, and whose evidence
// is the count.
func markerFault(at, dur string) scenarios.Fault {
	return scenarios.Fault{Nemesis: "custom", Targets: "random", At: at, For: dur, Line: 7, Custom: &scenarios.Custom{
		Inject:   `n=$(cat "$DSTGEN_WORKDIR/injections" 2>/dev/null || echo 0); echo $((n+1)) > "$DSTGEN_WORKDIR/injections"; touch "$DSTGEN_WORKDIR/faulted"`,
		Heal:     `rm -f "$DSTGEN_WORKDIR/faulted"`,
		Evidence: `cat "$DSTGEN_WORKDIR/injections" 2>/dev/null || echo 0`,
	}}
}

// testOrchestrator is an orchestrator over w with bounds short enough
// for a unit test, writing into a fresh session dir.
func testOrchestrator(t *testing.T, w *fakeWorld) *orchestrator {
	t.Helper()
	dir := filepath.Join(w.dir, "session", "20261202T000000Z")
	sess, err := openSession(dir, "fake", "", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return &orchestrator{env: w.env(), hosts: w, sut: w, session: sess, tier: "smoke", id: filepath.Base(dir), b: bounds{
		checkpoint: 200 * time.Millisecond, poll: 50 * time.Millisecond, call: 2 * time.Second, heal: 2 * time.Second,
		stopGrace: 100 * time.Millisecond, quiesce: time.Second, within: time.Second, stopSlack: 2 * time.Second,
		readOverrun: 200 * time.Millisecond, collect: 5 * time.Second, lead: 300 * time.Millisecond,
	}}
}

// unitOf is a scenario S1 with faults, as a unit.
func unitOf(faults ...scenarios.Fault) scenarios.Unit {
	return scenarios.Unit{Scenario: &scenarios.Scenario{ID: "S1", Line: 3, Faults: faults, Workload: scenarios.Workload{Command: "drive"}}}
}

func attemptIn(o *orchestrator, seed int64, d time.Duration) attempt {
	return attempt{Seed: seed, Duration: d, Rate: 100, Dir: filepath.Join(o.session.Dir, session.ArtifactsDir, "S1"), RunFile: "run.json"}
}

// leftFaulted names the hosts still marked faulted or holding an undo script.
func (w *fakeWorld) leftFaulted() []string {
	var out []string
	for _, h := range w.hosts {
		if _, err := os.Stat(filepath.Join(w.workdir(h.Name), "faulted")); err == nil {
			out = append(out, h.Name+" faulted")
		}
		if ents, _ := os.ReadDir(filepath.Join(w.workdir(h.Name), "nemesis", "active")); len(ents) > 0 {
			out = append(out, fmt.Sprintf("%s %d undo script(s)", h.Name, len(ents)))
		}
	}
	return out
}

// A fake host's shell reaches none of this machine's network tools, even
// with /usr/sbin on its PATH as the sweep puts it.
func TestFakeWorldTouchesNoNetwork(t *testing.T) {
	w := newFakeWorld(t, 1)
	out, _ := w.Run(context.Background(), w.hosts[0], "PATH=$PATH:/usr/sbin:/sbin\nip -o link show; tc qdisc show; iptables -w -S; echo done")
	if strings.Contains(out, "lo:") || strings.Contains(out, "qdisc") || strings.Contains(out, "-P INPUT") || !strings.Contains(out, "done") {
		t.Fatalf("a fake host read this machine's network:\n%s", out)
	}
}
