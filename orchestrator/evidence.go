package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/dstgen/dstgen/internal/oneline"
	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/internal/wait"
	"github.com/dstgen/dstgen/nemesis"
	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
)

// leaderOf is the scenario's leader query over cl's SUT hosts: it runs on
// every one at once, and the leader is the host a majority of all SUT
// hosts names — an isolated ex-leader that still names itself, or the one
// host that answers first, is never enough (docs/scenarios-yml.md §3.7).
// No majority (an election under way, hosts down) is an error saying what
// each host said.
func (r *unitRun) leaderOf(cl cluster) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		q := r.u.Scenario.LeaderQuery
		if q == "" {
			return "", fmt.Errorf("scenarios.yml:%d: %s has no leader_query (needed by target leader and the leader_change signal)", r.u.Scenario.Line, r.u.Scenario.ID)
		}
		res := eachHost(ctx, r.o.hosts, cl.sut, func(nemesis.Host) string { return r.withWorkloadEnv(q) })
		votes := map[string]int{}
		var said []string
		for i, h := range cl.sut {
			switch m, ok := nemesis.MatchHost(res[i].out, cl.sut); {
			case res[i].err != nil:
				said = append(said, res[i].err.Error())
			case ok:
				votes[m.Name]++
				said = append(said, h.Name+" says "+m.Name)
			default:
				said = append(said, fmt.Sprintf("%s: leader query printed %q, which names no SUT host", h.Name, oneline.First(res[i].out)))
			}
		}
		for name, n := range votes {
			if 2*n > len(cl.sut) {
				return name, nil
			}
		}
		return "", fmt.Errorf("leader query: no leader named by a majority of the %d SUT hosts: %s", len(cl.sut), strings.Join(said, "; "))
	}
}

// leaderUntil is leaderOf asked again, every poll, until it names a
// leader or ctx ends; the last answer's error is returned then.
func (r *unitRun) leaderUntil(cl cluster) func(context.Context) (string, error) {
	leader := r.leaderOf(cl)
	return func(ctx context.Context) (string, error) {
		var last error
		for i := 0; i < 1000; i++ {
			l, err := leader(ctx)
			if err == nil {
				return l, nil
			}
			if last == nil || ctx.Err() == nil {
				last = err // an answer cut by the deadline says less than the one before
			}
			if ctx.Err() != nil || wait.Sleep(ctx, r.o.b.poll) != nil {
				break
			}
		}
		return "", last
	}
}

// withWorkloadEnv is script run with the workload's DSTGEN_* variables
// (run id, SUT hosts by role, rate, …; docs/driver-contract.md §2), as the
// leader query and the quiesce check need to reach the SUT the way the
// driver does (docs/scenarios-yml.md §3.7).
func (r *unitRun) withWorkloadEnv(script string) string {
	p := r.progress.place.Load()
	if p == nil {
		return script
	}
	return shell.QuoteArgs(append(append([]string{"env"}, r.workloadEnv(*p)...), "sh", "-c", script))
}

// landingOf is the fault's victim signal, or the default: with a leader
// query, a leader change for leader-isolation and for a kill, restart or
// outbound one-way partition (direction=out) of the leader — what those do
// to a cluster that works; a leader that only goes deaf may keep its
// followers and its title — else the history.
func (r *unitRun) landingOf(f scenarios.Fault) scenarios.Landing {
	if f.Landing != nil {
		return *f.Landing
	}
	if r.u.Scenario.LeaderQuery != "" {
		switch {
		case f.Nemesis == "leader-isolation",
			f.Targets == "leader" && (f.Nemesis == "kill-9" || f.Nemesis == "kill-term" || f.Nemesis == "restart"),
			f.Targets == "leader" && f.Nemesis == "partition-asym" && f.Params["direction"] == "out":
			return scenarios.Landing{LeaderChange: true}
		}
	}
	return scenarios.Landing{History: true}
}

// victimHosts are where the victim signal is read: the targets, the
// others, or a target expression.
func (r *unitRun) victimHosts(ctx context.Context, cl cluster, l scenarios.Landing, targets []nemesis.Host, pick int64) ([]nemesis.Host, error) {
	switch l.On {
	case "", "targets":
		return targets, nil
	case "others":
		var out []nemesis.Host
		for _, h := range cl.sut {
			if !slices.ContainsFunc(targets, func(t nemesis.Host) bool { return t.Name == h.Name }) {
				out = append(out, h)
			}
		}
		return out, nil
	}
	return nemesis.Resolve(ctx, l.On, cl.sut, pick, r.leaderOf(cl))
}

// victim reads the victim side of one window: before() before the
// injection, then read() each poll until it changed or within ran out;
// best is the best reading so far. A history victim is read after
// collect, from the history itself.
type victim struct {
	kind    string
	before  func(ctx context.Context) error
	read    func(ctx context.Context) (session.Evidence, error)
	best    *session.Evidence
	history bool
}

func (r *unitRun) newVictim(cl cluster, l scenarios.Landing, hosts []nemesis.Host) *victim {
	v := &victim{}
	x := r.o.hosts
	switch {
	case l.Log != "":
		// Per host: a host whose size before failed is not read (logSignal),
		// so only the others can prove the marker is new.
		var sizes map[string]map[string]int64
		v.kind = "log"
		v.before = func(ctx context.Context) (err error) { sizes, err = logSizes(ctx, x, hosts); return err }
		v.read = func(ctx context.Context) (session.Evidence, error) { return logSignal(ctx, x, hosts, sizes, l.Log) }
	case l.Metric != "":
		var before float64
		var beforeErr error
		v.kind = "metric"
		v.before = func(ctx context.Context) error {
			before, beforeErr = metricValue(ctx, x, hosts, l.Metric)
			return beforeErr
		}
		v.read = func(ctx context.Context) (session.Evidence, error) {
			if beforeErr != nil {
				// A sum over the hosts that answered is no baseline.
				return unknownEvidence(kindMetric, l.Metric, beforeErr), nil
			}
			after, err := metricValue(ctx, x, hosts, l.Metric)
			if err != nil {
				return session.Evidence{}, err
			}
			return metricSignal(l.Metric, before, after, l.Expect), nil
		}
	case l.LeaderChange:
		var before string
		var beforeErr error
		leader := r.leaderOf(cl)
		v.kind = "leader"
		// The reading before is asked again, like target "leader", while
		// no majority names one (an election right after a heal): one
		// failed answer would leave the window unknown, never landed.
		until := r.leaderUntil(cl)
		v.before = func(ctx context.Context) error { before, beforeErr = until(ctx); return beforeErr }
		v.read = func(ctx context.Context) (session.Evidence, error) {
			if beforeErr != nil {
				// No leader known before: any leader now would read "changed".
				return unknownEvidence(kindLeaderChange, "", beforeErr), nil
			}
			after, err := leader(ctx)
			if err != nil {
				after = "" // no leader yet is "not changed yet", not an error
			}
			return leaderSignal(before, after), nil
		}
	default:
		v.kind, v.history = "history", true
	}
	return v
}

// unknownEvidence is a victim signal whose reading before the fault
// failed: unknown, never landed (docs/nemesis.md §7).
func unknownEvidence(kind, name string, why error) session.Evidence {
	return session.Evidence{Kind: kind, Name: name, Verdict: session.SignalUnknown,
		Raw: "the reading before the fault failed, so no later reading can show a change: " + oneline.First(why.Error())}
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
