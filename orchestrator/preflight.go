package orchestrator

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/dstgen/dstgen/capability"
	"github.com/dstgen/dstgen/internal/oneline"
	"github.com/dstgen/dstgen/nemesis"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
)

// needRows maps nemesis.Info.Needs to the capability rows of the probe
// that prove them (runner.Probe: the same rows and the same rule for root
// that `dstgen probe` and `task validate` print). "kill" is always there;
// "tc-netem" and "proxy" are the nemesis's own business (netem falls back
// to the proxy where the kernel has no netem); "clock" needs root.
var needRows = map[string]string{"root": "root", "iptables": "iptables", "clock": "root"}

// needHints say what to do about a missing need.
var needHints = map[string]string{
	"root":     "log in as root (env.yml user: root, or a uid-0 user): the faults run as the SSH user",
	"iptables": "install iptables (apt-get install iptables) and log in as root",
}

// clockOptIn is the fault param that allows clock-skew to change a real
// clock, the same one the nemesis itself refuses without (allow=true;
// docs/nemesis.md §8).
const clockOptIn = "allow"

// checked is what pre-flight found: the capability rows run.json records,
// the first missing one (nil when none is), and every host's clock.
type checked struct {
	caps      []session.Capability
	missing   *session.MissingCapability
	clocks    []session.HostClock
	leftovers []nemesis.Removed // faults an earlier run left on the hosts
}

// preflight probes every host once — reach, clock, capability matrix
// (runner.Probe) — and checks the needs of the unit's nemeses on the SUT
// hosts against the probe's rows, then the plan's §6b requirements of
// scenario id (reqs). An unreachable host, a need a SUT host lacks, or a
// requirement of the scenario missing on a SUT host is the first missing
// capability: the unit is INCONCLUSIVE-env before it starts, as validate
// said it would be.
func preflight(ctx context.Context, x Hosts, all, sut []nemesis.Host, faults []scenarios.Fault, id string, reqs []plan.EnvReq) (checked, error) {
	var c checked
	needs, missing, err := needsOf(faults)
	if err != nil || missing != nil {
		c.missing = missing
		return c, err
	}
	byHost := map[string]runner.HostCaps{}
	probed := x.Probe(ctx, toEnv(all), capability.RequirementBinaries(reqs)...)
	for _, hc := range probed {
		byHost[hc.Host] = hc
		c.caps = append(c.caps, session.Capability{Requirement: "reach " + hc.Host, Present: hc.Reachable, Source: "ssh"})
		if !hc.Reachable && c.missing == nil {
			c.missing = &session.MissingCapability{Requirement: "reach " + hc.Host,
				Reason: fmt.Sprintf("host %s does not answer over SSH: %s (check env.yml and `dstgen probe --reach`)", hc.Host, hc.Err)}
		}
		if hc.Reachable && hc.ClockSamples > 0 {
			c.clocks = append(c.clocks, session.HostClock{Host: hc.Host, OffsetNS: int64(hc.ClockOffset), UncertaintyNS: int64(hc.ClockUncertainty), Samples: hc.ClockSamples})
		}
	}
	if c.missing != nil {
		return c, nil
	}
	c.leftovers, err = nemesis.Leftovers(ctx, x, all)
	if err != nil {
		return c, notRun(err)
	}
	c.requirements(id, reqs, sut, byHost)
	for _, need := range needs {
		row, probed := needRows[need]
		if !probed {
			c.caps = append(c.caps, session.Capability{Requirement: need, Present: true, Source: "not probed: the nemesis checks it itself"})
			continue
		}
		for _, h := range sut {
			got, _ := byHost[h.Name].Cap(row)
			c.caps = append(c.caps, session.Capability{Requirement: need + " on " + h.Name, Present: got.Present, Source: "probe: " + got.Source})
			if !got.Present && c.missing == nil {
				c.missing = &session.MissingCapability{Requirement: need,
					Reason: fmt.Sprintf("%s on %s: missing (%s); %s", need, h.Name, oneline.First(got.Message), needHints[orDefault(row, need)])}
			}
		}
	}
	return c, nil
}

// requirements checks the plan's §6b requirements of scenario id on the
// SUT hosts (docs/dst-run.md §7, pre-flight): each row is recorded, and the
// first one missing is the unit's missing capability.
func (c *checked) requirements(id string, reqs []plan.EnvReq, sut []nemesis.Host, byHost map[string]runner.HostCaps) {
	if len(reqs) == 0 {
		return
	}
	var caps []runner.HostCaps
	for _, h := range sut {
		caps = append(caps, byHost[h.Name])
	}
	rows := capability.MapRequirements(reqs, caps)
	for _, r := range rows {
		if r.Present == capability.ReqMissing || r.Present == capability.ReqPresent {
			c.caps = append(c.caps, session.Capability{Requirement: r.Requirement + " on " + r.Host, Present: r.Present == capability.ReqPresent, Source: "plan §6b: " + r.Source})
		}
	}
	if m := capability.MissingFor(rows, id); m != nil && c.missing == nil {
		hint := m.InstallHint
		if hint == "" {
			hint = "install it"
		}
		c.missing = &session.MissingCapability{Requirement: m.Requirement,
			Reason: fmt.Sprintf("plan §6b line %d: %s missing on %s (%s); %s", m.Line, m.Requirement, m.Host, oneline.First(m.Source), strings.ReplaceAll(hint, "`", ""))}
	}
}

func orDefault(row, need string) string {
	if _, ok := needHints[need]; ok {
		return need
	}
	return row
}

// needsOf is the sorted needs of the faults' nemeses (a fault through
// `dstgen proxy` needs neither root nor iptables), or the first fault
// that cannot run: a row that is not built in, or clock-skew without its
// opt-in.
func needsOf(faults []scenarios.Fault) ([]string, *session.MissingCapability, error) {
	set := map[string]bool{}
	for _, f := range faults {
		n, missing, err := nemesis.ForFault(f)
		if err != nil || missing != nil {
			return nil, missing, err
		}
		for _, need := range n.Info().Needs {
			if nemesis.ViaProxy(f.Params) && (need == "root" || need == "iptables") {
				continue
			}
			set[need] = true
			if need == "clock" && f.Params[clockOptIn] != "true" {
				return nil, &session.MissingCapability{Requirement: "clock",
					Reason: fmt.Sprintf("scenarios.yml:%d: %s changes a real clock; set params: {%s: \"true\"} on the fault to allow it", f.Line, f.Nemesis, clockOptIn)}, nil
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil, nil
}

// cluster is the hosts of a unit: every env.yml host, and those of them
// that run the SUT, in env.yml order.
type cluster struct{ all, sut []nemesis.Host }

func newCluster(all []nemesis.Host) cluster { return cluster{all: all, sut: nemesis.SUTOnly(all)} }

// prepare is every stage before the SUT is touched: the unit's nemeses
// (an unknown id is bad input, a row that is not built in
// INCONCLUSIVE-env), pre-flight (reach, the nemeses' needs), each SUT
// host's supervisor, every host's clock, where the workload runs, and the
// fault schedule — a pure function of the seed and scenarios.yml (a
// re-run replays the recorded one), so a bad one stops here.
func (r *unitRun) prepare(ctx context.Context) (cluster, placement, []session.ScheduledFault, error) {
	o, run := r.o, r.rec.run
	cl := newCluster(o.sut.Hosts(nil))
	run.Nodes = len(cl.sut)
	for _, f := range r.u.Scenario.Faults {
		_, missing, err := nemesis.ForFault(f)
		if err != nil {
			return cl, placement{}, nil, badInput(fmt.Errorf("scenarios.yml:%d: %w", f.Line, err))
		}
		if missing != nil {
			run.MissingCapability = missing
			return cl, placement{}, nil, notRun(fmt.Errorf("missing capability %s: %s", missing.Requirement, missing.Reason))
		}
	}
	c, err := preflight(ctx, o.hosts, cl.all, cl.sut, r.u.Scenario.Faults, r.u.ID(), o.reqs)
	run.Capabilities = c.caps
	if err != nil {
		return cl, placement{}, nil, badInput(err)
	}
	if c.missing != nil {
		run.MissingCapability = c.missing
		return cl, placement{}, nil, notRun(fmt.Errorf("missing capability %s: %s", c.missing.Requirement, c.missing.Reason))
	}
	if err := r.clean(ctx, cl, c.leftovers); err != nil {
		return cl, placement{}, nil, err
	}
	cl = newCluster(o.sut.Hosts(o.sut.Modes(ctx)))
	run.Timeline = &session.Timeline{Hosts: c.clocks}
	p, err := r.place(cl)
	if err != nil {
		return cl, p, nil, badInput(err)
	}
	r.progress.place.Store(&p)
	run.Timeline.DriverHost = p.driver.Name
	sched := r.a.Schedule
	if sched == nil {
		var unfit []string
		sched, unfit, err = expandSchedule(slug(r.u), r.u.Scenario.Faults, r.a.Seed, r.a.Duration, r.a.MaxFaults)
		if err != nil {
			return cl, p, nil, badInput(fmt.Errorf("schedule of %s: %w", r.u.ID(), err))
		}
		for _, u := range unfit {
			r.logf("schedule not_scheduled=%q", u+" (a longer tier runs it)")
		}
	}
	run.Schedule = sched
	return cl, p, sched, nil
}

// clean refuses to start on hosts an earlier run left faulted — a rule
// still dropping, a SUT still stopped: the run would start faulted and
// its evidence sum the stale rules' counters — or, when the session run
// was asked to (--heal-first), heals them first and records it.
func (r *unitRun) clean(ctx context.Context, cl cluster, left []nemesis.Removed) error {
	if len(left) == 0 {
		return nil
	}
	var what []string
	for _, l := range left {
		what = append(what, l.Host+": "+l.What)
	}
	if !r.o.healFirst {
		m := &session.MissingCapability{Requirement: "hosts without dstgen's faults",
			Reason: fmt.Sprintf("an earlier run left faults on the hosts (%s): run `dstgen heal --all` first, or `dstgen run --heal-first`", strings.Join(what, "; "))}
		r.rec.run.MissingCapability = m
		return notRun(fmt.Errorf("missing capability %s: %s", m.Requirement, m.Reason))
	}
	r.logf("heal-first leftovers=%q", strings.Join(what, "; "))
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.o.b.heal)
	defer cancel()
	removed, err := nemesis.HealAll(hctx, r.o.hosts, cl.all)
	if r.rec.run.Heal == nil {
		r.rec.run.Heal = &session.HealRecord{}
	}
	for _, rm := range removed {
		r.rec.run.Heal.Removed = append(r.rec.run.Heal.Removed, "before the run: "+rm.Host+": "+rm.What)
	}
	if err != nil {
		return notRun(fmt.Errorf("heal before the run: %w", err))
	}
	return nil
}
