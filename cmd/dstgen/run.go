package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/dstgen/dstgen/deploy"
	"github.com/dstgen/dstgen/generator"
	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/dstgen/dstgen/orchestrator"
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
	session       string // --session NAME
	allowDrift    bool   // --allow-fault-drift
	rerun         bool
	healFirst     bool
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
<plan-slug>/<UTC stamp>/. --session NAME adds to the named session
results/<plan-slug>/NAME/ instead (its first run creates it; a unit run
again there replaces its earlier record), so runs of one scenario at a
time are judged as one session by ` + "`dstgen analyze`" + `. --rerun repeats the unit's latest run with its
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
	fl.BoolVar(&f.allowDrift, "allow-fault-drift", false, "run a scenario whose faults in --scenarios are not the plan's (a warning says so) instead of refusing it")
	fl.StringVar(&f.session, "session", "", "add to the named session results/<plan-slug>/NAME (created by its first run), so one scenario at a time still makes one session")
	fl.BoolVar(&f.healFirst, "heal-first", false, "heal what an earlier run left on the hosts before starting (default: refuse to start on faulted hosts)")
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

func (f *runFlags) run(cmd *cobra.Command, args []string) error {
	w := cmd.OutOrStdout()
	opt := orchestrator.Options{All: f.all, Tier: f.tier, Seed: f.seed, Rerun: f.rerun, Out: f.out, Session: f.session, Checkpoint: f.checkpoint, HealFirst: f.healFirst}
	if len(args) > 1 {
		return errors.New("run: want exactly one ID (S1, S4/api) or --all")
	}
	if len(args) == 1 {
		opt.ID = args[0]
	}
	sf, err := scenarios.Load(f.scenariosPath)
	if err != nil {
		return err
	}
	if err := generator.FaultDrift(sf, opt.ID, opt.All); err != nil {
		if !f.allowDrift {
			return fmt.Errorf("%w (--allow-fault-drift runs it all the same)", err)
		}
		// Accepted on request, never silently: the line says what the
		// run's scenario name no longer means.
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v (accepted: --allow-fault-drift)\n", err)
	}
	e, pool, err := f.open()
	if err != nil {
		return err
	}
	defer pool.Close()
	hs, err := deploy.Prepare(e)
	if err != nil {
		return err
	}
	sr, err := orchestrator.Plan(sf, e, opt, time.Now())
	if err != nil {
		return err
	}
	if f.detach {
		return f.startDetached(cmd, args, sr.Dir, w)
	}
	d := &deploy.Deployer{Env: e, Pool: pool, Hosts: hs, Out: io.Discard}
	run := func() error { return sr.Run(cmd.Context(), orchestrator.NewHosts(pool), orchestrator.NewSUT(d), w) }
	if !f.child {
		return run()
	}
	done, err := orchestrator.MarkChild(sr.Dir)
	if err != nil {
		return err
	}
	err = run()
	var ee *exitcode.Error
	code := exitcode.Of(err)
	if err != nil && !errors.As(err, &ee) {
		code = exitcode.NotSo
	}
	done(code)
	return err
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
	if f.healFirst {
		argv = append(argv, "--heal-first")
	}
	if f.allowDrift {
		argv = append(argv, "--allow-fault-drift")
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
