package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/dstgen/dstgen/internal/oneline"
	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
)

// Unit outcomes, as exit codes of `dstgen run` (docs/dst-run.md §7): the
// worst over every unit wins.
const (
	codeOK       = exitcode.OK       // every attempted unit ran to its end
	codeNotRun   = exitcode.NotSo    // a unit could not run or was cut short (capability, deploy, workload, heal)
	codeBadInput = exitcode.BadInput // unknown nemesis and the like: the scenarios.yml is wrong
)

// bounds are the waits of the loop; every wait is bounded by one of them.
// Tests shrink them; a real run uses defaultBounds.
type bounds struct {
	checkpoint  time.Duration // a progress line at least this often
	poll        time.Duration // victim signals, quiesce, job end
	call        time.Duration // one round trip (the transport's own ceiling)
	heal        time.Duration // the final heal's own context
	stopGrace   time.Duration // TERM → KILL of the workload job
	quiesce     time.Duration // quiesce.command's default timeout
	within      time.Duration // victim wait of an instantaneous fault
	stopSlack   time.Duration // the workload ends by itself within duration + this
	readOverrun time.Duration // an evidence read may end this long after the window's heal time
	collect     time.Duration // the whole collect stage
	lead        time.Duration // a window is prepared this long before its instant
}

func defaultBounds() bounds {
	return bounds{
		checkpoint:  10 * time.Second,
		poll:        time.Second,
		call:        runner.MaxTimeout,
		heal:        60 * time.Second,
		stopGrace:   10 * time.Second,
		quiesce:     30 * time.Second,
		within:      10 * time.Second,
		stopSlack:   30 * time.Second,
		readOverrun: 2 * time.Second,
		collect:     2 * time.Minute,
		lead:        time.Second,
	}
}

// orchestrator runs attempts of units of scenarios.yml against the hosts
// of one env.yml, writing into one session directory. SessionRun.Run
// builds it; the unit tests build it with fake Hosts and SUT.
type orchestrator struct {
	env      *env.Env
	hosts    Hosts
	sut      SUT
	session  *sessionWriter
	tier     string
	planPath string
	// reqs are the plan's §6b requirements, which pre-flight checks for
	// each unit's scenario.
	reqs []plan.EnvReq
	// id names this session in remote paths and job ids (the session
	// dir's base name).
	id string
	b  bounds
	// healFirst: a host an earlier run left faulted is healed before the
	// unit, not refused.
	healFirst bool
}

// attempt is one run of a unit with one seed.
type attempt struct {
	Seed     int64
	Duration time.Duration // run length: the workload's, else the tier's
	Rate     float64
	// MaxFaults caps the schedule (the tier's faults; 0 = no cap).
	MaxFaults int
	// Dir is where the run record goes (the unit's artifact dir, or its
	// rerun-<k>/), RunFile its name there.
	Dir     string
	RunFile string
	// Tier is the budget tier of this attempt (a re-run keeps the
	// original's).
	Tier string
	// Schedule replays a recorded schedule (a re-run); nil = compute it.
	Schedule []session.ScheduledFault
	ReRunOf  *session.RunRef
}

// outcome is what one attempt left.
type outcome struct {
	Unit    string
	RunPath string
	Run     *session.Run
	Code    int
	Err     error // the one-line reason when Code != 0
}

// Summary is the unit's one summary line.
func (o outcome) Summary(sessionDir string) string {
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

// notRun and badInput classify a stage's failure (codeOf reads it back).
func notRun(err error) error   { return exitcode.New(codeNotRun, err) }
func badInput(err error) error { return exitcode.New(codeBadInput, err) }

// codeOf is a stage error's unit code: CodeOK for nil, its own code when
// it carries one, else CodeNotRun.
func codeOf(err error) int {
	var e *exitcode.Error
	switch {
	case err == nil:
		return codeOK
	case errors.As(err, &e):
		return e.Code
	}
	return codeNotRun
}

func codeWord(code int) string {
	switch code {
	case codeOK:
		return "ok"
	case codeBadInput:
		return "bad-input"
	}
	return "not-run"
}

// unitRun is one attempt going through its stages. Only the record
// changes as it goes (it is what run.json holds, rewritten after each
// stage); what a stage finds out it returns to the next.
type unitRun struct {
	o     *orchestrator
	u     scenarios.Unit
	a     attempt
	rec   *record
	start time.Time
	// progress is what the checkpoint lines report; written by the
	// stages, read by the ticker.
	progress struct {
		phase, window atomic.Value // string
		place         atomic.Pointer[placement]
	}
}

// notAttempted records a unit the run never reached (interrupted before
// it, or an earlier unit could not go on): attempted false.
func (o *orchestrator) notAttempted(u scenarios.Unit, a attempt, why string) outcome {
	rec := newRecord(o, u, a, time.Now())
	rec.run.Workload = session.Workload{}
	rec.run.Clock = ""
	rec.run.Notes = why
	rec.run.EndedAt = rec.run.StartedAt
	err := rec.write()
	return outcome{Unit: u.ID(), RunPath: rec.path, Run: rec.run, Code: codeNotRun, Err: errors.Join(errors.New(why), err)}
}

// RunUnit runs one attempt of u through every stage (docs/dst-run.md
// §7): pre-flight, deploy check, metrics, workload, the fault schedule,
// final heal, quiesce, stop, collect, stamp, run.json. The run record is
// written first (attempted false) and rewritten after the stages that
// change it, so a killed run leaves a partial one. Once anything ran on
// the hosts the final heal runs whatever happens — an error, a cancelled
// context, a panic in a stage (reported as this unit's failure, with its
// stack in the session log) — on a context of its own.
func (o *orchestrator) RunUnit(ctx context.Context, u scenarios.Unit, a attempt) (out outcome) {
	r := &unitRun{o: o, u: u, a: a, start: time.Now()}
	r.rec = newRecord(o, u, a, r.start)
	r.setPhase("pre-flight")
	out = outcome{Unit: u.ID(), RunPath: r.rec.path, Run: r.rec.run}
	if err := r.rec.write(); err != nil {
		out.Code, out.Err = codeNotRun, err
		return out
	}
	o.session.Logf("unit=%s seed=%d phase=pre-flight run=%s", u.ID(), a.Seed, r.rec.path)

	tickCtx, stopTick := context.WithCancel(ctx)
	var tickWG sync.WaitGroup
	tickWG.Add(1)
	go func() { defer tickWG.Done(); r.checkpoints(tickCtx) }()
	defer func() { stopTick(); tickWG.Wait() }()

	err := r.guarded(ctx)
	out.Code, out.Err = codeOf(err), err
	r.rec.run.EndedAt = time.Now().UTC()
	if err != nil {
		r.logf("result=%s reason=%q", codeWord(out.Code), err.Error())
		if r.rec.run.Notes == "" {
			r.rec.run.Notes = err.Error()
		}
	}
	if werr := r.rec.write(); werr != nil && out.Err == nil {
		out.Code, out.Err = codeNotRun, werr
	}
	return out
}

// guarded runs the stages and turns a panic in one of them into this
// unit's failure: the deferred heal has run by then.
func (r *unitRun) guarded(ctx context.Context) (err error) {
	defer func() {
		if p := recover(); p != nil {
			r.logf("panic=%q stack=%q", fmt.Sprint(p), string(debug.Stack()))
			err = notRun(fmt.Errorf("%s: internal error in phase %s: %v (stack in session-log.md)", r.u.ID(), r.phase(), p))
		}
	}()
	return r.stages(ctx)
}

// stages runs the stages in order; the final heal is deferred so it
// happens on every way out once the hosts were touched.
func (r *unitRun) stages(ctx context.Context) error {
	cl, p, sched, err := r.prepare(ctx)
	if err != nil {
		return err
	}
	r.setPhase("deploy-check")
	if !r.o.sut.Deployed() {
		// Nothing dstgen deploys: the workload talks to what is there.
		r.logf("deploy-check skipped: env.yml has no sut.command")
	} else if err := r.o.sut.Check(ctx); err != nil {
		err = fmt.Errorf("%w; run `task deploy` first", err)
		r.rec.run.MissingCapability = &session.MissingCapability{Requirement: "sut running", Reason: err.Error()}
		return notRun(err)
	}
	if err := r.rec.write(); err != nil {
		return notRun(err)
	}

	// From here on something ran on the hosts: heal and collect always.
	h := &healer{r: r, hosts: cl.all}
	defer h.final()

	r.setPhase("metrics")
	metrics := r.startMetrics(ctx, cl.all, p)

	r.setPhase("workload")
	started, err := r.startWorkload(ctx, p)
	if err != nil {
		r.collect(cl, p, collectIn{metrics: metrics})
		return notRun(err)
	}
	r.rec.run.Attempted = true
	// The workload job stops, and what it wrote is collected, on every way
	// out — a panic in a stage included; the normal path does both itself.
	collected := false
	defer func() {
		if !collected {
			r.stop(context.Background(), p, started)
			r.collect(cl, p, collectIn{started: started, metrics: metrics})
		}
	}()
	if err := r.rec.write(); err != nil {
		return notRun(err)
	}
	var runErr error
	var wins []windowRec
	if host, rc, done := r.exitedAtOnce(ctx, p); done {
		r.rec.run.Workload.ExitStatus = &rc
		runErr = notRun(fmt.Errorf("workload of %s exited %d at once on %s (see logs/%s/%s/stderr); fault schedule skipped", r.u.ID(), rc, host, r.u.ID(), host))
	} else {
		r.setPhase("fault")
		wins, runErr = r.faults(ctx, cl, p, started, sched, h)
		r.progress.window.Store("")
	}
	if err := r.rec.write(); err != nil && runErr == nil {
		runErr = notRun(err)
	}

	// Final heal before quiescence (again on the way out: idempotent).
	r.setPhase("heal")
	h.now(ctx)

	in := collectIn{started: started, wins: wins, metrics: metrics}
	if ctx.Err() == nil {
		r.setPhase("quiesce")
		in.nominalAt = r.quiesce(ctx, cl, p, started, wins)
	}
	r.setPhase("stop")
	r.stop(ctx, p, started)
	r.finalState(ctx, p)

	r.setPhase("collect")
	r.collect(cl, p, in)
	collected = true
	return r.unitError(ctx, runErr, h)
}

// unitError is the unit's one reason: the first stage error, an
// interruption, a heal that failed (with what to do), a workload that
// exited non-zero.
func (r *unitRun) unitError(ctx context.Context, runErr error, h *healer) error {
	if ctx.Err() != nil && runErr == nil {
		runErr = notRun(fmt.Errorf("%s interrupted: %w", r.u.ID(), context.Cause(ctx)))
	}
	if len(h.errs) > 0 {
		// A host that did not answer the final heal may keep its fault:
		// the reason says so and what to do, on its one line.
		herr := "heal: " + strings.Join(h.errs, "; ")
		if h.unhealed {
			herr += "; a fault may be left on a host the final heal could not reach: run `dstgen heal --all` once it answers"
		}
		if runErr == nil {
			runErr = notRun(errors.New(herr))
		} else {
			runErr = exitcode.New(codeOf(runErr), fmt.Errorf("%w; %s", runErr, herr))
		}
	}
	if rc := r.rec.run.Workload.ExitStatus; rc != nil && *rc != 0 && runErr == nil {
		runErr = notRun(fmt.Errorf("workload of %s exited %d", r.u.ID(), *rc))
	}
	return runErr
}

// record is the attempt's run.json as it is being written.
type record struct {
	run  *session.Run
	path string
}

func newRecord(o *orchestrator, u scenarios.Unit, a attempt, start time.Time) *record {
	tier := a.Tier
	if tier == "" {
		tier = o.tier
	}
	run := &session.Run{Scenario: u.Scenario.ID, Seed: a.Seed, Tier: tier, PlanPath: o.planPath,
		StartedAt: start.UTC(), ReRunOf: a.ReRunOf, Clock: "monotonic",
		Workload: session.Workload{Command: u.Command(), PlannedRate: a.Rate}}
	if u.Arm != nil {
		run.Arm = u.ID()
	}
	return &record{run: run, path: filepath.Join(a.Dir, a.RunFile)}
}

func (rec *record) write() error { return writeRun(rec.path, rec.run) }

// logf logs a line tagged with the unit.
func (r *unitRun) logf(format string, args ...any) {
	r.o.session.Logf("unit=%s "+format, append([]any{r.u.ID()}, args...)...)
}

// setPhase enters a stage: the checkpoint state and one log line.
func (r *unitRun) setPhase(p string) {
	r.progress.phase.Store(p)
	if p != "pre-flight" {
		r.logf("phase=%s elapsed=%s", p, time.Since(r.start).Round(time.Second))
	}
}

func (r *unitRun) phase() string {
	p, _ := r.progress.phase.Load().(string)
	return p
}

// checkpoints prints a progress line every checkpoint interval until ctx
// ends: phase, elapsed, ops so far (lines of the remote history), window.
func (r *unitRun) checkpoints(ctx context.Context) {
	t := time.NewTicker(r.o.b.checkpoint)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w, _ := r.progress.window.Load().(string)
		if w == "" {
			w = "-"
		}
		ops := "?"
		if p := r.progress.place.Load(); p != nil {
			ops = r.opsSoFar(ctx, *p)
		}
		r.o.session.Logf("checkpoint scenario=%s phase=%s elapsed=%s ops=%s window=%s", r.u.ID(), r.phase(), time.Since(r.start).Round(time.Second), ops, w)
	}
}

// opsSoFar is the line count of every share's history so far ("?" when a
// host does not answer).
func (r *unitRun) opsSoFar(ctx context.Context, p placement) string {
	total := 0
	for _, sh := range p.shares {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		s, err := r.o.hosts.Run(cctx, sh.host.Host, "[ -f "+shell.Quote(sh.history)+" ] && wc -l < "+shell.Quote(sh.history)+" || echo 0")
		cancel()
		n, perr := strconv.Atoi(oneline.First(s))
		if err != nil || perr != nil {
			return "?"
		}
		total += n
	}
	return strconv.Itoa(total)
}

// bounded is ctx bounded by d and by one round trip's ceiling.
func (r *unitRun) bounded(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, min(d, r.o.b.call))
}
