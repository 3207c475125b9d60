package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dstgen/dstgen/internal/wait"
	"github.com/dstgen/dstgen/nemesis"
	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
)

// windowRec is one window while the run goes, on the control clock.
type windowRec struct {
	w                  session.FaultWindow
	scheduled          int64 // control Unix ns
	injected, reverted int64 // control Unix ns, 0 = not
	historyVictim      bool
}

// faults runs every window of the schedule at its time after the
// workload's start and returns them, in schedule order. Each window is
// prepared a lead ahead of its instant — targets resolved, the victim's
// reading before, the nemesis's own reading ahead (nemesis.Primer) — so
// the fault itself lands on time (docs/dst-run.md §7).
func (r *unitRun) faults(ctx context.Context, cl cluster, p placement, started time.Time, sched []session.ScheduledFault, h *healer) ([]windowRec, error) {
	var wins []windowRec
	var errs []string
	publish := func() {
		r.rec.run.FaultWindows = windowsOn(wins, func(ns int64) int64 { return ns - started.UnixNano() })
	}
	for _, sf := range sched {
		at := started.Add(time.Duration(sf.AtNS))
		if err := wait.Sleep(ctx, time.Until(at.Add(-r.o.b.lead))); err != nil {
			return wins, notRun(fmt.Errorf("%s interrupted before %s: %w", r.u.ID(), sf.FaultEpoch, context.Cause(ctx)))
		}
		r.progress.window.Store(sf.FaultEpoch)
		wp, perr := r.prepareWindow(ctx, cl, sf)
		if err := wait.Sleep(ctx, time.Until(at)); err != nil {
			return wins, notRun(fmt.Errorf("%s interrupted before %s: %w", r.u.ID(), sf.FaultEpoch, context.Cause(ctx)))
		}
		i := len(wins)
		wins = append(wins, windowRec{})
		save := func(rec windowRec) { wins[i] = rec; publish() }
		if err := r.window(ctx, cl, p, sf, at, wp, perr, save, h); err != nil {
			errs = append(errs, err.Error())
			r.logf("window=%s error=%q", sf.FaultEpoch, err.Error())
		}
		if err := r.rec.write(); err != nil {
			errs = append(errs, err.Error())
		}
		if ctx.Err() != nil {
			return wins, notRun(fmt.Errorf("%s interrupted in %s: %w", r.u.ID(), sf.FaultEpoch, context.Cause(ctx)))
		}
	}
	if len(errs) > 0 {
		return wins, notRun(errors.New(strings.Join(errs, "; ")))
	}
	return wins, nil
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

// windowPlan is what a window is about to do: the nemesis, its resolved
// targets, the victim signal to watch with its reading before, and the
// nemesis's own reading ahead, all decided before anything is injected.
type windowPlan struct {
	f       scenarios.Fault
	n       nemesis.Nemesis
	targets []nemesis.Host
	within  time.Duration
	v       *victim
	primed  any
}

// prepareWindow is everything of a window that comes before its instant:
// the nemesis, the targets, the victim and its reading before, the
// nemesis's reading ahead. A failed reading is logged and left unknown
// (the victim's) or absent (the nemesis's); only an unresolvable window is
// an error.
func (r *unitRun) prepareWindow(ctx context.Context, cl cluster, sf session.ScheduledFault) (windowPlan, error) {
	wp, err := r.planWindow(ctx, cl, sf)
	if err != nil {
		return wp, err
	}
	if wp.v.before != nil {
		bctx, cancel := r.bounded(ctx, r.o.b.call)
		if err := wp.v.before(bctx); err != nil {
			r.logf("window=%s victim=%s before_error=%q", sf.FaultEpoch, wp.v.kind, err.Error())
		}
		cancel()
	}
	if pr, ok := wp.n.(nemesis.Primer); ok {
		pctx, cancel := r.bounded(ctx, r.o.b.call)
		primed, err := pr.Prime(pctx, r.o.hosts, r.nemesisFault(cl, nil, sf, wp))
		cancel()
		if err != nil {
			r.logf("window=%s prime_error=%q", sf.FaultEpoch, err.Error())
		}
		wp.primed = primed
	}
	return wp, nil
}

// planWindow resolves a window's nemesis, targets and victim signal.
func (r *unitRun) planWindow(ctx context.Context, cl cluster, sf session.ScheduledFault) (windowPlan, error) {
	wp := windowPlan{f: r.faultOf(sf)}
	n, _, err := nemesis.ForFault(wp.f)
	if err != nil {
		return wp, fmt.Errorf("%s: %w", sf.FaultEpoch, err)
	}
	wp.n = n
	// "leader" right after a heal may meet an election still under way
	// (an isolated ex-leader back with a higher term): the query is
	// asked again until a majority names one, within the window's
	// first `call` bound, rather than failing the unit at once.
	rctx, cancel := r.bounded(ctx, r.o.b.call)
	wp.targets, err = nemesis.Resolve(rctx, sf.Targets, cl.sut, sf.Pick, r.leaderUntil(cl))
	cancel()
	if err != nil {
		return wp, fmt.Errorf("%s: targets %q: %w", sf.FaultEpoch, sf.Targets, err)
	}
	l := r.landingOf(wp.f)
	wp.within = time.Duration(sf.ForNS)
	if l.Within != "" {
		if d, err := time.ParseDuration(l.Within); err == nil {
			wp.within = d
		}
	}
	if wp.within <= 0 {
		wp.within = r.o.b.within
	}
	vhosts, err := r.victimHosts(ctx, cl, l, wp.targets, sf.Pick)
	if err != nil {
		return wp, fmt.Errorf("%s: landing.on %q: %w", sf.FaultEpoch, l.On, err)
	}
	wp.v = r.newVictim(cl, l, vhosts)
	return wp, nil
}

// window injects one scheduled fault at its instant, reads both signals
// during it and heals it at injected + for; wp is what prepareWindow made
// of it (perr its error). save publishes the window as it changes, so
// run.json written mid-window shows it.
func (r *unitRun) window(ctx context.Context, cl cluster, p placement, sf session.ScheduledFault, at time.Time, wp windowPlan, perr error, save func(windowRec), h *healer) error {
	rec := windowRec{scheduled: at.UnixNano(), w: session.FaultWindow{FaultEpoch: sf.FaultEpoch, Nemesis: sf.Nemesis, Target: sf.Targets}}
	defer func() { save(rec) }()
	save(rec)
	for _, t := range wp.targets {
		rec.w.Targets = append(rec.w.Targets, t.Name)
	}
	if perr != nil {
		return perr
	}
	rec.historyVictim = wp.v.history

	act, err := r.inject(ctx, cl, p, sf, wp, &rec)
	if err != nil {
		return err
	}
	save(rec)
	tctx, cancel := r.bounded(ctx, r.o.b.call)
	tc, err := act.TargetCheck(tctx)
	cancel()
	if err != nil {
		r.logf("window=%s target_check_error=%q", sf.FaultEpoch, err.Error())
	} else {
		rec.w.TargetCheck = tc
	}

	injected := time.Unix(0, rec.injected)
	obs := r.observe(ctx, act, wp.v, injected.Add(time.Duration(sf.ForNS)), injected.Add(wp.within), sf.FaultEpoch)
	rec.w.InjectorEvidence, rec.w.VictimEvidence = obs.injector, wp.v.best

	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.o.b.call)
	herr := act.Heal(hctx)
	cancel()
	rec.reverted = time.Now().UnixNano()
	if herr != nil {
		h.errs = append(h.errs, fmt.Sprintf("%s: %v", sf.FaultEpoch, herr))
		r.logf("window=%s heal_error=%q", sf.FaultEpoch, herr.Error())
	} else {
		// After the heal, one more injector reading (a kill's shows the SUT
		// back with a new pid); it replaces the last one only while it still
		// shows the change — a healed pause or proxy no longer does.
		actx, cancel := r.bounded(ctx, r.o.b.readOverrun)
		if ev, err := act.Evidence(actx); err == nil && ev.Verdict == session.SignalChanged {
			rec.w.InjectorEvidence = &ev
		}
		cancel()
	}
	rec.w.Landed = landed(rec.w)
	if rec.historyVictim && rec.w.VictimEvidence == nil {
		// The victim is the history, read after collect: not "no" yet.
		r.logf("window=%s landed=pending injector_evidence=%s victim_evidence=pending (the history, read after collect); healed", sf.FaultEpoch, verdictOf(rec.w.InjectorEvidence))
		return nil
	}
	r.logf("window=%s landed=%s injector_evidence=%s victim_evidence=%s; healed", sf.FaultEpoch, yesNo(rec.w.Landed), verdictOf(rec.w.InjectorEvidence), verdictOf(rec.w.VictimEvidence))
	return nil
}

// nemesisFault is the nemesis's view of one window: the fault to apply,
// with the session's id in its tags, the params of scenarios.yml and the
// schedule, and the reading ahead.
func (r *unitRun) nemesisFault(cl cluster, clients []nemesis.Host, sf session.ScheduledFault, wp windowPlan) nemesis.Fault {
	params := map[string]string{}
	for k, val := range wp.f.Params {
		params[k] = val
	}
	for k, val := range sf.Params {
		params[k] = val
	}
	return nemesis.Fault{Epoch: sf.FaultEpoch, Session: r.o.id, Nemesis: sf.Nemesis, Targets: wp.targets, Cluster: cl.sut, Clients: clients,
		Params: params, Custom: wp.f.Custom, Pick: sf.Pick, For: time.Duration(sf.ForNS), Primed: wp.primed}
}

// inject applies the window's fault, recording when and whether it did.
func (r *unitRun) inject(ctx context.Context, cl cluster, p placement, sf session.ScheduledFault, wp windowPlan, rec *windowRec) (nemesis.Active, error) {
	nf := r.nemesisFault(cl, p.clients, sf, wp)
	rec.injected = time.Now().UnixNano()
	ictx, cancel := r.bounded(ctx, r.o.b.call)
	act, err := wp.n.Inject(ictx, r.o.hosts, nf)
	cancel()
	ok := err == nil
	rec.w.InjectorOK = &ok
	if err != nil && act != nil {
		// Applied on some targets, then failed: heal what was applied now,
		// and record the span it was there (injector_ok false: never landed).
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.o.b.call)
		herr := act.Heal(hctx)
		cancel()
		rec.reverted = time.Now().UnixNano()
		if herr != nil {
			err = fmt.Errorf("%w; healing the part applied: %v", err, herr)
		}
		return nil, fmt.Errorf("%s: inject %s: %w", sf.FaultEpoch, sf.Nemesis, err)
	}
	if err != nil {
		rec.injected = 0
		return nil, fmt.Errorf("%s: inject %s: %w", sf.FaultEpoch, sf.Nemesis, err)
	}
	r.logf("window=%s inject nemesis=%s targets=%s", sf.FaultEpoch, sf.Nemesis, strings.Join(rec.w.Targets, ","))
	return act, nil
}

// observed is what the readings during one window found on the injector
// side (the victim's best reading stays in its victim).
type observed struct {
	injector *session.Evidence
}

// observe reads both signals each poll until the heal time — the
// injector's at least mid-window, the victim's until it changed or
// victimUntil passed — and once more just before the heal.
func (r *unitRun) observe(ctx context.Context, act nemesis.Active, v *victim, healAt, victimUntil time.Time, epoch string) observed {
	var obs observed
	// A read never holds the heal back by more than readOverrun past its
	// time (a host that stopped answering would otherwise cost its full
	// bound, twice, before the heal of every target).
	readBound := func(until time.Time) time.Duration {
		return min(10*time.Second, max(time.Until(until)+r.o.b.readOverrun, r.o.b.readOverrun))
	}
	injectorFailed := false
	var injectorRead time.Time // when the last injector read ended
	readInjector := func() {
		ectx, cancel := r.bounded(ctx, readBound(healAt))
		defer cancel()
		ev, err := act.Evidence(ectx)
		injectorFailed, injectorRead = err != nil, time.Now()
		if err != nil {
			r.logf("window=%s injector_evidence_error=%q", epoch, err.Error())
			return
		}
		obs.injector = keepBest(obs.injector, ev)
	}
	readVictim := func() {
		if v.read == nil || (v.best != nil && v.best.Verdict == session.SignalChanged) {
			return
		}
		vctx, cancel := r.bounded(ctx, readBound(later(healAt, victimUntil)))
		defer cancel()
		ev, err := v.read(vctx)
		if err != nil {
			r.logf("window=%s victim_error=%q", epoch, err.Error())
			return
		}
		v.best = keepBest(v.best, ev)
	}
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
		next := time.Now().Add(r.o.b.poll)
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
	if obs.injector == nil || (!injectorFailed && injectorRead.Before(healAt)) {
		readInjector()
	}
	if v.read != nil && v.best == nil {
		readVictim()
	}
	return obs
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
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

// windowsOn is the windows with their times converted by conv: relative
// to the workload start on the control clock while the run goes, on the
// history's clock once collected.
func windowsOn(wins []windowRec, conv func(int64) int64) []session.FaultWindow {
	out := make([]session.FaultWindow, 0, len(wins))
	for _, rec := range wins {
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

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
