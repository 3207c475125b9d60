package analyze

// Stage 1, load (continued): the plan's §7.M and threshold checkers run
// over each loaded history; their results are attached to the run.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/session"
)

// runCheckers runs every serious unit's §7.M checkers over each run's
// history, bounded by Options.Workers.
func (a *analysis) runCheckers(ctx context.Context, groups map[string]*group) error {
	eg, gctx := errgroup.WithContext(ctx)
	eg.SetLimit(a.workers())
	for _, g := range groups {
		us := g.arms
		if len(us) == 0 {
			us = []*unit{g.parent}
		}
		for _, u := range us {
			var names []string
			switch {
			case u.serious && u.model != nil:
				names = checker.ParseCheckerField(u.model.Checker)
			default:
				// A scenario without §7.M judged by a threshold oracle
				// (a fairness formula, an SLO in the Oracle text) still
				// has a checker dstgen ships: run it on the history.
				names = thresholdCheckers(u)
				if len(names) == 0 {
					continue
				}
			}
			if len(names) == 0 && u.model != nil {
				// Pick's ok=false still names the nearest checker; the
				// plan should have said why it applies, but running it
				// beats running nothing.
				if c, _ := checker.Pick(u.model.Model, firstCategory(u)); c != "" {
					names = []string{c}
				}
			}
			for _, lr := range append(append([]*loadedRun(nil), u.runs...), u.reruns...) {
				if !lr.hasHist || !lr.run.Attempted {
					continue
				}
				if len(names) == 0 {
					lr.checkErr = "the §7.M Checker field names no checker dstgen knows"
					a.problem(a.planFile(), fieldLine(u.model, "Checker"), u.id, fmt.Sprintf("§7.M Checker %q names no known checker", u.model.Checker))
					continue
				}
				var mu sync.Mutex
				for _, name := range names {
					eg.Go(func() error {
						var params map[string]string
						if name == checker.Serializability {
							if !hasTxn(lr.ops) {
								// A history of single-key ops cannot show a
								// cross-key cycle: judge what it can show
								// (per-key linearizability); the scope is then
								// narrower than the claim (narrowerScope).
								name = checker.Linearizability
							} else if lvl, ok := checker.IsolationLevel(isolationText(u)); ok {
								params = map[string]string{"level": lvl}
							}
						}
						if name == checker.LeaseSafety {
							params = leaseParams(isolationText(u), lr.run)
						}
						spec := checker.Spec{Checker: name, Timeout: a.opts.CheckTimeout, HTMLMaxBytes: a.opts.HTMLMaxBytes,
							Fairness: fairnessOf(u), SLO: sloOf(u), Params: params, History: lr.histRel}
						spec.Windows, spec.WindowUncertainty = windowsOf(lr.run)
						if u.model != nil {
							spec.Model = u.model.Model
						}
						if a.opts.HTMLDir != "" {
							// Named after the run file: a re-run shares its seed.
							base := strings.TrimSuffix(filepath.Base(lr.run.Path), ".json")
							spec.HTMLPath = filepath.Join(a.opts.HTMLDir, fmt.Sprintf("%s-%s-%s.html", strings.ReplaceAll(u.id, "/", "_"), base, name))
						}
						res, err := checker.Run(gctx, spec, lr.ops, lr.finalState)
						mu.Lock()
						defer mu.Unlock()
						if err != nil {
							if ctx.Err() != nil {
								return fmt.Errorf("check %s: %w", u.id, ctx.Err())
							}
							why := fmt.Sprintf("checker %s: %v", name, err)
							if lr.finalState == nil && lr.run.FinalStateError != "" {
								why += " (final state: " + lr.run.FinalStateError + ")"
							}
							lr.checkErr = appendText(lr.checkErr, why)
							line := fieldLine(u.model, "Checker")
							if errors.Is(err, checker.ErrModel) {
								line = fieldLine(u.model, "Model under test")
							}
							if u.model == nil && u.ps != nil {
								line = u.ps.Fields[plan.FieldOracle]
							}
							a.problem(a.planFile(), line, u.id, fmt.Sprintf("checker %s on %s: %v", name, lr.histRel, err))
							return nil
						}
						if res.HTML != "" {
							res.HTML = a.rel(res.HTML)
						}
						lr.results = append(lr.results, res)
						return nil
					})
				}
			}
		}
	}
	if err := eg.Wait(); err != nil {
		return err
	}
	for _, g := range groups {
		for _, u := range append([]*unit{g.parent}, g.arms...) {
			for _, lr := range append(append([]*loadedRun(nil), u.runs...), u.reruns...) {
				sort.Slice(lr.results, func(i, j int) bool { return lr.results[i].Checker < lr.results[j].Checker })
			}
		}
	}
	return nil
}

// fairnessOf is the unit's fairness formula as the plan parsed it (nil
// when the plan states none or it did not parse; the plan's lint reported
// that).
func fairnessOf(u *unit) *plan.Fairness {
	if u.ps == nil || u.ps.S == nil {
		return nil
	}
	return u.ps.S.Fairness
}

// sloOf is the SLO the unit's Oracle text states (an arm's own oracle,
// else its scenario's), read with the plan's threshold grammar.
func sloOf(u *unit) *plan.SLO {
	texts := []string{u.oracle}
	if u.ps != nil {
		texts = append(texts, u.ps.Oracle)
	}
	for _, t := range texts {
		if s, ok := plan.ParseSLO(t); ok {
			return s
		}
	}
	return nil
}

// windowsOf is a run's injected fault windows on its history's clock
// (collect put them there) and how far their edges may be off; none when
// the driver's clock was never measured, so no bound is measured from a
// guess.
func windowsOf(r *session.Run) ([]checker.Window, time.Duration) {
	if r.Timeline == nil || r.Timeline.DriverClockUnknown {
		return nil, 0
	}
	var ws []checker.Window
	for _, w := range r.FaultWindows {
		if w.InjectedAtNS != nil {
			ws = append(ws, checker.Window{Epoch: w.FaultEpoch, Injected: *w.InjectedAtNS, Reverted: w.RevertedAtNS})
		}
	}
	return ws, time.Duration(r.Timeline.StampUncertaintyNS)
}

// thresholdCheckers names the checkers a unit without a §7.M block is
// judged by: fairness when it carries a fairness formula and its oracle or
// category is fairness, SLO when its Oracle text states thresholds.
func thresholdCheckers(u *unit) []string {
	var names []string
	if fairnessOf(u) != nil && (u.categories[plan.CatFairness] || strings.Contains(strings.ToLower(u.oracle), "fairness")) {
		names = append(names, checker.Fairness)
	}
	if sloOf(u) != nil {
		names = append(names, checker.SLO)
	}
	return names
}

func firstCategory(u *unit) string {
	var cs []string
	for c := range u.categories {
		if plan.GatedModel(c) {
			cs = append(cs, c)
		}
	}
	sort.Strings(cs)
	if len(cs) > 0 {
		return cs[0]
	}
	return ""
}

// hasTxn reports whether a history records transactions: only then can
// the isolation checker see a cycle.
func hasTxn(ops []history.Op) bool {
	for i := range ops {
		if ops[i].OpType == history.OpTxn {
			return true
		}
	}
	return false
}

// isolationText is where a plan states the isolation level it claims:
// the §7.M Checker field, then the falsified claims' text (docs/verdicts.md
// §9 keeps the level the claim names).
// leaseTTLRE and leaseUncRE read the lease TTL and the declared clock
// uncertainty from a plan's §7.M Checker or Oracle text ("lease TTL 10s",
// "ttl=2s", "clock uncertainty 50ms").
var (
	leaseTTLRE = lazyre.New(`(?i)\b(?:lease\s+)?(?:ttl|lease\s+(?:duration|length))\s*(?:=|:|of|is)?\s*(\d+(?:\.\d+)?)\s*(ms|s|m)\b`)
	leaseUncRE = lazyre.New(`(?i)\buncertainty\s*(?:=|:|of|is|±)?\s*±?\s*(\d+(?:\.\d+)?)\s*(us|µs|ms|s)\b`)
)

// leaseParams gives lease-safety the TTL the plan states and the larger of
// the plan's declared clock uncertainty and the one the run measured
// (run.json timeline: the driver host's clock against the control node's),
// so a lease is judged expired only beyond what the clocks can tell
// (docs/history-and-checkers.md §5.18). Without a TTL in the plan the
// checker says which param it needs.
func leaseParams(text string, r *session.Run) map[string]string {
	p := map[string]string{}
	if m := leaseTTLRE.FindStringSubmatch(text); m != nil {
		p["ttl"] = m[1] + m[2]
	}
	var unc time.Duration
	if m := leaseUncRE.FindStringSubmatch(text); m != nil {
		if d, err := time.ParseDuration(m[1] + strings.Replace(m[2], "µ", "u", 1)); err == nil {
			unc = d
		}
	}
	if r != nil && r.Timeline != nil {
		for _, h := range r.Timeline.Hosts {
			if d := time.Duration(h.UncertaintyNS); d > unc {
				unc = d
			}
		}
	}
	if unc > 0 {
		p["uncertainty"] = unc.String()
	}
	return p
}

func isolationText(u *unit) string {
	var b strings.Builder
	if u.model != nil {
		b.WriteString(u.model.Checker + "\n")
	}
	if u.ps != nil {
		b.WriteString(u.ps.Oracle + "\n")
	}
	return b.String()
}
