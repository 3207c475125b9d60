package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dstgen/dstgen/deploy"
	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/oneline"
	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/internal/wait"
	"github.com/dstgen/dstgen/nemesis"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
)

// Unit outcomes, as exit codes of `dstgen run` (docs/dst-run.md §7): the
// worst over every unit wins.
const (
	CodeOK       = 0 // every attempted unit ran to its end
	CodeNotRun   = 1 // a unit could not run or was cut short (capability, deploy, workload, heal)
	CodeBadInput = 2 // unknown nemesis and the like: the scenarios.yml is wrong
)

// Bounds of the loop; every wait is bounded by one of these.
const (
	checkpointEvery = 10 * time.Second // a progress line at least this often
	pollEvery       = time.Second      // victim signals, quiesce, job end
	healBound       = 60 * time.Second // the final heal's own context
	stopGrace       = 10 * time.Second // TERM → KILL of the workload job
	defaultQuiesce  = 30 * time.Second
	defaultWithin   = 10 * time.Second // victim wait of an instantaneous fault
	stopSlack       = 30 * time.Second // the workload ends by itself within duration + this
	readOverrun     = 2 * time.Second  // an evidence read may end this long after the window's heal time
)

// Orchestrator runs units of scenarios.yml against the hosts of one
// env.yml, writing into one session directory.
type Orchestrator struct {
	Env      *env.Env
	Deployer *deploy.Deployer // prepared hosts and the pool
	Exec     nemesis.Exec
	Session  *Session
	Tier     string
	PlanPath string
	// ID names this session in remote paths and job ids (the session
	// dir's base name).
	ID string
	// Checkpoint and Poll override checkpointEvery and pollEvery (tests).
	Checkpoint, Poll time.Duration
}

// Unit is one scenario or one arm of it.
type Unit struct {
	Scenario *scenarios.Scenario
	Arm      *scenarios.Arm
}

// ID is "S1" or "S4/api".
func (u Unit) ID() string {
	if u.Arm == nil {
		return u.Scenario.ID
	}
	if strings.Contains(u.Arm.ID, "/") {
		return u.Arm.ID
	}
	return u.Scenario.ID + "/" + u.Arm.ID
}

// slug is the unit id usable in a file or job name ("S4/api" → "S4.api").
func (u Unit) slug() string { return strings.ReplaceAll(u.ID(), "/", ".") }

// Command is the workload command the unit runs.
func (u Unit) Command() string {
	if u.Arm != nil && u.Arm.Workload != "" {
		return u.Arm.Workload
	}
	return u.Scenario.Workload.Command
}

// Attempt is one run of a unit with one seed.
type Attempt struct {
	Seed     int64
	Duration time.Duration // run length: the workload's, else the tier's
	Rate     float64
	// MaxFaults caps the schedule (the tier's faults; 0 = no cap).
	MaxFaults int
	// Dir is where the run record goes (the unit's artifact dir, or its
	// rerun-<k>/), RunFile its name there.
	Dir     string
	RunFile string
	// Schedule replays a recorded schedule (a re-run); nil = compute it.
	Schedule []session.ScheduledFault
	ReRunOf  *session.RunRef
}

// Outcome is what one attempt left.
type Outcome struct {
	Unit    string
	RunPath string
	Run     *session.Run
	Code    int
	Err     error // the one-line reason when Code != 0
}

// Summary is the unit's one summary line.
func (o Outcome) Summary(sessionDir string) string {
	landed, windows := 0, 0
	rc := ""
	ops := 0
	if o.Run != nil {
		for _, w := range o.Run.FaultWindows {
			windows++
			if w.Landed {
				landed++
			}
		}
		if o.Run.Workload.ExitStatus != nil {
			rc = strconv.Itoa(*o.Run.Workload.ExitStatus)
		}
		ops = o.Run.Workload.OpsProduced
	}
	return runner.FormatKV([][2]string{{"unit", o.Unit}, {"ops", strconv.Itoa(ops)},
		{"windows_landed", fmt.Sprintf("%d/%d", landed, windows)}, {"workload_rc", rc}, {"session", sessionDir}})
}

// state is what the checkpoint lines report, shared with the ticker.
type state struct {
	phase  atomic.Value // string
	window atomic.Value // string
}

func (s *state) set(phase string) { s.phase.Store(phase) }
func (s *state) get() (string, string) {
	p, _ := s.phase.Load().(string)
	w, _ := s.window.Load().(string)
	return p, w
}

// unitRun is the working state of one attempt.
type unitRun struct {
	o         *Orchestrator
	nominalAt int64 // control wall ns when quiesce held; 0 = not seen
	u         Unit
	a         Attempt
	run       *session.Run
	runPath   string
	st        state
	start     time.Time

	all, sut, clients []nemesis.Host
	driver            *nemesis.Host
	remoteDir         string // <workdir>/runs/<session>/<unit>[-seed-n] on the driver
	jobID             string
	histRemote        string
	finalRemote       string
	jobStarted        time.Time // control clock: the workload's time zero
	wins              []windowRec
	healErrs          []string
	unhealed          bool // the last HealAll did not succeed on every host
	metricsHosts      []nemesis.Host
}

// windowRec is one window while the run goes, on the control clock.
type windowRec struct {
	w                  session.FaultWindow
	scheduled          int64 // control Unix ns
	injected, reverted int64 // control Unix ns, 0 = not
	historyVictim      bool
}

func (o *Orchestrator) every() time.Duration {
	if o.Checkpoint > 0 {
		return o.Checkpoint
	}
	return checkpointEvery
}

func (o *Orchestrator) poll() time.Duration {
	if o.Poll > 0 {
		return o.Poll
	}
	return pollEvery
}

// NotAttempted records a unit the run never reached (interrupted before
// it, or an earlier unit could not go on): attempted false.
func (o *Orchestrator) NotAttempted(u Unit, a Attempt, why string) Outcome {
	r := &session.Run{Scenario: u.Scenario.ID, Seed: a.Seed, Tier: o.Tier, PlanPath: o.PlanPath, Notes: why,
		StartedAt: time.Now().UTC(), EndedAt: time.Now().UTC(), ReRunOf: a.ReRunOf}
	if u.Arm != nil {
		r.Arm = u.ID()
	}
	p := filepath.Join(a.Dir, a.RunFile)
	err := WriteRun(p, r)
	return Outcome{Unit: u.ID(), RunPath: p, Run: r, Code: CodeNotRun, Err: errors.Join(errors.New(why), err)}
}

// RunUnit runs one attempt of u through every stage (docs/dst-run.md
// §7): pre-flight, deploy check, metrics, workload, the fault schedule,
// final heal, quiesce, stop, collect, stamp, run.json. The run record is
// written first (attempted false) and rewritten after the stages that
// change it, so a killed run leaves a partial one. The final heal runs
// whatever happens, on a context of its own.
func (o *Orchestrator) RunUnit(ctx context.Context, u Unit, a Attempt) (out Outcome) {
	r := &unitRun{o: o, u: u, a: a, start: time.Now()}
	r.st.set("pre-flight")
	r.run = &session.Run{Scenario: u.Scenario.ID, Seed: a.Seed, Tier: o.Tier, PlanPath: o.PlanPath,
		StartedAt: r.start.UTC(), ReRunOf: a.ReRunOf, Clock: "monotonic",
		Workload: session.Workload{Command: u.Command(), PlannedRate: a.Rate}}
	if u.Arm != nil {
		r.run.Arm = u.ID()
	}
	r.runPath = filepath.Join(a.Dir, a.RunFile)
	out = Outcome{Unit: u.ID(), RunPath: r.runPath, Run: r.run}
	if err := r.write(); err != nil {
		out.Code, out.Err = CodeNotRun, err
		return out
	}
	o.Session.Logf("unit=%s seed=%d phase=pre-flight run=%s", u.ID(), a.Seed, r.runPath)

	tickCtx, stopTick := context.WithCancel(ctx)
	var tickWG sync.WaitGroup
	tickWG.Add(1)
	go func() { defer tickWG.Done(); r.checkpoints(tickCtx) }()
	defer func() { stopTick(); tickWG.Wait() }()

	code, err := r.stages(ctx)
	out.Code, out.Err = code, err
	r.run.EndedAt = time.Now().UTC()
	if err != nil {
		o.Session.Logf("unit=%s result=%s reason=%q", u.ID(), codeWord(code), err.Error())
		if r.run.Notes == "" {
			r.run.Notes = err.Error()
		}
	}
	if werr := r.write(); werr != nil && out.Err == nil {
		out.Code, out.Err = CodeNotRun, werr
	}
	return out
}

func codeWord(code int) string {
	switch code {
	case CodeOK:
		return "ok"
	case CodeBadInput:
		return "bad-input"
	}
	return "not-run"
}

func (r *unitRun) write() error { return WriteRun(r.runPath, r.run) }

// logf logs a line tagged with the unit.
func (r *unitRun) logf(format string, args ...any) {
	r.o.Session.Logf("unit=%s "+format, append([]any{r.u.ID()}, args...)...)
}

// phase enters a stage: the checkpoint state and one log line.
func (r *unitRun) phase(p string) {
	r.st.set(p)
	r.logf("phase=%s elapsed=%s", p, time.Since(r.start).Round(time.Second))
}

// checkpoints prints a progress line every checkpoint interval until ctx
// ends: phase, elapsed, ops so far (lines of the remote history), window.
func (r *unitRun) checkpoints(ctx context.Context) {
	t := time.NewTicker(r.o.every())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p, w := r.st.get()
		ops := "?"
		if r.driver != nil && r.histRemote != "" {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			s, err := r.o.Exec.Run(cctx, r.driver.Host, "[ -f "+shell.Quote(r.histRemote)+" ] && wc -l < "+shell.Quote(r.histRemote)+" || echo 0")
			cancel()
			if err == nil {
				ops = strings.TrimSpace(s)
			}
		}
		if w == "" {
			w = "-"
		}
		r.o.Session.Logf("checkpoint scenario=%s phase=%s elapsed=%s ops=%s window=%s", r.u.ID(), p, time.Since(r.start).Round(time.Second), ops, w)
	}
}

// stages runs the stages in order; the final heal is deferred so it
// happens on every way out.
func (r *unitRun) stages(ctx context.Context) (int, error) {
	o := r.o
	modes := map[string]string{}
	r.all = o.Deployer.NemesisHosts(modes)
	r.sut = nemesis.SUTOnly(r.all)
	r.run.Nodes = len(r.sut)

	// 1. Nemeses of the unit: an unknown id is bad input, a row that is
	// not built in is INCONCLUSIVE-env.
	for _, f := range r.u.Scenario.Faults {
		_, missing, err := nemesis.ForFault(f)
		if err != nil {
			return CodeBadInput, fmt.Errorf("scenarios.yml:%d: %w", f.Line, err)
		}
		if missing != nil {
			r.run.MissingCapability = missing
			return CodeNotRun, fmt.Errorf("missing capability %s: %s", missing.Requirement, missing.Reason)
		}
	}

	// 3. Pre-flight.
	caps, missing, err := Preflight(ctx, o.Deployer.Pool, o.Exec, r.all, r.sut, r.u.Scenario.Faults)
	r.run.Capabilities = caps
	if err != nil {
		return CodeBadInput, err
	}
	if missing != nil {
		r.run.MissingCapability = missing
		return CodeNotRun, fmt.Errorf("missing capability %s: %s", missing.Requirement, missing.Reason)
	}
	for _, h := range o.Deployer.Hosts {
		if !h.RunsSUT {
			continue
		}
		if m, err := o.Deployer.Mode(ctx, h); err == nil {
			modes[h.Name] = m
		}
	}
	r.all = o.Deployer.NemesisHosts(modes)
	r.sut = nemesis.SUTOnly(r.all)
	clocks, err := MeasureClocks(ctx, o.Deployer.Pool, r.all)
	if err != nil {
		r.logf("clock=partial reason=%q", err.Error())
	}
	r.run.Timeline = &session.Timeline{Hosts: clocks}
	if err := r.pickClients(); err != nil {
		return CodeBadInput, err
	}
	r.run.Timeline.DriverHost = r.driver.Name

	// The schedule is a pure function of the seed and scenarios.yml (a
	// re-run replays the recorded one): a bad one stops here, before any
	// host is touched.
	sched := r.a.Schedule
	if sched == nil {
		sched, err = Schedule(r.u.slug(), r.u.Scenario.Faults, r.a.Seed, r.a.Duration, r.a.MaxFaults)
		if err != nil {
			return CodeBadInput, fmt.Errorf("schedule of %s: %w", r.u.ID(), err)
		}
	}
	r.run.Schedule = sched

	// 4. Deploy check: no silent deploy.
	r.phase("deploy-check")
	if err := r.deployCheck(ctx); err != nil {
		r.run.MissingCapability = &session.MissingCapability{Requirement: "sut running", Reason: err.Error()}
		return CodeNotRun, err
	}
	if err := r.write(); err != nil {
		return CodeNotRun, err
	}

	// From here on something ran on the hosts: heal and collect always.
	defer r.finalHeal()

	// 5. Metrics samplers.
	r.phase("metrics")
	r.startMetrics(ctx)

	// 6. Workload.
	r.phase("workload")
	if err := r.startWorkload(ctx); err != nil {
		r.collect()
		return CodeNotRun, err
	}
	r.run.Attempted = true
	if err := r.write(); err != nil {
		return CodeNotRun, err
	}
	var code int
	var runErr error
	if rc, done := r.exitedAtOnce(ctx); done && rc != 0 {
		r.run.Workload.ExitStatus = &rc
		code, runErr = CodeNotRun, fmt.Errorf("workload of %s exited %d at once on %s (see logs/%s/%s/stderr); fault schedule skipped", r.u.ID(), rc, r.driver.Name, r.u.ID(), r.driver.Name)
	} else {
		// 7. Fault schedule.
		r.phase("fault")
		if err := r.schedule(ctx, sched); err != nil {
			code, runErr = CodeNotRun, err
		}
		r.st.window.Store("")
	}
	if err := r.write(); err != nil && runErr == nil {
		code, runErr = CodeNotRun, err
	}

	// 8. Final heal before quiescence (again on the way out: idempotent).
	r.phase("heal")
	r.healNow(ctx)

	// 9. Quiesce, 10. stop.
	if ctx.Err() == nil {
		r.phase("quiesce")
		r.quiesce(ctx)
	}
	r.phase("stop")
	r.stop(ctx)
	if ctx.Err() == nil {
		r.finalState(ctx)
	}

	// 11. Collect, stamp.
	r.phase("collect")
	r.collect()
	if ctx.Err() != nil && runErr == nil {
		code, runErr = CodeNotRun, fmt.Errorf("%s interrupted: %w", r.u.ID(), context.Cause(ctx))
	}
	if len(r.healErrs) > 0 {
		// A host that did not answer the final heal may keep its fault:
		// the reason says so and what to do, on its one line.
		herr := "heal: " + strings.Join(r.healErrs, "; ")
		if r.unhealed {
			herr += "; a fault may be left on a host the final heal could not reach: run `dstgen heal --all` once it answers"
		}
		if runErr == nil {
			code, runErr = CodeNotRun, errors.New(herr)
		} else {
			runErr = fmt.Errorf("%w; %s", runErr, herr)
		}
	}
	if r.run.Workload.ExitStatus != nil && *r.run.Workload.ExitStatus != 0 && runErr == nil {
		code, runErr = CodeNotRun, fmt.Errorf("workload of %s exited %d", r.u.ID(), *r.run.Workload.ExitStatus)
	}
	return code, runErr
}

// pickClients finds the client hosts: workload.host, else role client,
// else parameters.bench_host. The first is the driver host whose clock
// the history is on.
func (r *unitRun) pickClients() error {
	e := r.o.Env
	var names []string
	switch {
	case r.u.Scenario.Workload.Host != "":
		hs, err := e.Select(r.u.Scenario.Workload.Host)
		if err != nil {
			return fmt.Errorf("scenarios.yml:%d: workload.host: %w", r.u.Scenario.Line, err)
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
	r.clients = byName(r.all, names)
	if len(r.clients) == 0 {
		return fmt.Errorf("%s: no client host for %s: set workload.host in scenarios.yml, a host with role client, or parameters.bench_host", e.Path, r.u.ID())
	}
	r.driver = &r.clients[0]
	seedPart := ""
	if r.a.RunFile != "run.json" {
		seedPart = "-seed-" + strconv.FormatInt(r.a.Seed, 10)
	}
	if strings.HasPrefix(filepath.Base(r.a.Dir), "rerun-") {
		seedPart += "-" + filepath.Base(r.a.Dir)
	}
	r.remoteDir = path.Join(r.driver.Workdir, "runs", r.o.ID, r.u.slug()+seedPart)
	r.histRemote = path.Join(r.remoteDir, "history.jsonl")
	r.finalRemote = path.Join(r.remoteDir, "final.json")
	r.jobID = jobID("wl", r.u.slug()+seedPart, r.o.ID)
	return nil
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

// deployCheck requires the SUT up on its hosts (dstgen sut status; the
// health commands where env.yml has them).
func (r *unitRun) deployCheck(ctx context.Context) error {
	d := r.o.Deployer
	if len(deploy.SUTHosts(d.Hosts)) == 0 || strings.TrimSpace(r.o.Env.SUT.Command) == "" {
		// Nothing dstgen deploys: the workload talks to what is there.
		r.logf("deploy-check skipped: env.yml has no sut.command")
		return nil
	}
	sts, err := d.Status(ctx)
	if err != nil {
		return fmt.Errorf("deploy check: %w; run `task deploy` first", err)
	}
	var down []string
	for _, s := range sts {
		if s.State != "running" {
			down = append(down, s.Host+"="+s.State)
		}
	}
	if len(down) > 0 {
		return fmt.Errorf("deploy check: the SUT is not running on %s; run `task deploy` first", strings.Join(down, ", "))
	}
	for _, h := range d.Health(ctx) {
		if !h.OK {
			return fmt.Errorf("deploy check: health of %s (%s) failed: %s; run `task deploy` first", h.Host, h.Role, h.Output)
		}
	}
	return nil
}

// metricsDir is where a host's samplers write for this attempt.
func (r *unitRun) metricsDir(h nemesis.Host) string {
	return path.Join(h.Workdir, "runs", r.o.ID, "metrics-"+path.Base(r.remoteDir))
}

// startMetrics starts testing/scripts/collect-metrics.sh on every host
// that has it; a host without it is logged and the run goes on.
func (r *unitRun) startMetrics(ctx context.Context) {
	for _, h := range r.all {
		script := path.Join(h.Workdir, "scripts", "collect-metrics.sh")
		cmd := fmt.Sprintf("[ -f %s ] || { echo missing; exit 0; }; mkdir -p %s && bash %s start %s 1 >/dev/null 2>&1 && echo started",
			shell.Quote(script), shell.Quote(r.metricsDir(h)), shell.Quote(script), shell.Quote(r.metricsDir(h)))
		out, err := r.o.Exec.Run(ctx, h.Host, cmd)
		switch {
		case err != nil:
			r.logf("metrics host=%s error=%q", h.Name, err.Error())
		case strings.TrimSpace(out) == "missing":
			r.logf("metrics host=%s status=missing script=%s (run `task deploy` to push testing/scripts)", h.Name, script)
		default:
			r.metricsHosts = append(r.metricsHosts, h)
		}
	}
}

// runID is the attempt's DSTGEN_RUN_ID, the driver's key namespace: one
// per session, unit, seed and re-run, so that no attempt reads what an
// earlier one of the same session wrote (docs/driver-contract.md §4) — a
// re-run repeats the seed and schedule, not the keys.
func (r *unitRun) runID() string {
	id := r.o.ID + "-" + r.u.slug()
	if base := strings.TrimSuffix(r.a.RunFile, ".json"); base != "run" && base != "" {
		id += "-" + strings.TrimPrefix(base, "run-")
	}
	if r.a.ReRunOf != nil {
		id += "-" + filepath.Base(r.a.Dir)
	}
	return id
}

// workloadEnv is the driver contract's environment for this attempt.
func (r *unitRun) workloadEnv() []string {
	b := r.o.Env.Benchmark
	b.Rate = r.a.Rate
	b.Duration = int(r.a.Duration / time.Second)
	vars := r.o.Env.WorkloadEnv(env.WorkloadInput{RunID: r.runID(), Seed: r.a.Seed,
		HistoryPath: r.histRemote, Scenario: r.u.Scenario.ID, Tier: r.o.Tier, Benchmark: b})
	if r.a.Seed == 0 {
		vars = append(vars, "DSTGEN_SEED=0")
	}
	vars = append(vars, "DSTGEN_FINAL="+r.finalRemote)
	if r.u.Arm != nil {
		vars = append(vars, "DSTGEN_ARM="+r.u.ID())
	}
	return vars
}

// startWorkload renders the workload command for the driver host and
// starts it as job wl-<unit>-<session>; its start is the schedule's zero.
func (r *unitRun) startWorkload(ctx context.Context) error {
	d := r.o.Deployer
	i := slices.IndexFunc(d.Hosts, func(h deploy.Host) bool { return h.Name == r.driver.Name })
	command, err := env.Render("workload.command", r.u.Command(), d.Hosts[i].Facts)
	if err != nil {
		return fmt.Errorf("scenarios.yml:%d: %s workload.command: %w", r.u.Scenario.Line, r.u.ID(), err)
	}
	r.run.Workload.Command = command
	if _, err := r.o.Exec.Run(ctx, r.driver.Host, "mkdir -p "+shell.Quote(r.remoteDir)); err != nil {
		return fmt.Errorf("workload of %s: create %s: %w", r.u.ID(), r.remoteDir, err)
	}
	argv := append([]string{"env"}, r.workloadEnv()...)
	argv = append(argv, "sh", "-c", "cd "+shell.Quote(r.remoteDir)+" && "+command)
	st, err := runner.StartJob(ctx, d.Pool, r.driver.Host, r.driver.Workdir, r.jobID, argv)
	if err != nil {
		return fmt.Errorf("workload of %s on %s: %w", r.u.ID(), r.driver.Name, err)
	}
	r.jobStarted = time.Now()
	r.logf("workload host=%s job=%s pid=%d history=%s", r.driver.Name, r.jobID, st.PID, r.histRemote)
	return nil
}

// exitedAtOnce looks at the workload job a moment after its start, before
// the first window: a driver that failed on its flags or its endpoints is
// done by then.
func (r *unitRun) exitedAtOnce(ctx context.Context) (int, bool) {
	if err := wait.Sleep(ctx, min(r.o.poll(), time.Second)); err != nil {
		return 0, false
	}
	st, err := runner.JobStatusOf(ctx, r.o.Deployer.Pool, r.driver.Host, r.driver.Workdir, r.jobID)
	if err != nil || st.Status != runner.StatusFinished || st.RC == nil {
		return 0, false
	}
	return *st.RC, true
}

// faultOf finds the scenarios.yml entry a scheduled window came from.
func (r *unitRun) faultOf(sf session.ScheduledFault) scenarios.Fault {
	for _, f := range r.u.Scenario.Faults {
		if f.Nemesis == sf.Nemesis && f.Targets == sf.Targets {
			return f
		}
	}
	return scenarios.Fault{Nemesis: sf.Nemesis, Targets: sf.Targets, Params: sf.Params}
}

// schedule runs every window at its time after the workload's start.
func (r *unitRun) schedule(ctx context.Context, sched []session.ScheduledFault) error {
	var errs []string
	for _, sf := range sched {
		at := r.jobStarted.Add(time.Duration(sf.AtNS))
		if err := wait.Sleep(ctx, time.Until(at)); err != nil {
			return fmt.Errorf("%s interrupted before %s: %w", r.u.ID(), sf.FaultEpoch, context.Cause(ctx))
		}
		if err := r.window(ctx, sf, at); err != nil {
			errs = append(errs, err.Error())
			r.logf("window=%s error=%q", sf.FaultEpoch, err.Error())
		}
		if err := r.write(); err != nil {
			errs = append(errs, err.Error())
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s interrupted in %s: %w", r.u.ID(), sf.FaultEpoch, context.Cause(ctx))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// leader runs the scenario's leader query on the SUT hosts, the first
// that answers wins, and names the host it points at.
func (r *unitRun) leader(ctx context.Context) (string, error) {
	q := r.u.Scenario.LeaderQuery
	if q == "" {
		return "", fmt.Errorf("scenarios.yml:%d: %s has no leader_query (needed by target leader and the leader_change signal)", r.u.Scenario.Line, r.u.Scenario.ID)
	}
	var errs []string
	for _, h := range r.sut {
		out, err := r.o.Exec.Run(ctx, h.Host, q)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if m, ok := nemesis.MatchHost(out, r.sut); ok {
			return m.Name, nil
		}
		errs = append(errs, fmt.Sprintf("%s: leader query printed %q, which names no SUT host", h.Name, oneline.First(out)))
	}
	return "", fmt.Errorf("leader query: %s", strings.Join(errs, "; "))
}

// landingOf is the fault's victim signal, or the default: a leader change
// for leader-isolation when a leader query is set, else the history.
func (r *unitRun) landingOf(f scenarios.Fault) scenarios.Landing {
	if f.Landing != nil {
		return *f.Landing
	}
	if f.Nemesis == "leader-isolation" && r.u.Scenario.LeaderQuery != "" {
		return scenarios.Landing{LeaderChange: true}
	}
	return scenarios.Landing{History: true}
}

// victimHosts are where the victim signal is read: the targets, the
// others, or a target expression.
func (r *unitRun) victimHosts(ctx context.Context, l scenarios.Landing, targets []nemesis.Host, pick int64) ([]nemesis.Host, error) {
	switch l.On {
	case "", "targets":
		return targets, nil
	case "others":
		var out []nemesis.Host
		for _, h := range r.sut {
			if !slices.ContainsFunc(targets, func(t nemesis.Host) bool { return t.Name == h.Name }) {
				out = append(out, h)
			}
		}
		return out, nil
	}
	return nemesis.Resolve(ctx, l.On, r.sut, pick, r.leader)
}

// victim reads the victim side of one window: before() before the
// injection, then poll() until it changed or within ran out.
type victim struct {
	kind    string
	before  func(ctx context.Context) error
	read    func(ctx context.Context) (session.Evidence, error)
	best    *session.Evidence
	history bool
}

func (r *unitRun) newVictim(l scenarios.Landing, hosts []nemesis.Host) *victim {
	v := &victim{}
	x := r.o.Exec
	switch {
	case l.Log != "":
		var sizes map[string]map[string]int64
		v.kind = "log"
		v.before = func(ctx context.Context) (err error) { sizes, err = LogSizes(ctx, x, hosts); return err }
		v.read = func(ctx context.Context) (session.Evidence, error) { return LogSignal(ctx, x, hosts, sizes, l.Log) }
	case l.Metric != "":
		var before float64
		v.kind = "metric"
		v.before = func(ctx context.Context) (err error) { before, err = MetricValue(ctx, x, hosts, l.Metric); return err }
		v.read = func(ctx context.Context) (session.Evidence, error) {
			after, err := MetricValue(ctx, x, hosts, l.Metric)
			if err != nil {
				return session.Evidence{}, err
			}
			return MetricSignal(l.Metric, before, after, l.Expect), nil
		}
	case l.LeaderChange:
		var before string
		v.kind = "leader"
		v.before = func(ctx context.Context) (err error) { before, err = r.leader(ctx); return err }
		v.read = func(ctx context.Context) (session.Evidence, error) {
			after, err := r.leader(ctx)
			if err != nil {
				after = "" // no leader yet is "not changed yet", not an error
			}
			return LeaderSignal(before, after), nil
		}
	default:
		v.kind, v.history = "history", true
	}
	return v
}

// rank orders verdicts: a later reading only replaces a better one.
func rank(v string) int {
	switch v {
	case session.SignalChanged:
		return 3
	case session.SignalAmbiguous:
		return 2
	case session.SignalUnchanged:
		return 1
	}
	return 0
}

func keepBest(cur *session.Evidence, ev session.Evidence) *session.Evidence {
	if cur == nil || rank(ev.Verdict) > rank(cur.Verdict) || (rank(ev.Verdict) == rank(cur.Verdict) && ev.Verdict != session.SignalChanged) {
		return &ev
	}
	return cur
}

// bounded is ctx bounded by d (and by the transport's own 30 s).
func bounded(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, min(d, runner.MaxTimeout))
}

// window injects one scheduled fault, reads both signals during it and
// heals it at injected + for.
func (r *unitRun) window(ctx context.Context, sf session.ScheduledFault, at time.Time) error {
	f := r.faultOf(sf)
	r.st.window.Store(sf.FaultEpoch)
	rec := windowRec{scheduled: at.UnixNano(), w: session.FaultWindow{FaultEpoch: sf.FaultEpoch, Nemesis: sf.Nemesis, Target: sf.Targets}}
	idx := len(r.wins)
	r.wins = append(r.wins, rec)
	save := func() { r.wins[idx] = rec; r.run.FaultWindows = r.windowsControl() }
	defer save()

	n, _, err := nemesis.ForFault(f)
	if err != nil {
		return fmt.Errorf("%s: %w", sf.FaultEpoch, err)
	}
	rctx, cancel := bounded(ctx, 30*time.Second)
	targets, err := nemesis.Resolve(rctx, sf.Targets, r.sut, sf.Pick, r.leader)
	cancel()
	if err != nil {
		return fmt.Errorf("%s: targets %q: %w", sf.FaultEpoch, sf.Targets, err)
	}
	for _, t := range targets {
		rec.w.Targets = append(rec.w.Targets, t.Name)
	}
	l := r.landingOf(f)
	within := time.Duration(sf.ForNS)
	if l.Within != "" {
		if d, err := time.ParseDuration(l.Within); err == nil {
			within = d
		}
	}
	if within <= 0 {
		within = defaultWithin
	}
	vhosts, err := r.victimHosts(ctx, l, targets, sf.Pick)
	if err != nil {
		return fmt.Errorf("%s: landing.on %q: %w", sf.FaultEpoch, l.On, err)
	}
	v := r.newVictim(l, vhosts)
	rec.historyVictim = v.history
	if v.before != nil {
		bctx, cancel := bounded(ctx, 30*time.Second)
		if err := v.before(bctx); err != nil {
			r.logf("window=%s victim=%s before_error=%q", sf.FaultEpoch, v.kind, err.Error())
		}
		cancel()
	}

	params := map[string]string{}
	for k, val := range f.Params {
		params[k] = val
	}
	for k, val := range sf.Params {
		params[k] = val
	}
	nf := nemesis.Fault{Epoch: sf.FaultEpoch, Nemesis: sf.Nemesis, Targets: targets, Cluster: r.sut, Clients: r.clients,
		Params: params, Custom: f.Custom, Pick: sf.Pick, For: time.Duration(sf.ForNS)}
	rec.injected = time.Now().UnixNano()
	ictx, cancel := bounded(ctx, 30*time.Second)
	act, err := n.Inject(ictx, r.o.Exec, nf)
	cancel()
	ok := err == nil
	rec.w.InjectorOK = &ok
	if err != nil {
		rec.injected = 0
		return fmt.Errorf("%s: inject %s: %w", sf.FaultEpoch, sf.Nemesis, err)
	}
	r.logf("window=%s inject nemesis=%s targets=%s", sf.FaultEpoch, sf.Nemesis, strings.Join(rec.w.Targets, ","))
	save()
	if tc, err := act.TargetCheck(ctx); err != nil {
		r.logf("window=%s target_check_error=%q", sf.FaultEpoch, err.Error())
	} else {
		rec.w.TargetCheck = tc
	}

	injected := time.Unix(0, rec.injected)
	healAt := injected.Add(time.Duration(sf.ForNS))
	victimUntil := injected.Add(within)
	// A read never holds the heal back by more than readOverrun past its
	// time (a host that stopped answering would otherwise cost its full
	// bound, twice, before the heal of every target).
	readBound := func(until time.Time) time.Duration {
		return min(10*time.Second, max(time.Until(until)+readOverrun, readOverrun))
	}
	injectorFailed := false
	var injectorRead time.Time // when the last injector read ended
	readInjector := func() {
		ectx, cancel := bounded(ctx, readBound(healAt))
		defer cancel()
		ev, err := act.Evidence(ectx)
		injectorFailed, injectorRead = err != nil, time.Now()
		if err != nil {
			r.logf("window=%s injector_evidence_error=%q", sf.FaultEpoch, err.Error())
			return
		}
		rec.w.InjectorEvidence = keepBest(rec.w.InjectorEvidence, ev)
	}
	readVictim := func() {
		if v.read == nil || (v.best != nil && v.best.Verdict == session.SignalChanged) {
			return
		}
		until := healAt
		if victimUntil.After(until) {
			until = victimUntil
		}
		vctx, cancel := bounded(ctx, readBound(until))
		defer cancel()
		ev, err := v.read(vctx)
		if err != nil {
			r.logf("window=%s victim_error=%q", sf.FaultEpoch, err.Error())
			return
		}
		v.best = keepBest(v.best, ev)
	}
	// During the window: both signals each poll (the injector's at least
	// mid-window; the victim's until it changed or within ran out).
	for i := 0; ctx.Err() == nil && i < 100000; i++ {
		now := time.Now()
		if !now.Before(healAt) && (v.read == nil || !now.Before(victimUntil) || (v.best != nil && v.best.Verdict == session.SignalChanged)) {
			break
		}
		if now.Before(healAt) {
			readInjector()
		}
		if now.Before(victimUntil) {
			readVictim()
		}
		next := time.Now().Add(r.o.poll())
		if now.Before(healAt) && next.After(healAt) {
			next = healAt
		}
		if err := wait.Sleep(ctx, time.Until(next)); err != nil {
			break
		}
	}
	// Just before heal, unless the last read already ended at the heal
	// time or failed (a host that does not answer would cost its bound
	// again); without any reading yet, one more try.
	if rec.w.InjectorEvidence == nil || (!injectorFailed && injectorRead.Before(healAt)) {
		readInjector()
	}
	if v.read != nil && v.best == nil {
		readVictim()
	}
	rec.w.VictimEvidence = v.best

	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	herr := act.Heal(hctx)
	cancel()
	rec.reverted = time.Now().UnixNano()
	if herr != nil {
		r.healErrs = append(r.healErrs, fmt.Sprintf("%s: %v", sf.FaultEpoch, herr))
		r.logf("window=%s heal_error=%q", sf.FaultEpoch, herr.Error())
	} else {
		// After the heal, one more injector reading (a kill's shows the SUT
		// back with a new pid); it replaces the last one only while it still
		// shows the change — a healed pause or proxy no longer does.
		actx, cancel := bounded(ctx, readOverrun)
		if ev, err := act.Evidence(actx); err == nil && ev.Verdict == session.SignalChanged {
			rec.w.InjectorEvidence = &ev
		}
		cancel()
	}
	rec.w.Landed = landed(rec.w)
	r.logf("window=%s healed injector=%s victim=%s", sf.FaultEpoch, verdictOf(rec.w.InjectorEvidence), verdictOf(rec.w.VictimEvidence))
	return nil
}

func verdictOf(e *session.Evidence) string {
	if e == nil {
		return "none"
	}
	return e.Verdict
}

// landed is the runner's own view: both evidences changed (the analyzer
// re-judges it from the evidence).
func landed(w session.FaultWindow) bool {
	return w.InjectorEvidence != nil && w.VictimEvidence != nil &&
		w.InjectorEvidence.Verdict == session.SignalChanged && w.VictimEvidence.Verdict == session.SignalChanged
}

// windowsControl is the windows with times relative to the workload
// start on the control clock: what run.json holds until collect puts
// them on the history's clock.
func (r *unitRun) windowsControl() []session.FaultWindow {
	return r.windowsOn(func(ns int64) int64 { return ns - r.jobStarted.UnixNano() })
}

func (r *unitRun) windowsOn(conv func(int64) int64) []session.FaultWindow {
	out := make([]session.FaultWindow, 0, len(r.wins))
	for _, rec := range r.wins {
		w := rec.w
		w.ScheduledAtNS = conv(rec.scheduled)
		if rec.injected != 0 {
			v := conv(rec.injected)
			w.InjectedAtNS = &v
		}
		if rec.reverted != 0 {
			v := conv(rec.reverted)
			w.RevertedAtNS = &v
		}
		out = append(out, w)
	}
	return out
}

// healNow runs HealAll on every host, recording what it removed.
func (r *unitRun) healNow(ctx context.Context) {
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healBound)
	defer cancel()
	removed, err := nemesis.HealAll(hctx, r.o.Exec, r.all)
	if r.run.Heal == nil {
		r.run.Heal = &session.HealRecord{}
	}
	r.run.Heal.At = time.Now().UTC()
	for _, rm := range removed {
		r.run.Heal.Removed = append(r.run.Heal.Removed, rm.Host+": "+rm.What)
		r.logf("heal host=%s removed=%q", rm.Host, rm.What)
	}
	r.unhealed = err != nil
	if err != nil {
		r.run.Heal.Errors = append(r.run.Heal.Errors, err.Error())
		r.healErrs = append(r.healErrs, err.Error())
		r.logf("heal error=%q", err.Error())
	}
}

// finalHeal is the deferred heal: on every way out, on a context of its
// own, so SIGINT/SIGTERM or a timeout never leave a fault behind.
func (r *unitRun) finalHeal() {
	r.healNow(context.Background())
	_ = r.write()
}

// quiesce waits for scenario.quiesce.command to exit 0, bounded by its
// timeout; without one, the workload's end is the gate.
func (r *unitRun) quiesce(ctx context.Context) {
	q := r.u.Scenario.Quiesce
	if q == nil || q.Command == "" {
		return
	}
	timeout := defaultQuiesce
	if q.Timeout != "" {
		if d, err := time.ParseDuration(q.Timeout); err == nil && d > 0 {
			timeout = d
		}
	}
	hosts := r.sut[:min(1, len(r.sut))]
	if q.All {
		hosts = r.sut
	}
	if len(hosts) == 0 {
		hosts = r.clients[:1]
	}
	deadline := time.Now().Add(timeout)
	var last string
	for i := 0; i < 10000 && ctx.Err() == nil; i++ {
		okAll := true
		for _, h := range hosts {
			qctx, cancel := bounded(ctx, time.Until(deadline)+time.Second)
			_, err := r.o.Exec.Run(qctx, h.Host, q.Command)
			cancel()
			if err != nil {
				okAll, last = false, err.Error()
				break
			}
		}
		if okAll {
			r.nominalAt = time.Now().UnixNano()
			r.run.Recovery = &session.Recovery{Nominal: true, Evidence: fmt.Sprintf("quiesce command exited 0 after %s", time.Since(time.Unix(0, r.lastRevert())).Round(time.Millisecond))}
			r.logf("quiesce nominal=true")
			return
		}
		if time.Now().After(deadline) {
			break
		}
		if wait.Sleep(ctx, r.o.poll()) != nil {
			break
		}
	}
	r.run.Recovery = &session.Recovery{Nominal: false, Evidence: fmt.Sprintf("quiesce command did not exit 0 within %s: %s", timeout, last)}
	r.logf("quiesce nominal=false")
}

func (r *unitRun) lastRevert() int64 {
	last := r.jobStarted.UnixNano()
	for _, w := range r.wins {
		if w.reverted > last {
			last = w.reverted
		}
	}
	return last
}

// stop waits for the workload to end by itself (duration + 30 s at most),
// then stops it; its rc is the workload's exit status.
func (r *unitRun) stop(ctx context.Context) {
	if r.driver == nil || r.jobStarted.IsZero() {
		return
	}
	pool := r.o.Deployer.Pool
	deadline := r.jobStarted.Add(r.a.Duration + stopSlack)
	var st runner.JobStatus
	var err error
	for i := 0; i < 100000 && ctx.Err() == nil; i++ {
		st, err = runner.JobStatusOf(ctx, pool, r.driver.Host, r.driver.Workdir, r.jobID)
		if err == nil && st.Status != runner.StatusRunning {
			break
		}
		if time.Now().After(deadline) || wait.Sleep(ctx, r.o.poll()) != nil {
			break
		}
	}
	if err != nil || st.Status == runner.StatusRunning {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopGrace+runner.MaxTimeout)
		st, err = runner.StopJob(sctx, pool, r.driver.Host, r.driver.Workdir, r.jobID, stopGrace)
		cancel()
		r.logf("workload stopped signal=%s", st.Stopped)
	}
	if err != nil {
		r.logf("workload status_error=%q", err.Error())
	}
	if st.RC != nil && r.run.Workload.ExitStatus == nil {
		rc := *st.RC
		r.run.Workload.ExitStatus = &rc
	}
}

// finalState runs scenario.final_state on the driver host with
// DSTGEN_FINAL set.
func (r *unitRun) finalState(ctx context.Context) {
	fs := r.u.Scenario.FinalState
	if fs == "" || r.driver == nil {
		return
	}
	fctx, cancel := bounded(ctx, 30*time.Second)
	defer cancel()
	d := r.o.Deployer
	i := slices.IndexFunc(d.Hosts, func(h deploy.Host) bool { return h.Name == r.driver.Name })
	cmd, err := env.Render("final_state", fs, d.Hosts[i].Facts)
	if err != nil {
		r.logf("final_state error=%q", fmt.Sprintf("scenarios.yml:%d: %s final_state: %v", r.u.Scenario.Line, r.u.ID(), err))
		return
	}
	// The workload's environment (run id, endpoints, DSTGEN_FINAL): the
	// dump reads the keys that run wrote (docs/driver-contract.md §7).
	script := "cd " + shell.Quote(r.remoteDir) + " && " + shell.QuoteArgs(append(append([]string{"env"}, r.workloadEnv()...), "sh", "-c", cmd))
	if _, err := r.o.Exec.Run(fctx, r.driver.Host, script); err != nil {
		r.logf("final_state error=%q", err.Error())
	}
}

// collect copies the history, final state, job outputs, SUT logs and
// metrics into the session, then puts the windows on the history's clock,
// stamps fault_epoch and fills the workload fields from the history.
func (r *unitRun) collect() {
	if r.driver == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool := r.o.Deployer.Pool
	sdir := r.o.Session.Dir
	stage := filepath.Join(r.a.Dir, ".collect-"+strings.TrimSuffix(r.a.RunFile, ".json"))
	_ = os.RemoveAll(stage)
	remotes := []string{r.histRemote}
	if r.u.Scenario.FinalState != "" {
		remotes = append(remotes, r.finalRemote)
	}
	res, err := runner.Collect(ctx, pool, r.driver.Host, remotes, stage, nil)
	r.logCollect(res, err)
	histLocal := filepath.Join(r.a.Dir, HistoryFile(r.a.RunFile))
	if err := os.Rename(filepath.Join(stage, "history.jsonl"), histLocal); err != nil {
		r.logf("collect history=missing")
		histLocal = ""
	}
	if err := os.Rename(filepath.Join(stage, "final.json"), filepath.Join(r.a.Dir, FinalFile(r.a.RunFile))); err == nil {
		r.run.FinalState = "" // the default sibling name
	}
	_ = os.RemoveAll(stage)
	if HistoryFile(r.a.RunFile) != "history.jsonl" && histLocal != "" {
		r.run.History = HistoryFile(r.a.RunFile)
	}

	logsDir := func(h string) string { return filepath.Join(sdir, session.LogsDir, filepath.FromSlash(r.u.ID()), h) }
	jobDir := path.Join(r.driver.Workdir, "jobs", r.jobID)
	res, err = runner.Collect(ctx, pool, r.driver.Host, []string{path.Join(jobDir, "stdout"), path.Join(jobDir, "stderr")}, logsDir(r.driver.Name), nil)
	r.logCollect(res, err)
	for _, h := range r.sut {
		if strings.TrimSpace(r.o.Env.SUT.Command) == "" {
			break // no SUT of dstgen's: no SUT logs of its own
		}
		remotes := h.SUT.Logs
		if h.SUT.Unit != "" {
			j := path.Join(r.remoteDir, "sut-"+h.Name+".log")
			since := r.start.Add(-time.Second).Unix()
			if _, err := r.o.Exec.Run(ctx, h.Host, fmt.Sprintf("mkdir -p %s && journalctl -u %s --since @%d --no-pager > %s 2>&1 || true",
				shell.Quote(r.remoteDir), shell.Quote(h.SUT.Unit), since, shell.Quote(j))); err == nil {
				remotes = []string{j}
			}
		}
		if len(remotes) > 0 {
			res, err := runner.Collect(ctx, pool, h.Host, remotes, filepath.Join(logsDir(h.Name), "sut"), nil)
			r.logCollect(res, err)
		}
	}
	if strings.TrimSpace(r.o.Env.SUT.Command) != "" {
		var dirs []string
		for _, h := range r.sut {
			dirs = append(dirs, filepath.Join(logsDir(h.Name), "sut"))
		}
		ls, err := scanLogs(sdir, dirs)
		if err != nil {
			r.logf("log_scan error=%q", err.Error())
		}
		if ls != nil {
			r.run.LogScan = ls
			r.logf("log_scan markers=%d found=%d", len(ls.Markers), ls.Found)
		}
	}
	for _, h := range r.metricsHosts {
		script := path.Join(h.Workdir, "scripts", "collect-metrics.sh")
		_, _ = r.o.Exec.Run(ctx, h.Host, "bash "+shell.Quote(script)+" stop "+shell.Quote(r.metricsDir(h))+" >/dev/null 2>&1 || true")
		res, err := runner.Collect(ctx, pool, h.Host, []string{r.metricsDir(h)}, filepath.Join(sdir, session.MetricsDir, h.Name), nil)
		r.logCollect(res, err)
	}
	r.metricsHosts = nil

	// The one timeline: windows on the history's clock, then the stamps.
	var origin int64
	var ops []history.Op
	if histLocal != "" {
		meta, o, _, err := history.ReadFile(histLocal)
		if err == nil {
			origin, ops = meta.OriginUnixNS, o
			if meta.Clock != "" {
				r.run.Clock = meta.Clock
			}
		}
	}
	var drv session.HostClock
	for _, c := range r.run.Timeline.Hosts {
		if c.Host == r.driver.Name {
			drv = c
		}
	}
	r.run.Timeline.OriginUnixNS = origin
	r.run.FaultWindows = r.windowsOn(func(ns int64) int64 { return ToHistory(ns, drv, origin) })
	if r.nominalAt != 0 && r.run.Recovery != nil {
		v := ToHistory(r.nominalAt, drv, origin)
		r.run.Recovery.NominalAtNS = &v
	}
	for i, rec := range r.wins {
		if rec.historyVictim && len(ops) > 0 {
			ev := HistorySignal(ops, r.run.FaultWindows[i])
			r.run.FaultWindows[i].VictimEvidence = &ev
			r.run.FaultWindows[i].Landed = landed(r.run.FaultWindows[i])
		}
	}
	if histLocal != "" {
		stamped, ambiguous, err := StampFile(histLocal, r.run.FaultWindows, drv.UncertaintyNS)
		if err != nil {
			r.logf("stamp error=%q", err.Error())
		}
		r.run.Timeline.StampedOps, r.run.Timeline.AmbiguousOps = stamped, ambiguous
		w := Throughput(ops, time.Second)
		w.Command, w.ExitStatus, w.PlannedRate = r.run.Workload.Command, r.run.Workload.ExitStatus, r.run.Workload.PlannedRate
		r.run.Workload = w
	}
	r.logf("collect history=%s ops=%d stamped=%d ambiguous=%d", histLocal, r.run.Workload.OpsProduced, r.run.Timeline.StampedOps, r.run.Timeline.AmbiguousOps)
}

func (r *unitRun) logCollect(res []runner.FileResult, err error) {
	if err != nil {
		r.logf("collect error=%q", err.Error())
	}
	for _, f := range res {
		if f.Status != runner.FileOK {
			r.logf("collect host=%s source=%s status=%s reason=%q", f.Host, f.Source, f.Status, f.Reason)
		}
	}
}
