package analyze

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/fileline"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/session"
)

// Options tune an analysis.
type Options struct {
	// CheckTimeout bounds each checker run (0: checker.DefaultTimeout); a
	// checker that runs out of time is unknown, never a pass.
	CheckTimeout time.Duration
	// Workers bounds how many checker runs proceed at once (0: 2).
	Workers int
	// HTMLDir receives porcupine visualizations of violations; "" writes none.
	HTMLDir string
	// HTMLMaxBytes caps each visualization (0: the checker's default).
	HTMLMaxBytes int64
}

// maxProblemsPerFile keeps a garbage file from drowning the report.
const maxProblemsPerFile = 20

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

	files, err := session.RunFiles(sessionDir)
	if err != nil {
		a.problem(sessionDir, 0, "", err.Error())
	}
	var runs []*loadedRun
	for _, f := range files {
		r, err := session.LoadRun(f)
		if err != nil {
			a.problemErr(f, err)
			if a.badRuns == nil {
				a.badRuns = map[string]string{}
			}
			a.badRuns[filepath.Dir(f)] = appendText(a.badRuns[filepath.Dir(f)], "run record unreadable: "+err.Error())
			continue
		}
		runs = append(runs, &loadedRun{run: r, rel: a.rel(f)})
	}

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
	a.findings(units)
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

type analysis struct {
	dir  string
	rep  *Report
	opts Options
	mu   sync.Mutex
	per  map[string]int
	// badRuns maps an artifact dir to why its run records did not load.
	badRuns map[string]string
}

// rel names p relative to the session dir when it lies inside it, so
// report links survive moving the session; other paths stay as given.
func (a *analysis) rel(p string) string {
	if r, err := filepath.Rel(a.dir, p); err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(r)
	}
	return p
}

func (a *analysis) problem(file string, line int, scenario, msg string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.per == nil {
		a.per = map[string]int{}
	}
	a.per[file]++
	switch n := a.per[file]; {
	case n == maxProblemsPerFile+1:
		msg, line = "more problems in this file not listed", 0
	case n > maxProblemsPerFile+1:
		return
	}
	a.rep.Problems = append(a.rep.Problems, Problem{File: file, Line: line, Scenario: scenario, Message: msg})
}

// problemErr records err, keeping the file:line that session, plan and
// history errors carry (all three are *fileline.Error).
func (a *analysis) problemErr(file string, err error) {
	if fe, ok := errors.AsType[*fileline.Error](err); ok {
		a.problem(fe.File, fe.Line, "", fe.Reason())
		return
	}
	a.problem(file, 0, "", err.Error())
}

// findPlan reads the plan named by the session log or a run record.
func (a *analysis) findPlan(hdr session.Header, herr error, runs []*loadedRun) *plan.Plan {
	var cands []string
	if herr == nil && hdr.Plan != "" {
		cands = append(cands, hdr.Plan)
	}
	for _, lr := range runs {
		if lr.run.PlanPath != "" {
			cands = append(cands, lr.run.PlanPath)
		}
	}
	for _, c := range uniq(cands) {
		for _, path := range []string{c, filepath.Join(a.dir, c)} {
			if _, err := os.Stat(path); err != nil {
				continue
			}
			p, err := plan.Parse(path)
			if err != nil {
				a.problemErr(path, err)
				if p == nil || len(p.Scenarios) == 0 {
					continue
				}
			}
			return p
		}
	}
	if len(cands) > 0 {
		a.problem(filepath.Join(a.dir, session.SessionLog), 0, "", fmt.Sprintf("plan %q not found; analyzing without a plan (pass --plan)", cands[0]))
	} else {
		a.problem(a.dir, 0, "", "no plan named in session-log.md or run.json; analyzing without a plan (pass --plan)")
	}
	return nil
}

// loadHistories reads each run's history and final state, several runs
// at a time (Options.Workers): sessions with many seeds are I/O and parse
// bound, and each run's state is its own.
func (a *analysis) loadHistories(ctx context.Context, runs []*loadedRun) error {
	eg, gctx := errgroup.WithContext(ctx)
	eg.SetLimit(a.workers())
	for _, lr := range runs {
		eg.Go(func() error {
			if err := gctx.Err(); err != nil {
				return fmt.Errorf("load histories: %w", err)
			}
			a.loadRun(lr)
			return nil
		})
	}
	return eg.Wait()
}

// loadRun reads one run's history and final state; bad input becomes
// Problems.
func (a *analysis) loadRun(lr *loadedRun) {
	r := lr.run
	hp := session.HistoryPath(r)
	lr.histPath, lr.histRel = hp, a.rel(hp)
	if _, err := os.Stat(hp); err != nil {
		lr.histWhy = "no history file " + lr.histRel
		if r.History != "" {
			a.problem(r.Path, r.Line("history"), r.ID(), fmt.Sprintf("history %s: %v", lr.histRel, err))
		}
	} else {
		meta, ops, bad, err := history.ReadFile(hp)
		if err != nil {
			lr.histWhy = fmt.Sprintf("history %s unreadable: %v", lr.histRel, err)
			a.problemErr(hp, err)
		} else {
			lr.meta, lr.ops, lr.hasHist, lr.histBad = meta, ops, true, len(bad)
			for _, b := range bad {
				a.problemErr(hp, b)
			}
			var sched []string
			if len(r.FaultWindows) > 0 || r.Attempted {
				sched = []string{}
				for _, w := range r.FaultWindows {
					sched = append(sched, w.FaultEpoch)
				}
			}
			for _, e := range history.Validate(hp, ops, sched) {
				lr.invalid = append(lr.invalid, e.Error())
				a.problemErr(hp, e)
			}
			if meta.Scenario != "" && meta.Scenario != r.Scenario && meta.Scenario != r.Arm {
				a.problem(hp, 1, r.ID(), fmt.Sprintf("_meta.scenario %q does not match run record scenario %q", meta.Scenario, r.ID()))
			}
		}
	}
	fp := session.FinalPath(r)
	if _, err := os.Stat(fp); err == nil {
		fs, err := checker.LoadFinalState(fp)
		if err != nil {
			a.problemErr(fp, err)
		} else {
			lr.finalState = fs
		}
	} else if r.FinalState != "" {
		a.problem(r.Path, r.Line("final_state"), r.ID(), fmt.Sprintf("final state %s: %v", a.rel(fp), err))
	}
}

// group is a plan scenario: one unit, or a parent with arm units.
type group struct {
	parent *unit
	arms   []*unit
}

// buildUnits matches run records to plan scenarios and arms. Runs for ids
// the plan does not declare are analyzed on their own and reported.
func (a *analysis) buildUnits(p *plan.Plan, runs []*loadedRun) (map[string]*group, []string) {
	groups := map[string]*group{}
	var order []string
	byID := map[string]*unit{}
	if p != nil {
		for i := range p.Scenarios {
			s := &p.Scenarios[i]
			cats := map[string]bool{}
			for _, c := range p.Categories(s) {
				cats[c] = true
			}
			claims := s.Falsifies
			serious := s.M != nil || p.Serious(s)
			var hypos []plan.Hypothesis
			for _, h := range p.Hypotheses {
				if slices.Contains(s.Closes, h.ID) {
					hypos = append(hypos, h)
				}
			}
			u := &unit{id: s.ID, name: s.Name, ps: s, model: s.M, oracle: s.Oracle, serious: serious, categories: cats, claims: claims, hypos: hypos}
			g := &group{parent: u}
			for j := range s.Arms {
				arm := &s.Arms[j]
				m := arm.M
				if m == nil {
					m = s.M
				}
				au := &unit{id: arm.ID, parent: s.ID, name: s.Name, surface: arm.Surface, ps: s, arm: arm, model: m,
					oracle: arm.Oracle, serious: arm.M != nil || serious, categories: cats, claims: claims, hypos: hypos}
				if au.oracle == "" {
					au.oracle = s.Oracle
				}
				g.arms = append(g.arms, au)
				byID[arm.ID] = au
			}
			if len(g.arms) == 0 {
				byID[s.ID] = u
			}
			if _, dup := groups[s.ID]; !dup {
				groups[s.ID] = g
				order = append(order, s.ID)
			}
		}
	}
	for _, lr := range runs {
		r := lr.run
		id := r.ID()
		u := byID[id]
		if u == nil {
			if g := groups[r.Scenario]; g != nil && len(g.arms) > 0 {
				a.problem(r.Path, r.Line("scenario"), id, fmt.Sprintf("scenario %s has arms; a run record must name one (arm field) — ignored", r.Scenario))
				continue
			}
			if p != nil {
				a.problem(r.Path, r.Line("scenario"), id, fmt.Sprintf("%s is not a scenario of plan %s; analyzed on its own record", id, p.Slug))
			}
			u = &unit{id: id, serious: false, categories: map[string]bool{}}
			if r.Arm != "" {
				u.parent = r.Scenario
			}
			byID[id] = u
			groups[id] = &group{parent: u}
			order = append(order, id)
		}
		if r.ReRunOf != nil {
			u.reruns = append(u.reruns, lr)
		} else {
			u.runs = append(u.runs, lr)
		}
	}
	for id, u := range byID {
		sortRuns(u.runs)
		sortRuns(u.reruns)
		if len(u.runs) == 0 && len(u.reruns) > 0 {
			a.problem(u.reruns[0].run.Path, u.reruns[0].run.Line("re_run_of"), id, "re-run record without the run it repeats")
		}
		if len(u.runs) == 0 {
			a.noteMissingRun(u)
		}
	}
	return groups, order
}

// noteMissingRun reports a scenario whose artifact dir has files but no
// run.json: it stays NOT-RUN ("no start record"), and the reviewer learns why.
func (a *analysis) noteMissingRun(u *unit) {
	for _, base := range []string{session.ArtifactsDir, session.BenchmarkDir} {
		dir := filepath.Join(a.dir, base, filepath.FromSlash(u.id))
		if why, bad := a.badRuns[dir]; bad {
			u.notRun = "no usable start record: " + why
			return
		}
		ents, err := os.ReadDir(dir)
		if err != nil || len(ents) == 0 {
			continue
		}
		hasFile := false
		for _, e := range ents {
			hasFile = hasFile || !e.IsDir()
		}
		if !hasFile {
			continue
		}
		a.problem(dir, 0, u.id, "artifact directory has files but no run.json; scenario treated as NOT-RUN (no start record)")
		u.notRun = "no start record: " + a.rel(dir) + "/ has files but no run.json"
		return
	}
}

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
						spec := checker.Spec{Checker: name, Timeout: a.opts.CheckTimeout, HTMLMaxBytes: a.opts.HTMLMaxBytes,
							Fairness: fairnessOf(u), SLO: sloOf(u)}
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
							lr.checkErr = appendText(lr.checkErr, fmt.Sprintf("checker %s: %v", name, err))
							line := fieldLine(u.model, "Checker")
							if strings.Contains(err.Error(), "model") {
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

// planFile names the plan in problems about its §7.M fields.
func (a *analysis) planFile() string {
	if a.rep.PlanPath != "" {
		return a.rep.PlanPath
	}
	return "plan"
}

func fieldLine(m *plan.ModelBlock, label string) int {
	if m == nil {
		return 0
	}
	if l, ok := m.Fields[label]; ok && l > 0 {
		return l
	}
	for k, l := range m.Fields {
		if strings.EqualFold(k, label) {
			return l
		}
	}
	return m.Line
}

func weakestTier(arms []ScenarioResult) Tier {
	rank := map[Tier]int{TierNone: 0, TierUnknown: 1, TierSmoke: 2, TierHardening: 3, TierRelease: 4}
	t := TierRelease
	for _, a := range arms {
		if rank[a.TierMet] < rank[t] {
			t = a.TierMet
		}
	}
	return t
}

func armEvidence(arms []ScenarioResult) (string, string) {
	var o, l []string
	for _, a := range arms {
		o = append(o, a.ID+": "+a.OracleEvidence)
		l = append(l, a.ID+": "+a.LandingEvidence)
	}
	return strings.Join(o, "; "), strings.Join(l, "; ")
}

// mergeFlags gives the aggregate row the worst status of each red flag.
func mergeFlags(arms []ScenarioResult) []Check {
	rank := map[string]int{CheckNA: 0, CheckPass: 1, CheckUnknown: 2, CheckFail: 3}
	var out []Check
	for n := 1; n <= 10; n++ {
		c := Check{N: n, Name: redFlagNames[n], Status: CheckNA, Evidence: "all arms n/a"}
		var worst []string
		for _, a := range arms {
			for _, f := range a.RedFlags {
				if f.N != n {
					continue
				}
				if rank[f.Status] > rank[c.Status] {
					c.Status = f.Status
					worst = nil
				}
				if f.Status == c.Status {
					worst = append(worst, a.ID)
				}
			}
		}
		if len(worst) > 0 {
			c.Evidence = fmt.Sprintf("worst over arms: %s (%s)", c.Status, strings.Join(worst, ", "))
		}
		out = append(out, c)
	}
	return out
}

// tierWarnings lifts the "unparseable tier" warnings of verdicts.md §4.1
// to the report, one per scenario or arm.
func tierWarnings(scen []ScenarioResult) []string {
	var out []string
	for _, s := range scen {
		for _, r := range s.Reasons {
			if r.Step == "gate:tier" && strings.Contains(r.Text, "not parseable") {
				out = append(out, s.ID+": "+strings.TrimPrefix(r.Text, "warning: "))
				break
			}
		}
		out = append(out, tierWarnings(s.Arms)...)
	}
	return out
}

func (a *analysis) workers() int {
	if a.opts.Workers > 0 {
		return a.opts.Workers
	}
	return 2
}
