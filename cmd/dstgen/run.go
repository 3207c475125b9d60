package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/deploy"
	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/dstgen/dstgen/orchestrator"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
	"github.com/spf13/cobra"
)

// runFlags are the flags of `dstgen run`.
type runFlags struct {
	runnerFlags
	all           bool
	tier          string
	seed          int64
	detach        bool
	scenariosPath string
	out           string
	rerun         bool
	child         bool // hidden: this process is the detached run
	checkpoint    time.Duration
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run ID|--all",
		Short: "Run one plan scenario (or arm, or --all) end to end into a session directory",
		Long: `Run a unit of scenarios.yml — a scenario ("S1"; every arm of "S4"), one
arm ("S4/api") or --all in plan order — against the hosts of env.yml:
pre-flight (reach, the nemeses' needs, clocks), deploy check (the SUT must
be up: run ` + "`task deploy`" + ` first), metrics samplers, the workload as job
wl-<unit>-<session> on the client host, the fault schedule with injector
and victim evidence per window, heal (always, also on SIGINT/SIGTERM),
quiesce, stop, collect, fault_epoch stamping, run.json (docs/dst-run.md §7).

The session goes to --out as given, else <dir of scenarios.yml>/results/
<plan-slug>/<UTC stamp>/. --rerun repeats the unit's latest run with its
seed and recorded schedule into that session's artifacts/<ID>/rerun-<k>/.
--detach returns at once; follow with ` + "`dstgen run status`" + ` and stop with
` + "`dstgen run stop`" + `.

Exit 0 every attempted unit ran to its end, 1 a unit could not run or was
cut short (missing capability, SUT not deployed, workload failed, heal
error), 2 bad input (unknown id, a TODO, unknown nemesis, malformed file).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, args) },
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&f.all, "all", false, "run every scenario of scenarios.yml in plan order")
	fl.StringVar(&f.tier, "tier", "", "budget tier: smoke|hardening|release (default env.yml dstgen.tier, else smoke)")
	fl.Int64Var(&f.seed, "seed", 0, "seed of the run (default env.yml dstgen.seeds, else 1..tier seeds)")
	fl.BoolVar(&f.detach, "detach", false, "run in the background and return at once (status: dstgen run status)")
	fl.StringVar(&f.scenariosPath, "scenarios", "scenarios.yml", "scenarios.yml to read")
	fl.StringVar(&f.out, "out", "", "session directory to write (used as given)")
	fl.BoolVar(&f.rerun, "rerun", false, "repeat the unit's latest run with the same seed and fault schedule (records re_run_of)")
	fl.BoolVar(&f.child, "detached-child", false, "internal: this process is a detached run")
	_ = fl.MarkHidden("detached-child")
	fl.DurationVar(&f.checkpoint, "checkpoint-every", 10*time.Second, "interval of the checkpoint progress lines")
	_ = fl.MarkHidden("checkpoint-every")
	cmd.AddCommand(newRunStatusCmd(), newRunStopCmd())
	return cmd
}

// resultsRoot is <dir of scenarios.yml>/results.
func resultsRoot(scenariosPath string) string {
	return filepath.Join(filepath.Dir(scenariosPath), "results")
}

// planSlug is the slug of the plan scenarios.yml came from (its "# Test
// plan: <slug>" heading), else the plan file's base name, else
// "scenarios".
func planSlug(sf *scenarios.File) (slug, planPath string) {
	if sf.Plan == "" {
		return "scenarios", ""
	}
	planPath = sf.Plan
	if !filepath.IsAbs(planPath) {
		planPath = filepath.Join(filepath.Dir(sf.Path), planPath)
	}
	if p, err := plan.Parse(planPath); err == nil && p.Slug != "" {
		return p.Slug, planPath
	}
	return strings.TrimSuffix(filepath.Base(planPath), filepath.Ext(planPath)), planPath
}

func (f *runFlags) run(cmd *cobra.Command, args []string) error {
	w := cmd.OutOrStdout()
	switch {
	case f.all && len(args) > 0:
		return errors.New("run: give an ID or --all, not both")
	case !f.all && len(args) != 1:
		return errors.New("run: want exactly one ID (S1, S4/api) or --all")
	}
	sf, err := scenarios.Load(f.scenariosPath)
	if err != nil {
		return err
	}
	var units []scenarios.Unit
	if f.all {
		units = sf.All()
	} else if units, err = sf.Select(args[0]); err != nil {
		return err
	}
	for _, u := range units {
		if todos := sf.TODOsOf(u.ID()); len(todos) > 0 {
			return fmt.Errorf("%s refused: %w", u.ID(), todos[0])
		}
		if strings.TrimSpace(u.Command()) == "" {
			return fmt.Errorf("%s:%d: %s has no workload.command", sf.Path, u.Scenario.Line, u.ID())
		}
	}
	e, pool, err := f.open()
	if err != nil {
		return err
	}
	defer pool.Close()
	tier := f.tier
	if tier == "" {
		tier = e.Dstgen.Tier
	}
	if tier == "" {
		tier = "smoke"
	}
	switch tier {
	case "smoke", "hardening", "release":
	default:
		return fmt.Errorf("--tier %q: want smoke, hardening or release", tier)
	}
	hs, err := deploy.Prepare(e)
	if err != nil {
		return err
	}
	slug, planPath := planSlug(sf)
	root := resultsRoot(sf.Path)

	// A re-run writes into the session that has the unit already.
	var reruns map[string]rerunOf
	dir := f.out
	if f.rerun {
		if f.all {
			return errors.New("run --rerun: give one ID, not --all")
		}
		reruns = map[string]rerunOf{}
		for _, u := range units {
			ro, err := findRerun(root, dir, u.ID())
			if err != nil {
				return err
			}
			reruns[u.ID()] = ro
			dir = ro.session
		}
	}
	if dir == "" {
		dir = orchestrator.SessionDir(root, slug, time.Now())
	}
	if f.detach {
		return f.startDetached(cmd, args, dir, w)
	}
	if f.child {
		done, err := orchestrator.MarkChild(dir)
		if err != nil {
			return err
		}
		code := exitcode.OK
		defer func() { done(code) }()
		err = f.runUnits(cmd.Context(), w, e, pool, hs, sf, units, tier, dir, slug, planPath, reruns)
		var ee *exitcode.Error
		if code = exitcode.Of(err); err != nil && !errors.As(err, &ee) {
			code = exitcode.NotSo
		}
		return err
	}
	return f.runUnits(cmd.Context(), w, e, pool, hs, sf, units, tier, dir, slug, planPath, reruns)
}

// rerunOf is the run a --rerun repeats.
type rerunOf struct {
	session string
	dir     string // artifacts/<ID>/rerun-<k>
	orig    *session.Run
	file    string // the original's run file name
}

// findRerun finds the newest session under root (or in dir when given)
// with a run record of unit, and the next free rerun-<k>/ in it.
func findRerun(root, dir, unit string) (rerunOf, error) {
	var cands []string
	if dir != "" {
		cands = []string{dir}
	} else {
		slugs, _ := os.ReadDir(root)
		for _, s := range slugs {
			if !s.IsDir() {
				continue
			}
			stamps, _ := os.ReadDir(filepath.Join(root, s.Name()))
			for _, st := range stamps {
				if _, err := time.Parse(session.StampLayout, st.Name()); err == nil && st.IsDir() {
					cands = append(cands, filepath.Join(root, s.Name(), st.Name()))
				}
			}
		}
		sort.Slice(cands, func(i, j int) bool { return filepath.Base(cands[i]) > filepath.Base(cands[j]) })
	}
	for _, sd := range cands {
		adir := filepath.Join(sd, session.ArtifactsDir, filepath.FromSlash(unit))
		for _, name := range []string{"run.json"} {
			r, err := session.LoadRun(filepath.Join(adir, name))
			if err != nil || !r.Attempted {
				continue
			}
			k := 1
			for ; k < 1000; k++ {
				if _, err := os.Stat(filepath.Join(adir, fmt.Sprintf("rerun-%d", k))); os.IsNotExist(err) {
					break
				}
			}
			return rerunOf{session: sd, dir: filepath.Join(adir, fmt.Sprintf("rerun-%d", k)), orig: r, file: name}, nil
		}
	}
	return rerunOf{}, fmt.Errorf("run --rerun %s: no attempted run of %s under %s (run it once first)", unit, unit, root)
}

// runUnits runs every unit with every seed into the session dir and
// prints one summary line per run and the next command.
func (f *runFlags) runUnits(ctx context.Context, w io.Writer, e *env.Env, pool *runner.Pool, hs []deploy.Host, sf *scenarios.File,
	units []scenarios.Unit, tier, dir, slug, planPath string, reruns map[string]rerunOf) error {
	sess, err := orchestrator.OpenSession(dir, slug, planPath, w)
	if err != nil {
		return err
	}
	d := &deploy.Deployer{Env: e, Pool: pool, Hosts: hs, Out: io.Discard}
	o := &orchestrator.Orchestrator{Env: e, Deployer: d, Exec: runner.Shell{Pool: pool}, Session: sess,
		Tier: tier, PlanPath: planPath, ID: filepath.Base(dir), Checkpoint: f.checkpoint}
	sess.Logf("session=%s tier=%s units=%d scenarios=%s env=%s", dir, tier, len(units), sf.Path, e.Path)
	worst := exitcode.OK
	var firstErr error
	for _, u := range units {
		ou := orchestrator.Unit{Scenario: u.Scenario, Arm: u.Arm}
		dur, err := u.Scenario.Duration(tier)
		if err != nil {
			return err
		}
		rate := e.Benchmark.Rate
		if u.Scenario.Workload.Rate != nil {
			rate = *u.Scenario.Workload.Rate
		}
		maxFaults := 0
		if t, ok := u.Scenario.Tiers[tier]; ok && t.Faults != nil {
			maxFaults = int(*t.Faults)
		}
		adir := sess.ArtifactDir(ou.ID())
		var attempts []orchestrator.Attempt
		if ro, ok := reruns[u.ID()]; ok {
			attempts = []orchestrator.Attempt{{Seed: ro.orig.Seed, Duration: dur, Rate: rate, MaxFaults: maxFaults, Dir: ro.dir, RunFile: "run.json",
				Schedule: ro.orig.Schedule, ReRunOf: &session.RunRef{File: ro.file, Seed: ro.orig.Seed}}}
			if len(ro.orig.Schedule) == 0 {
				attempts[0].Schedule = []session.ScheduledFault{}
			}
			if ro.orig.Tier != "" {
				o.Tier = ro.orig.Tier
			}
		} else {
			seeds := f.seeds(e.Dstgen.Seeds, u.Scenario.Seeds(tier))
			for _, s := range seeds {
				attempts = append(attempts, orchestrator.Attempt{Seed: s, Duration: dur, Rate: rate, MaxFaults: maxFaults,
					Dir: adir, RunFile: orchestrator.RunFile(s, len(seeds) > 1)})
			}
		}
		for _, a := range attempts {
			var out orchestrator.Outcome
			if ctx.Err() != nil {
				out = o.NotAttempted(ou, a, "not reached: the run was interrupted")
			} else {
				out = o.RunUnit(ctx, ou, a)
			}
			fmt.Fprintln(w, out.Summary(dir))
			if out.Code > worst {
				worst = out.Code
			}
			if out.Err != nil && firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", out.Unit, out.Err)
			}
		}
		o.Tier = tier
	}
	fmt.Fprintf(w, "next: dstgen analyze %s\n", dir)
	if worst != exitcode.OK {
		return exitcode.New(worst, firstErr)
	}
	return nil
}

// seeds are --seed, else env.yml dstgen.seeds, else 1..n for a tier that
// asks for n seeds.
func (f *runFlags) seeds(fromEnv []int64, n int) []int64 {
	if f.seed != 0 {
		return []int64{f.seed}
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

// startDetached re-runs this command as a detached process writing into
// dir and prints its status line.
func (f *runFlags) startDetached(cmd *cobra.Command, args []string, dir string, w io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("run --detach: %w", err)
	}
	argv := []string{exe, "run"}
	argv = append(argv, args...)
	if f.all {
		argv = append(argv, "--all")
	}
	argv = append(argv, "--env", f.envPath, "--scenarios", f.scenariosPath, "--out", dir, "--detached-child")
	if f.tier != "" {
		argv = append(argv, "--tier", f.tier)
	}
	if f.seed != 0 {
		argv = append(argv, "--seed", strconv.FormatInt(f.seed, 10))
	}
	if f.rerun {
		argv = append(argv, "--rerun")
	}
	if f.acceptNew {
		argv = append(argv, "--accept-new-host")
	}
	if f.noHolder {
		argv = append(argv, "--no-holder")
	}
	argv = append(argv, "--checkpoint-every", f.checkpoint.String())
	pid, err := orchestrator.Detach(dir, argv, 2*time.Second)
	if err != nil {
		return exitcode.New(exitcode.NotSo, err)
	}
	fmt.Fprintln(w, runner.FormatKV([][2]string{{"status", runner.StatusStarted}, {"session", dir}, {"pid", strconv.Itoa(pid)}}))
	return nil
}

// sessionFor is --session, else the newest session under the results root.
func sessionFor(dir, scenariosPath string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	d, err := session.Find(resultsRoot(scenariosPath))
	if err != nil {
		return "", fmt.Errorf("no session: %w (give --session DIR)", err)
	}
	return d, nil
}

func newRunStatusCmd() *cobra.Command {
	var dir, scenariosPath string
	cmd := &cobra.Command{
		Use:   "status [--session DIR]",
		Short: "State of a detached run, from its files (exit 1 running, 0 finished, 2 lost)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := sessionFor(dir, scenariosPath)
			if err != nil {
				return err
			}
			s, err := orchestrator.StatusOf(d)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), runner.FormatKV(append(s.Fields(), [2]string{"session", d})))
			switch s.State {
			case orchestrator.StateRunning:
				return exitcode.New(exitcode.NotSo, nil)
			case orchestrator.StateLost:
				return exitcode.New(exitcode.BadInput, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "session", "", "session directory (default: the newest under the results root)")
	cmd.Flags().StringVar(&scenariosPath, "scenarios", "scenarios.yml", "scenarios.yml whose results/ holds the sessions")
	return cmd
}

func newRunStopCmd() *cobra.Command {
	var dir, scenariosPath string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "stop [--session DIR]",
		Short: "SIGTERM a detached run (it heals on the way out) and wait for it, at most 60 s",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := sessionFor(dir, scenariosPath)
			if err != nil {
				return err
			}
			if wait <= 0 || wait > 60*time.Second {
				return fmt.Errorf("--wait %s: want (0, 60s]", wait)
			}
			s, err := orchestrator.StopDetached(cmd.Context(), d, wait)
			if s.PID != 0 {
				fmt.Fprintln(cmd.OutOrStdout(), runner.FormatKV(append(s.Fields(), [2]string{"session", d})))
			}
			if err != nil {
				return exitcode.New(exitcode.NotSo, err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "session", "", "session directory (default: the newest under the results root)")
	cmd.Flags().StringVar(&scenariosPath, "scenarios", "scenarios.yml", "scenarios.yml whose results/ holds the sessions")
	cmd.Flags().DurationVar(&wait, "wait", 60*time.Second, "how long to wait for the run to heal and exit")
	return cmd
}
