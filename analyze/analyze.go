package analyze

// The driver: Analyze runs the stages in order — load (load.go,
// checkers.go), facts (facts*.go), audits (redflags.go, weakoracle.go),
// decide (decide.go), findings (findings.go, plansections.go) — and hands
// the Report to the writers (report.go, html.go, json.go, junit.go). Each
// stage calls only the stages before it; only this file calls them all.

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/session"
)

// Analyze judges one session directory. p may be nil: the plan path is
// then taken from session-log.md or a run record, and without a plan every
// run is judged on its own record. Bad input becomes Report.Problems and
// the analysis goes on; the error is only for a session that cannot be
// analyzed at all (the caller then reports BLOCKED).
func Analyze(ctx context.Context, sessionDir string, p *plan.Plan, opts Options) (*Report, error) {
	st, err := os.Stat(sessionDir)
	if err != nil {
		return nil, fmt.Errorf("analyze %s: %w", sessionDir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("analyze %s: not a directory", sessionDir)
	}
	rep := &Report{Schema: ReportSchema, SessionDir: sessionDir, GeneratedAt: time.Now().UTC(), Counts: map[Verdict]int{}}
	a := &analysis{dir: sessionDir, rep: rep, opts: opts}

	hdr, herr := session.ReadHeader(sessionDir)
	rep.Commit = hdr.Commit
	if prev, err := session.Previous(sessionDir); err == nil {
		rep.PreviousDir = prev
	}

	runs := a.loadRunRecords()

	if p == nil {
		p = a.findPlan(hdr, herr, runs)
	}
	if p == nil && len(runs) == 0 {
		return rep, fmt.Errorf("analyze %s: no plan and no readable run record (run.json) — nothing to analyze", sessionDir)
	}
	if p != nil {
		rep.PlanSlug, rep.PlanPath = p.Slug, p.Path
	} else if hdr.Title != "" {
		rep.PlanSlug = strings.TrimSpace(strings.TrimPrefix(strings.SplitN(hdr.Title, "@", 2)[0], "Session log:"))
	}

	if err := a.loadHistories(ctx, runs); err != nil {
		return rep, err
	}
	units, order := a.buildUnits(p, runs)
	if err := a.runCheckers(ctx, units); err != nil {
		return rep, err
	}

	var reqs []plan.EnvReq
	if p != nil {
		reqs = p.EnvReqs
	}
	for _, id := range order {
		g := units[id]
		var res ScenarioResult
		if len(g.arms) > 0 {
			res = ScenarioResult{ID: g.parent.id, Name: g.parent.name, Oracle: g.parent.oracle, Serious: g.parent.serious, Claims: g.parent.claims}
			if g.parent.ps != nil {
				res.Hypotheses = g.parent.ps.Closes
			}
			for _, au := range g.arms {
				res.Arms = append(res.Arms, evaluate(au, reqs))
			}
			v, why := aggregateArms(res.Arms)
			res.Verdict, res.TreeVerdict = v, v
			res.TierMet = weakestTier(res.Arms)
			res.Reasons = []Reason{{Step: "arms", To: v, Text: why}}
			res.OracleEvidence, res.LandingEvidence = armEvidence(res.Arms)
			res.RedFlags = mergeFlags(res.Arms)
		} else {
			res = evaluate(g.parent, reqs)
		}
		rep.Scenarios = append(rep.Scenarios, res)
	}
	rep.Warnings = append(rep.Warnings, tierWarnings(rep.Scenarios)...)
	a.findings(ctx, units)
	var vs []Verdict
	for _, s := range rep.Scenarios {
		vs = append(vs, s.Verdict)
		rep.Counts[s.Verdict]++
	}
	rep.SessionVerdict = sessionVerdict(vs)
	rep.Headline = headline(rep.SessionVerdict, rep.Scenarios)
	if p != nil {
		planSections(rep, p)
	}
	sort.SliceStable(rep.Problems, func(i, j int) bool {
		if rep.Problems[i].File != rep.Problems[j].File {
			return rep.Problems[i].File < rep.Problems[j].File
		}
		return rep.Problems[i].Line < rep.Problems[j].Line
	})
	return rep, nil
}

// evaluate produces the verdict and evidence for one unit.
func evaluate(u *unit, reqs []plan.EnvReq) ScenarioResult {
	f := gatherFacts(u, reqs)
	tv, _ := decideTree(f)
	claimed := TierSmoke
	if tv == PassHardening && (f.tier == TierHardening || f.tier == TierRelease) {
		claimed = f.tier
	}
	in := &auditInput{u: u, f: f, claimed: claimed, runs: attemptedRuns(u.runs)}
	// Red flag 10 compares the runs' verdicts, each judged alone, only
	// for a statistical claim; the driver decides them so the audit never
	// calls the decide stage.
	if stat, _ := statistical(u, claimed); stat {
		for _, lr := range in.runs {
			v, _ := decideTree(runFacts(u, lr))
			in.runVerdicts = append(in.runVerdicts, v)
		}
	}
	f.redFlags = redFlags(in)
	in.flags = f.redFlags
	f.weak = weakAudit(in)
	tree, final, release, reasons := decide(f)
	res := ScenarioResult{
		ID: u.id, Parent: u.parent, Name: u.name, Surface: u.surface, Serious: u.serious,
		Verdict: final, TreeVerdict: tree, TierMet: f.tier, Release: release, Reasons: reasons,
		Oracle: u.oracle, RedFlags: f.redFlags, WeakOracle: f.weak, Claims: u.claims,
		reRun: f.reruns > 0,
	}
	if f.tierWarn != "" && !tree.IsPass() {
		res.Reasons = append(res.Reasons, Reason{Step: "gate:tier", To: final, Text: "warning: " + f.tierWarn})
	}
	if u.ps != nil {
		res.Hypotheses = u.ps.Closes
	}
	res.OracleEvidence, res.LandingEvidence = evidenceTexts(u)
	for _, lr := range append(append([]*loadedRun(nil), u.runs...), u.reruns...) {
		v, _ := violated(lr)
		ref := RunRef{File: lr.rel, Seed: lr.run.Seed, Violated: v}
		if lr.run.ReRunOf != nil {
			ref.ReRunOf = fmt.Sprintf("seed %d", lr.run.ReRunOf.Seed)
			if lr.run.ReRunOf.File != "" {
				ref.ReRunOf = lr.run.ReRunOf.File + " " + ref.ReRunOf
			}
		}
		res.Runs = append(res.Runs, ref)
		res.Artifacts = append(res.Artifacts, lr.rel)
		if lr.hasHist {
			res.Artifacts = append(res.Artifacts, lr.histRel)
		}
		for _, cr := range lr.results {
			res.Checkers = append(res.Checkers, cr)
			if cr.HTML != "" {
				res.Artifacts = append(res.Artifacts, cr.HTML)
			}
		}
	}
	res.Artifacts = uniq(res.Artifacts)
	res.Seeds = distinctSeeds(attemptedRuns(u.runs))
	if final == FailNondeterministic && f.reruns == 0 {
		var seeds []string
		for _, lr := range attemptedRuns(u.runs) {
			if v, _ := violated(lr); v {
				seeds = append(seeds, fmt.Sprint(lr.run.Seed))
			}
		}
		res.Actions = append(res.Actions, fmt.Sprintf("re-run %s with seed %s and the same config and fault sequence to split reproducible from nondeterministic", u.id, strings.Join(seeds, ", ")))
	}
	if final == InconclusiveEnv {
		res.Actions = append(res.Actions, "install or provide the missing capability, then re-run "+u.id)
	}
	res.Metrics = metricsFor(u)
	return res
}
