package orchestrator

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/internal/wait"
	"github.com/dstgen/dstgen/nemesis"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
)

// slug is the unit id usable in a file or job name ("S4/api" → "S4.api").
func slug(u scenarios.Unit) string { return strings.ReplaceAll(u.ID(), "/", ".") }

// placement is where the workload of one attempt runs and writes: the
// driver host (whose clock the history is on), every client host, and the
// attempt's paths there.
type placement struct {
	// driver is the first client host: the final-state dump runs there,
	// and the leader query and quiesce get its share's environment.
	driver  nemesis.Host
	clients []nemesis.Host
	// shares are the workload's parts, one per client host, each with
	// its own job (of one id), process ids and history (docs/dst-run.md
	// §7, workload); shares[0] is the driver's.
	shares  []share
	dir     string // <workdir>/runs/<session>/<unit>[-seed-n][-rerun-k] on the driver
	history string
	final   string
	jobID   string
}

// share is one client host's part of the workload.
type share struct {
	host         nemesis.Host
	dir, history string
}

// place finds the client hosts — workload.host, else role client, else
// parameters.bench_host; each runs a share of the workload, and the first
// is the driver host — and the attempt's remote paths and job id.
func (r *unitRun) place(cl cluster) (placement, error) {
	e := r.o.env
	var names []string
	switch {
	case r.u.Scenario.Workload.Host != "":
		hs, err := e.Select(r.u.Scenario.Workload.Host)
		if err != nil {
			return placement{}, fmt.Errorf("scenarios.yml:%d: workload.host: %w", r.u.Scenario.Line, err)
		}
		for _, h := range hs {
			names = append(names, h.Name)
		}
	case len(e.HostsWithRole("client")) > 0:
		for _, h := range e.HostsWithRole("client") {
			names = append(names, h.Name)
		}
	default:
		if bh, ok := e.Parameters["bench_host"].(string); ok && bh != "" {
			names = []string{bh}
		}
	}
	p := placement{clients: byName(cl.all, names)}
	if len(p.clients) == 0 {
		return p, fmt.Errorf("%s: no client host for %s: set workload.host in scenarios.yml, a host with role client, or parameters.bench_host", e.Path, r.u.ID())
	}
	p.driver = p.clients[0]
	seedPart := ""
	if r.a.RunFile != "run.json" {
		seedPart = "-seed-" + strconv.FormatInt(r.a.Seed, 10)
	}
	if strings.HasPrefix(filepath.Base(r.a.Dir), "rerun-") {
		seedPart += "-" + filepath.Base(r.a.Dir)
	}
	for _, h := range p.clients {
		dir := path.Join(h.Workdir, "runs", r.o.id, slug(r.u)+seedPart)
		p.shares = append(p.shares, share{host: h, dir: dir, history: path.Join(dir, "history.jsonl")})
	}
	p.dir, p.history = p.shares[0].dir, p.shares[0].history
	p.final = path.Join(p.dir, "final.json")
	p.jobID = jobID("wl", slug(r.u)+seedPart, r.o.id)
	return p, nil
}

// byName picks the hosts of hs named in names, in hs's order.
func byName(hs []nemesis.Host, names []string) []nemesis.Host {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []nemesis.Host
	for _, h := range hs {
		if want[h.Name] {
			out = append(out, h)
		}
	}
	return out
}

// toEnv is the env.Host of each host.
func toEnv(hs []nemesis.Host) []env.Host {
	out := make([]env.Host, 0, len(hs))
	for _, h := range hs {
		out = append(out, h.Host)
	}
	return out
}

// jobID is "<kind>-<unit>-<session>" cut to the 64 characters a job id
// may have (the session stamp is kept whole: it makes the id unique).
func jobID(kind, unit, sess string) string {
	id := kind + "-" + unit + "-" + sess
	if len(id) > 64 {
		keep := 64 - len(kind) - len(sess) - 2
		id = kind + "-" + unit[:max(keep, 1)] + "-" + sess
	}
	return id
}

// metricsDir is where a host's samplers write for this attempt.
func (r *unitRun) metricsDir(h nemesis.Host, p placement) string {
	return path.Join(h.Workdir, "runs", r.o.id, "metrics-"+path.Base(p.dir))
}

// startMetrics starts testing/scripts/collect-metrics.sh on every host
// that has it and returns those hosts; a host without it is logged and
// the run goes on.
func (r *unitRun) startMetrics(ctx context.Context, all []nemesis.Host, p placement) []nemesis.Host {
	var started []nemesis.Host
	for _, h := range all {
		script := path.Join(h.Workdir, "scripts", "collect-metrics.sh")
		dir := r.metricsDir(h, p)
		cmd := fmt.Sprintf("[ -f %s ] || { echo missing; exit 0; }; mkdir -p %s && bash %s start %s 1 >/dev/null 2>&1 && echo started",
			shell.Quote(script), shell.Quote(dir), shell.Quote(script), shell.Quote(dir))
		out, err := r.o.hosts.Run(ctx, h.Host, cmd)
		switch {
		case err != nil:
			r.logf("metrics host=%s error=%q", h.Name, err.Error())
		case strings.TrimSpace(out) == "missing":
			r.logf("metrics host=%s status=missing script=%s (run `task deploy` to push testing/scripts)", h.Name, script)
		default:
			started = append(started, h)
		}
	}
	return started
}

// runID is the attempt's DSTGEN_RUN_ID, the driver's key namespace: one
// per session, unit, seed and re-run, so that no attempt reads what an
// earlier one of the same session wrote (docs/driver-contract.md §4) — a
// re-run repeats the seed and schedule, not the keys.
func runID(sessionID string, u scenarios.Unit, a attempt) string {
	id := sessionID + "-" + slug(u)
	if base := strings.TrimSuffix(a.RunFile, ".json"); base != "run" && base != "" {
		id += "-" + strings.TrimPrefix(base, "run-")
	}
	if a.ReRunOf != nil {
		id += "-" + filepath.Base(a.Dir)
	}
	return id
}

// workloadEnv is the driver contract's environment for this attempt, as
// the first share sees it (the final-state dump, the leader query).
func (r *unitRun) workloadEnv(p placement) []string { return r.shareEnv(p, 0) }

// shareEnv is share i's environment: its history, its part of the rate
// and, with several shares, DSTGEN_SHARE=<i>/<n> (docs/driver-contract.md
// §2).
func (r *unitRun) shareEnv(p placement, i int) []string {
	n := max(len(p.shares), 1)
	b := r.o.env.Benchmark
	b.Rate = r.a.Rate / float64(n)
	b.Duration = int(r.a.Duration / time.Second)
	hist := p.history
	if i < len(p.shares) {
		hist = p.shares[i].history
	}
	vars := r.o.env.WorkloadEnv(env.WorkloadInput{RunID: runID(r.o.id, r.u, r.a), Seed: r.a.Seed,
		HistoryPath: hist, Scenario: r.u.Scenario.ID, Tier: r.rec.run.Tier, Benchmark: b})
	if n > 1 {
		vars = append(vars, fmt.Sprintf("DSTGEN_SHARE=%d/%d", i, n))
	}
	if r.a.Seed == 0 {
		vars = append(vars, "DSTGEN_SEED=0")
	}
	vars = append(vars, "DSTGEN_FINAL="+p.final)
	if r.u.Arm != nil {
		vars = append(vars, "DSTGEN_ARM="+r.u.ID())
	}
	return vars
}

// startWorkload renders the workload command for each client host and
// starts it there as job wl-<unit>-<session>, share by share; the time it
// returns is the schedule's zero.
func (r *unitRun) startWorkload(ctx context.Context, p placement) (time.Time, error) {
	for i, sh := range p.shares {
		command, err := r.o.sut.Render("workload.command", r.u.Command(), sh.host.Name)
		if err != nil {
			return time.Time{}, fmt.Errorf("scenarios.yml:%d: %s workload.command: %w", r.u.Scenario.Line, r.u.ID(), err)
		}
		if i == 0 {
			r.rec.run.Workload.Command = command
		}
		if _, err := r.o.hosts.Run(ctx, sh.host.Host, "mkdir -p "+shell.Quote(sh.dir)); err != nil {
			return time.Time{}, fmt.Errorf("workload of %s: create %s on %s: %w", r.u.ID(), sh.dir, sh.host.Name, err)
		}
		argv := append([]string{"env"}, r.shareEnv(p, i)...)
		argv = append(argv, "sh", "-c", "cd "+shell.Quote(sh.dir)+" && "+command)
		// The way to stop it is on the host before it runs: a run that
		// dies (SIGKILL) leaves its workload to `dstgen heal --all`, not
		// running on.
		if err := nemesis.Guard(ctx, r.o.hosts, sh.host, r.workloadTag(p), workloadGuard, runner.JobStopScript(sh.host.Workdir, p.jobID, r.o.b.stopGrace)); err != nil {
			return time.Time{}, fmt.Errorf("workload of %s on %s: %w", r.u.ID(), sh.host.Name, err)
		}
		st, err := r.o.hosts.StartJob(ctx, sh.host.Host, sh.host.Workdir, p.jobID, argv)
		if err != nil {
			return time.Time{}, fmt.Errorf("workload of %s on %s: %w", r.u.ID(), sh.host.Name, err)
		}
		r.logf("workload host=%s job=%s pid=%d history=%s share=%d/%d", sh.host.Name, p.jobID, st.PID, sh.history, i, len(p.shares))
	}
	return time.Now(), nil
}

// workloadGuard is the undo kind of a run's workload job.
const workloadGuard = "workload"

// workloadTag names the workload's guard: <session>.<job id>.
func (r *unitRun) workloadTag(p placement) string { return p.jobID }

// exitedAtOnce looks at the workload jobs a moment after their start,
// before the first window: a driver that failed on its flags or its
// endpoints is done by then. It names the first share that exited non-zero.
func (r *unitRun) exitedAtOnce(ctx context.Context, p placement) (string, int, bool) {
	if err := wait.Sleep(ctx, min(r.o.b.poll, time.Second)); err != nil {
		return "", 0, false
	}
	for _, sh := range p.shares {
		st, err := r.o.hosts.JobStatus(ctx, sh.host.Host, sh.host.Workdir, p.jobID)
		if err == nil && st.Status == runner.StatusFinished && st.RC != nil && *st.RC != 0 {
			return sh.host.Name, *st.RC, true
		}
	}
	return "", 0, false
}

// quiesce waits for scenario.quiesce.command to exit 0, bounded by its
// timeout, and returns when it held (control wall ns; 0 = not seen).
// Without one, a run with faults on a SUT dstgen deployed waits for what
// deploy calls up (every member running, env.yml's sut.health passing),
// so that "back to nominal" is observed rather than assumed
// (docs/dst-run.md §7 step 9); with neither, the workload's end is the
// gate and no recovery is recorded.
func (r *unitRun) quiesce(ctx context.Context, cl cluster, p placement, started time.Time, wins []windowRec) int64 {
	q := r.u.Scenario.Quiesce
	timeout := r.o.b.quiesce
	if q != nil && q.Timeout != "" {
		if d, err := time.ParseDuration(q.Timeout); err == nil && d > 0 {
			timeout = d
		}
	}
	var check func(ctx context.Context) error
	what := "quiesce command"
	switch {
	case q != nil && q.Command != "":
		hosts := cl.sut[:min(1, len(cl.sut))]
		if q.All {
			hosts = cl.sut
		}
		if len(hosts) == 0 {
			hosts = p.clients[:1]
		}
		check = func(ctx context.Context) error {
			for _, h := range hosts {
				if _, err := r.o.hosts.Run(ctx, h.Host, r.withWorkloadEnv(q.Command)); err != nil {
					return err
				}
			}
			return nil
		}
	case len(wins) > 0 && r.o.sut.Deployed():
		what = "the SUT's deploy check (every member running, sut.health)"
		check = r.o.sut.Check
	default:
		return 0
	}
	deadline := time.Now().Add(timeout)
	var last string
	for i := 0; i < 10000 && ctx.Err() == nil; i++ {
		qctx, cancel := r.bounded(ctx, time.Until(deadline)+time.Second)
		err := check(qctx)
		cancel()
		if err == nil {
			r.rec.run.Recovery = &session.Recovery{Nominal: true, Evidence: fmt.Sprintf("%s passed %s after the last heal", what, time.Since(time.Unix(0, lastRevert(started, wins))).Round(time.Millisecond))}
			r.logf("quiesce nominal=true")
			return time.Now().UnixNano()
		}
		last = err.Error()
		if time.Now().After(deadline) || wait.Sleep(ctx, r.o.b.poll) != nil {
			break
		}
	}
	r.rec.run.Recovery = &session.Recovery{Nominal: false, Evidence: fmt.Sprintf("%s did not pass within %s: %s", what, timeout, last)}
	r.logf("quiesce nominal=false")
	return 0
}

func lastRevert(started time.Time, wins []windowRec) int64 {
	last := started.UnixNano()
	for _, w := range wins {
		last = max(last, w.reverted)
	}
	return last
}

// stop waits for the workload to end by itself (duration + 30 s at most),
// then stops it; its rc is the workload's exit status (the first share's
// that is not 0). An interrupted run (SIGINT, SIGTERM, `dstgen run stop`)
// stops it at once: the job never outlives its run, and collect never
// copies a history still being written.
func (r *unitRun) stop(ctx context.Context, p placement, started time.Time) {
	if started.IsZero() {
		return
	}
	deadline := started.Add(r.a.Duration + r.o.b.stopSlack)
	for _, sh := range p.shares {
		rc, ok := r.stopShare(ctx, p, sh, deadline)
		if ok && (r.rec.run.Workload.ExitStatus == nil || *r.rec.run.Workload.ExitStatus == 0 && rc != 0) {
			r.rec.run.Workload.ExitStatus = &rc
		}
	}
}

// stopShare waits for one share's job until deadline, then stops it, and
// removes its guard once it is not running; ok says its rc is known.
func (r *unitRun) stopShare(ctx context.Context, p placement, sh share, deadline time.Time) (int, bool) {
	x := r.o.hosts
	var st runner.JobStatus
	var err error
	polled := false
	for i := 0; i < 100000 && ctx.Err() == nil; i++ {
		st, err = x.JobStatus(ctx, sh.host.Host, sh.host.Workdir, p.jobID)
		polled = true
		if err == nil && st.Status != runner.StatusRunning {
			break
		}
		if time.Now().After(deadline) || wait.Sleep(ctx, r.o.b.poll) != nil {
			break
		}
	}
	if !polled || err != nil || st.Status == runner.StatusRunning {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.o.b.stopGrace+r.o.b.call)
		st, err = x.StopJob(sctx, sh.host.Host, sh.host.Workdir, p.jobID, r.o.b.stopGrace)
		cancel()
		r.logf("workload host=%s stopped signal=%s", sh.host.Name, st.Stopped)
	}
	if err != nil {
		r.logf("workload host=%s status_error=%q", sh.host.Name, err.Error())
	}
	if err == nil && st.Status != runner.StatusRunning {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.o.b.call)
		if err := nemesis.Unguard(uctx, x, sh.host, r.workloadTag(p), workloadGuard); err != nil {
			r.logf("workload host=%s guard error=%q", sh.host.Name, err.Error())
		}
		cancel()
	}
	if st.RC == nil {
		return 0, false
	}
	return *st.RC, true
}

// finalState runs scenario.final_state on the driver host with the
// workload's environment (run id, endpoints, DSTGEN_FINAL): the dump reads
// the keys that run wrote (docs/driver-contract.md §7). Why it is missing
// goes to run.json final_state_error: a checker that needs it cannot run,
// and the analyzer must say why.
func (r *unitRun) finalState(ctx context.Context, p placement) {
	fs := r.u.Scenario.FinalState
	if fs == "" {
		return
	}
	fail := func(why string) {
		r.rec.run.FinalStateError = why
		r.logf("final_state error=%q", why)
	}
	if ctx.Err() != nil {
		fail("not taken: the run was interrupted before the final-state dump")
		return
	}
	fctx, cancel := r.bounded(ctx, r.o.b.call)
	defer cancel()
	cmd, err := r.o.sut.Render("final_state", fs, p.driver.Name)
	if err != nil {
		fail(fmt.Sprintf("scenarios.yml:%d: %s final_state: %v", r.u.Scenario.Line, r.u.ID(), err))
		return
	}
	script := "cd " + shell.Quote(p.dir) + " && " + shell.QuoteArgs(append(append([]string{"env"}, r.workloadEnv(p)...), "sh", "-c", cmd))
	if _, err := r.o.hosts.Run(fctx, p.driver.Host, script); err != nil {
		fail("the final_state command failed on " + p.driver.Name + ": " + err.Error())
	}
}
