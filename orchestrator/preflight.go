package orchestrator

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/dstgen/dstgen/nemesis"
	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
)

// capCheck is how pre-flight proves one nemesis need on a host: a script
// that exits 0 when it is there, and the hint recorded when it is not.
type capCheck struct {
	script string // "" = nothing to check on the host
	hint   string
}

// capChecks maps nemesis.Info.Needs to host checks. "kill" is always
// there; "tc-netem" and "proxy" are the nemesis's own business (netem
// falls back to the proxy where the kernel has no netem).
func capChecks() map[string]capCheck {
	return map[string]capCheck{
		"root":     {`[ "$(id -u)" = 0 ]`, "log in as root (env.yml user: root) or run as a user the faults may need root for"},
		"iptables": {`iptables -w -S >/dev/null 2>&1`, "install iptables (apt-get install iptables) and log in as root"},
		"kill":     {},
		"tc-netem": {},
		"proxy":    {},
	}
}

// clockOptIn is the fault param that allows clock-skew to change a real
// clock, the same one the nemesis itself refuses without (allow=true;
// docs/nemesis.md §8).
const clockOptIn = "allow"

// preflight checks that every host answers and that the needs of the
// unit's nemeses hold on the SUT hosts. It returns the capability rows
// (one per need and host) and the first missing one, or nil.
func preflight(ctx context.Context, x Hosts, all, sut []nemesis.Host, faults []scenarios.Fault) ([]session.Capability, *session.MissingCapability, error) {
	var caps []session.Capability
	for _, r := range x.Reach(ctx, toEnv(all)) {
		caps = append(caps, session.Capability{Requirement: "reach " + r.Host, Present: r.Reachable, Source: "ssh"})
		if !r.Reachable {
			return caps, &session.MissingCapability{Requirement: "reach " + r.Host,
				Reason: fmt.Sprintf("host %s does not answer over SSH: %s (check env.yml and `dstgen probe --reach`)", r.Host, r.Err)}, nil
		}
	}
	needs := map[string]bool{}
	for _, f := range faults {
		n, missing, err := nemesis.ForFault(f)
		if err != nil {
			return caps, nil, err
		}
		if missing != nil {
			return caps, missing, nil
		}
		for _, need := range n.Info().Needs {
			if nemesis.ViaProxy(f.Params) && (need == "root" || need == "iptables") {
				continue // through `dstgen proxy`: no root, no iptables
			}
			needs[need] = true
			if need == "clock" && f.Params[clockOptIn] != "true" {
				return caps, &session.MissingCapability{Requirement: "clock",
					Reason: fmt.Sprintf("scenarios.yml:%d: %s changes a real clock; set params: {%s: \"true\"} on the fault to allow it", f.Line, f.Nemesis, clockOptIn)}, nil
			}
		}
	}
	names := make([]string, 0, len(needs))
	for n := range needs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, need := range names {
		c, known := capChecks()[need]
		if need == "clock" {
			c = capChecks()["root"]
			known = true
		}
		if !known || c.script == "" {
			caps = append(caps, session.Capability{Requirement: need, Present: true, Source: "not probed: the nemesis checks it itself"})
			continue
		}
		for _, h := range sut {
			_, err := x.Run(ctx, h.Host, c.script)
			caps = append(caps, session.Capability{Requirement: need + " on " + h.Name, Present: err == nil, Source: "pre-flight"})
			if err != nil {
				return caps, &session.MissingCapability{Requirement: need,
					Reason: fmt.Sprintf("%s on %s: missing; %s", need, h.Name, c.hint)}, nil
			}
		}
	}
	return caps, nil, nil
}

// measureClocks measures every host's clock against this machine's
// (runner.MeasureClock); a host whose measurement fails is left out and
// named in the returned error, which the caller logs.
func measureClocks(ctx context.Context, x Hosts, hosts []nemesis.Host) ([]session.HostClock, error) {
	var out []session.HostClock
	var errs []string
	for _, h := range hosts {
		cs, err := x.Clock(ctx, h.Host)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		out = append(out, session.HostClock{Host: h.Name, OffsetNS: int64(cs.Offset), UncertaintyNS: int64(cs.Uncertainty), Samples: cs.Samples})
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return out, nil
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
	caps, missing, err := preflight(ctx, o.hosts, cl.all, cl.sut, r.u.Scenario.Faults)
	run.Capabilities = caps
	if err != nil {
		return cl, placement{}, nil, badInput(err)
	}
	if missing != nil {
		run.MissingCapability = missing
		return cl, placement{}, nil, notRun(fmt.Errorf("missing capability %s: %s", missing.Requirement, missing.Reason))
	}
	cl = newCluster(o.sut.Hosts(o.sut.Modes(ctx)))
	clocks, err := measureClocks(ctx, o.hosts, cl.all)
	if err != nil {
		r.logf("clock=partial reason=%q", err.Error())
	}
	run.Timeline = &session.Timeline{Hosts: clocks}
	p, err := r.place(cl)
	if err != nil {
		return cl, p, nil, badInput(err)
	}
	r.progress.place.Store(&p)
	run.Timeline.DriverHost = p.driver.Name
	sched := r.a.Schedule
	if sched == nil {
		sched, err = expandSchedule(slug(r.u), r.u.Scenario.Faults, r.a.Seed, r.a.Duration, r.a.MaxFaults)
		if err != nil {
			return cl, p, nil, badInput(fmt.Errorf("schedule of %s: %w", r.u.ID(), err))
		}
	}
	run.Schedule = sched
	return cl, p, sched, nil
}
