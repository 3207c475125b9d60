package analyze

// Stage 1, load: the session's run records, the plan, the histories,
// and the units (scenarios and arms) they belong to. Calls only stage 0.

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

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/fileline"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/session"
	"golang.org/x/sync/errgroup"
)

// maxProblemsPerFile keeps a garbage file from drowning the report.
const maxProblemsPerFile = 20

// loadedRun is one run.json with its history and the checker results on it.
type loadedRun struct {
	run        *session.Run
	rel        string // run file relative to the session dir
	histPath   string
	histRel    string
	meta       history.Meta
	ops        []history.Op
	hasHist    bool
	histWhy    string // why there is no usable history
	histBad    int    // lines the reader rejected
	invalid    []string
	finalState *checker.FinalState
	results    []checker.Result
	checkErr   string
}

// unit is one scenario or arm under analysis.
type unit struct {
	id, parent, name, surface string
	ps                        *plan.Scenario
	arm                       *plan.Arm
	model                     *plan.ModelBlock
	oracle                    string
	serious                   bool
	categories                map[string]bool
	claims                    []string
	hypos                     []plan.Hypothesis // hypotheses the scenario closes
	notRun                    string            // why there is no usable run record
	runs                      []*loadedRun      // primary runs (not re-runs)
	reruns                    []*loadedRun
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
	if r, err := filepath.Rel(a.dir, p); err == nil && filepath.IsLocal(r) {
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

// sortRuns orders runs by seed then file for stable output.
func sortRuns(runs []*loadedRun) {
	sort.Slice(runs, func(i, j int) bool {
		if runs[i].run.Seed != runs[j].run.Seed {
			return runs[i].run.Seed < runs[j].run.Seed
		}
		return runs[i].rel < runs[j].rel
	})
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

func (a *analysis) workers() int {
	if a.opts.Workers > 0 {
		return a.opts.Workers
	}
	return 2
}

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

// loadRunRecords reads every run.json of the session; an unreadable one
// becomes a problem and the reason its artifact dir has no usable record.
func (a *analysis) loadRunRecords() []*loadedRun {
	files, err := session.RunFiles(a.dir)
	if err != nil {
		a.problem(a.dir, 0, "", err.Error())
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
	return runs
}
