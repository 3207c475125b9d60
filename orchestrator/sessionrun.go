package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
)

// Options are what `dstgen run` is asked beyond scenarios.yml and
// env.yml.
type Options struct {
	ID    string // a scenario ("S1", every arm of "S4") or an arm ("S4/api"); "" with All
	All   bool   // every unit, in plan order
	Tier  string // "" = env.yml dstgen.tier, else smoke
	Seed  int64  // 0 = env.yml dstgen.seeds, else 1..the tier's seeds
	Rerun bool   // repeat the unit's latest attempted run, same seed and schedule
	Out   string // the session dir as given; "" = <results>/<plan-slug>/<UTC stamp>
	// Session names a session this run adds to (created by its first
	// run): <results>/<plan-slug>/<Session>. A unit run again in it
	// replaces its earlier record there. Not with Out.
	Session string
	// Checkpoint is the interval of the progress lines (0 = 10 s).
	Checkpoint time.Duration
	// HealFirst heals what an earlier run left on the hosts before each
	// unit, instead of refusing to start on faulted hosts.
	HealFirst bool
}

// SessionRun is one `dstgen run` as data: every attempt of every unit —
// seed, run length, rate, fault budget, the schedule a re-run replays —
// and the session directory they go to, all decided from scenarios.yml,
// env.yml and Options before any host is touched (docs/dst-run.md §7).
type SessionRun struct {
	Dir      string // the session directory
	Slug     string // the plan's slug ("scenarios" without a plan)
	PlanPath string
	Tier     string
	units    []plannedUnit

	checkpoint time.Duration
	healFirst  bool
	env        *env.Env
	scenarios  string // scenarios.yml's path, for the log
	reqs       []plan.EnvReq
}

// plannedUnit is one unit and its attempts, in the order they run.
type plannedUnit struct {
	Unit     scenarios.Unit
	Attempts []attempt
}

// Plan builds the session run. A bad id, a TODO the unit needs, a unit
// without a workload command, a bad tier, or a re-run of a unit that never
// ran is an error (bad input); now stamps a new session's dir.
func Plan(sf *scenarios.File, e *env.Env, opt Options, now time.Time) (*SessionRun, error) {
	units, err := selectUnits(sf, opt)
	if err != nil {
		return nil, err
	}
	tier := opt.Tier
	if tier == "" {
		tier = e.Dstgen.Tier
	}
	if tier == "" {
		tier = "smoke"
	}
	switch tier {
	case "smoke", "hardening", "release":
	default:
		return nil, fmt.Errorf("--tier %q: want smoke, hardening or release", tier)
	}
	s := &SessionRun{Tier: tier, env: e, scenarios: sf.Path, checkpoint: opt.Checkpoint, healFirst: opt.HealFirst}
	s.Slug, s.PlanPath, s.reqs = planOf(sf)
	root := filepath.Join(filepath.Dir(sf.Path), "results")
	reruns := map[string]rerunOf{}
	s.Dir = opt.Out
	if opt.Session != "" {
		if opt.Out != "" {
			return nil, errors.New("run: give --session NAME or --out DIR, not both")
		}
		if s.Dir, err = session.NamedDir(root, s.Slug, opt.Session); err != nil {
			return nil, fmt.Errorf("run --session: %w", err)
		}
		// Two runs writing one session at once would interleave its log
		// and race for its records.
		if st, err := StatusOf(s.Dir); err == nil && st.State == StateRunning {
			return nil, fmt.Errorf("run --session %s: a detached run (pid %d) is still writing %s; wait for it (dstgen run status --session %s)", opt.Session, st.PID, s.Dir, s.Dir)
		}
	}
	if opt.Rerun {
		if opt.All {
			return nil, errors.New("run --rerun: give one ID, not --all")
		}
		for _, u := range units {
			ro, err := findRerun(root, s.Dir, u.ID())
			if err != nil {
				return nil, err
			}
			reruns[u.ID()] = ro
			s.Dir = ro.session
		}
	}
	if s.Dir == "" {
		s.Dir = session.NewDir(root, s.Slug, now)
	}
	for _, u := range units {
		pu, err := s.attempts(u, opt.Seed, reruns)
		if err != nil {
			return nil, err
		}
		s.units = append(s.units, pu)
	}
	return s, nil
}

// selectUnits is Options' units of sf, each runnable: no TODO of its own
// left, a workload command.
func selectUnits(sf *scenarios.File, opt Options) ([]scenarios.Unit, error) {
	var units []scenarios.Unit
	switch {
	case opt.All && opt.ID != "":
		return nil, errors.New("run: give an ID or --all, not both")
	case opt.All:
		units = sf.All()
	case opt.ID == "":
		return nil, errors.New("run: want exactly one ID (S1, S4/api) or --all")
	default:
		var err error
		if units, err = sf.Select(opt.ID); err != nil {
			return nil, err
		}
	}
	for _, u := range units {
		if todos := sf.TODOsOf(u.ID()); len(todos) > 0 {
			return nil, fmt.Errorf("%s refused: %w", u.ID(), todos[0])
		}
		if strings.TrimSpace(u.Command()) == "" {
			return nil, fmt.Errorf("%s:%d: %s has no workload.command", sf.Path, u.Scenario.Line, u.ID())
		}
	}
	return units, nil
}

// attempts plans a unit's attempts: the re-run of its latest run, else one
// per seed.
func (s *SessionRun) attempts(u scenarios.Unit, seed int64, reruns map[string]rerunOf) (plannedUnit, error) {
	pu := plannedUnit{Unit: u}
	dur, err := u.Scenario.Duration(s.Tier)
	if err != nil {
		return pu, err
	}
	rate := s.env.Benchmark.Rate
	if u.Scenario.Workload.Rate != nil {
		rate = *u.Scenario.Workload.Rate
	}
	maxFaults := 0
	if t, ok := u.Scenario.Tiers[s.Tier]; ok && t.Faults != nil {
		maxFaults = int(*t.Faults)
	}
	if ro, ok := reruns[u.ID()]; ok {
		a := attempt{Seed: ro.orig.Seed, Duration: dur, Rate: rate, MaxFaults: maxFaults, Dir: ro.dir, RunFile: "run.json",
			Tier: ro.orig.Tier, Schedule: ro.orig.Schedule, ReRunOf: &session.RunRef{File: ro.file, Seed: ro.orig.Seed}}
		if len(ro.orig.Schedule) == 0 {
			a.Schedule = []session.ScheduledFault{}
		}
		pu.Attempts = []attempt{a}
		return pu, nil
	}
	seeds := seedsOf(seed, s.env.Dstgen.Seeds, u.Scenario.Seeds(s.Tier))
	adir := filepath.Join(s.Dir, session.ArtifactsDir, filepath.FromSlash(u.ID()))
	for _, sd := range seeds {
		pu.Attempts = append(pu.Attempts, attempt{Seed: sd, Duration: dur, Rate: rate, MaxFaults: maxFaults,
			Dir: adir, RunFile: session.RunFileName(sd, len(seeds) > 1)})
	}
	return pu, nil
}

// seedsOf is --seed, else env.yml dstgen.seeds, else 1..n for a tier that
// asks for n seeds.
func seedsOf(flag int64, fromEnv []int64, n int) []int64 {
	if flag != 0 {
		return []int64{flag}
	}
	if len(fromEnv) > 0 {
		return fromEnv
	}
	out := make([]int64, 0, max(n, 1))
	for i := 1; i <= max(n, 1); i++ {
		out = append(out, int64(i))
	}
	return out
}

// planOf is the slug of the plan scenarios.yml came from (its "# Test
// plan: <slug>" heading), else the plan file's base name, else
// "scenarios"; its path; and its §6b requirements (none when the plan
// cannot be read: the run checks what the nemeses need only).
func planOf(sf *scenarios.File) (slug, planPath string, reqs []plan.EnvReq) {
	if sf.Plan == "" {
		return "scenarios", "", nil
	}
	planPath = sf.Plan
	if !filepath.IsAbs(planPath) {
		planPath = filepath.Join(filepath.Dir(sf.Path), planPath)
	}
	p, err := plan.Parse(planPath)
	if err == nil && p.Slug != "" {
		return p.Slug, planPath, p.EnvReqs
	}
	var rs []plan.EnvReq
	if err == nil {
		rs = p.EnvReqs
	}
	return strings.TrimSuffix(filepath.Base(planPath), filepath.Ext(planPath)), planPath, rs
}

// rerunOf is the run a --rerun repeats.
type rerunOf struct {
	session string
	dir     string // artifacts/<ID>/rerun-<k>
	orig    *session.Run
	file    string // the original's run file name
}

// findRerun finds the newest session under root (or dir when given) with
// an attempted run record of unit, and the next free rerun-<k>/ in it.
func findRerun(root, dir, unit string) (rerunOf, error) {
	cands := []string{dir}
	if dir == "" {
		cands = session.List(root)
	}
	for _, sd := range cands {
		adir := filepath.Join(sd, session.ArtifactsDir, filepath.FromSlash(unit))
		r, err := session.LoadRun(filepath.Join(adir, "run.json"))
		if err != nil || !r.Attempted {
			continue
		}
		k := 1
		for ; k < 1000; k++ {
			if _, err := os.Stat(filepath.Join(adir, fmt.Sprintf("rerun-%d", k))); os.IsNotExist(err) {
				break
			}
		}
		return rerunOf{session: sd, dir: filepath.Join(adir, fmt.Sprintf("rerun-%d", k)), orig: r, file: "run.json"}, nil
	}
	return rerunOf{}, fmt.Errorf("run --rerun %s: no attempted run of %s under %s (run it once first)", unit, unit, root)
}

// Run runs every attempt in order into the session dir against hosts and
// sut, printing each progress line and one summary line per attempt to
// out, then the next command. An attempt the run never reached (SIGINT,
// SIGTERM) is recorded attempted false. The error is the first attempt's
// reason, carrying the worst code (CodeNotRun, CodeBadInput); nil when
// every attempt ran to its end.
func (s *SessionRun) Run(ctx context.Context, hosts Hosts, sut SUT, out io.Writer) error {
	sess, err := openSession(s.Dir, s.Slug, s.PlanPath, out)
	if err != nil {
		return exitcode.New(codeBadInput, err)
	}
	o := &orchestrator{env: s.env, hosts: hosts, sut: sut, session: sess, tier: s.Tier, planPath: s.PlanPath, reqs: s.reqs,
		id: filepath.Base(s.Dir), b: defaultBounds(), healFirst: s.healFirst}
	if s.checkpoint > 0 {
		o.b.checkpoint = s.checkpoint
	}
	sess.Logf("session=%s tier=%s units=%d scenarios=%s env=%s", s.Dir, s.Tier, len(s.units), s.scenarios, s.env.Path)
	worst := codeOK
	var firstErr error
	for _, pu := range s.units {
		for _, a := range pu.Attempts {
			var oc outcome
			if ctx.Err() != nil {
				oc = o.notAttempted(pu.Unit, a, "not reached: the run was interrupted")
			} else {
				oc = o.RunUnit(ctx, pu.Unit, a)
			}
			fmt.Fprintln(out, oc.Summary(s.Dir))
			worst = max(worst, oc.Code)
			if oc.Err != nil && firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", oc.Unit, oc.Err)
			}
		}
	}
	fmt.Fprintf(out, "next: dstgen analyze %s\n", s.Dir)
	if worst != codeOK {
		return exitcode.New(worst, firstErr)
	}
	return nil
}
