package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/dstgen/dstgen/deploy"
	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/dstgen/dstgen/runner"
	"github.com/spf13/cobra"
)

// deploySteps are the steps of `dstgen deploy`, in the order they run.
var deploySteps = []string{"install", "configure", "driver", "start"}

// deployFlags extends the runner flags with benchmark overrides, which
// reach the rendered templates (.Benchmark) and the driver contract.
type deployFlags struct {
	runnerFlags
	set       []string
	bootstrap string
}

func (f *deployFlags) register(cmd *cobra.Command) {
	f.runnerFlags.register(cmd)
	cmd.Flags().StringArrayVar(&f.set, "set", nil, "override a benchmark value for this call: rate=N, duration=S, mode=M, dataset=D, seed=N (repeatable)")
	cmd.Flags().StringVar(&f.bootstrap, "bootstrap-from", "", "with sut.bootstrap: the member that bootstraps when none runs (refused, with the reason, unless its rank is the highest)")
}

// openDeployer loads env.yml, applies --set, renders every host and opens
// the pool. A template error is bad input and stops before any host is
// touched.
func (f *deployFlags) openDeployer(out io.Writer) (*deploy.Deployer, error) {
	e, pool, err := f.open()
	if err != nil {
		return nil, err
	}
	if err := applySets(&e.Benchmark, f.set); err != nil {
		pool.Close()
		return nil, err
	}
	hs, err := deploy.Prepare(e)
	if err != nil {
		pool.Close()
		return nil, err
	}
	if f.bootstrap != "" {
		if e.SUT.Bootstrap == nil {
			pool.Close()
			return nil, fmt.Errorf("--bootstrap-from %s: %s has no sut.bootstrap (its members start side by side)", f.bootstrap, e.Path)
		}
		if !slices.ContainsFunc(deploy.SUTHosts(hs), func(h deploy.Host) bool { return h.Name == f.bootstrap }) {
			pool.Close()
			return nil, fmt.Errorf("--bootstrap-from %q is not a SUT host of %s", f.bootstrap, e.Path)
		}
	}
	return &deploy.Deployer{Env: e, Pool: pool, Hosts: hs, Out: out, BootstrapFrom: f.bootstrap}, nil
}

// applySets applies --set key=value overrides to the benchmark section.
func applySets(b *env.Benchmark, sets []string) error {
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return fmt.Errorf("--set %q: want key=value", s)
		}
		var err error
		switch k {
		case "rate":
			b.Rate, err = strconv.ParseFloat(v, 64)
			if err == nil && b.Rate < 0 {
				err = errors.New("must not be negative")
			}
		case "duration":
			b.Duration, err = strconv.Atoi(v)
			if err == nil && b.Duration <= 0 {
				err = errors.New("must be a positive number of seconds")
			}
		case "mode":
			b.Mode = v
		case "dataset":
			b.Dataset = v
		case "seed":
			b.Seed, err = strconv.ParseInt(v, 10, 64)
		default:
			return fmt.Errorf("--set %q: unknown key %q (rate, duration, mode, dataset, seed)", s, k)
		}
		if err != nil {
			return fmt.Errorf("--set %s: %v", s, err)
		}
	}
	return nil
}

func newDeployCmd() *cobra.Command {
	var f deployFlags
	cmd := &cobra.Command{
		Use:   "deploy [STEP...]",
		Short: "Install, configure and start the SUT on the hosts of its roles; upload the workload driver",
		Long: `Bring the system under test up from the sut: section of env.yml.

Steps (default: all, in this order):
  install    install sut.install.package where sut.install.binary is missing,
             or upload sut.install.artifact; verify the binary and its version
  configure  render every sut.configs template per host (each host's own
             name, address, work dir, vars and the hosts of every role) and
             install it; create the data dir
  driver     build benchmark.driver (a Go main package) for each client
             host's OS/arch and upload it to <workdir>/bin
  start      start sut.command (transient systemd unit where the host boots
             with systemd, a dstgen job elsewhere; sut.run forces one) and
             wait until every health command answers

Only hosts with a role of sut.roles get the SUT; nothing is written on the
control node. Output: key=value lines per host. Exit 0 done, 1 a step
failed on some host (each named), 2 bad input (env.yml, a template error
with its file:line).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			steps := args
			if len(steps) == 0 {
				steps = deploySteps
			}
			for _, s := range steps {
				if !slices.Contains(deploySteps, s) {
					return fmt.Errorf("deploy: unknown step %q (want %s)", s, strings.Join(deploySteps, ", "))
				}
			}
			d, err := f.openDeployer(cmd.OutOrStdout())
			if err != nil {
				return err
			}
			defer d.Pool.Close()
			ctx := cmd.Context()
			for _, s := range deploySteps {
				if !slices.Contains(steps, s) {
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "==> deploy %s\n", s)
				if err := runStep(ctx, d, s); err != nil {
					return exitcode.New(exitcode.NotSo, fmt.Errorf("deploy %s: %w", s, err))
				}
			}
			fmt.Fprintln(cmd.OutOrStdout(), "deploy=done steps="+strings.Join(steps, ","))
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

func runStep(ctx context.Context, d *deploy.Deployer, step string) error {
	switch step {
	case "install":
		return d.Install(ctx)
	case "configure":
		return d.Configure(ctx)
	case "driver":
		return d.UploadDriver(ctx, deploy.DriverHosts(d.Hosts, benchHost(d.Env)))
	case "start":
		return d.Start(ctx)
	}
	return fmt.Errorf("unknown step %q", step)
}

// benchHost is parameters.bench_host, or the first client host.
func benchHost(e *env.Env) string {
	if s, ok := e.Parameters["bench_host"].(string); ok && s != "" {
		return s
	}
	if hs := e.HostsWithRole("client"); len(hs) > 0 {
		return hs[0].Name
	}
	return ""
}

func newSUTCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sut start|stop|restart|status|health|check|clean-data|rotate-data",
		Short: "Run and inspect the SUT on the hosts of its roles (systemd or a supervised dstgen job)",
	}
	type verb struct {
		name, short string
		run         func(context.Context, *deploy.Deployer, io.Writer) error
	}
	verbs := []verb{
		{"start", "Start the SUT where it is not running and wait until healthy", func(ctx context.Context, d *deploy.Deployer, _ io.Writer) error { return d.Start(ctx) }},
		{"stop", "Stop the SUT; exit 1 if it could not be stopped", func(ctx context.Context, d *deploy.Deployer, _ io.Writer) error { return d.Stop(ctx) }},
		{"restart", "Stop, then start and wait until healthy", func(ctx context.Context, d *deploy.Deployer, _ io.Writer) error {
			if err := d.Stop(ctx); err != nil {
				return err
			}
			return d.Start(ctx)
		}},
		{"status", "Supervisor state per SUT host; exit 1 unless running everywhere", sutStatus},
		{"health", "Run every host's health commands once; exit 1 if any fails", func(ctx context.Context, d *deploy.Deployer, w io.Writer) error {
			res := d.Health(ctx)
			var bad []string
			for _, r := range res {
				fmt.Fprintln(w, runner.FormatKV([][2]string{{"host", r.Host}, {"role", r.Role}, {"health", okWord(r.OK)}, {"output", r.Output}}))
				if !r.OK {
					bad = append(bad, r.Host)
				}
			}
			if len(res) == 0 {
				fmt.Fprintln(w, "health=none reason='no sut.health command for any role in env.yml'")
			}
			if len(bad) > 0 {
				return fmt.Errorf("unhealthy: %s", strings.Join(bad, ", "))
			}
			return nil
		}},
		{"check", "Binaries, supervisor and health on every host; exit 1 when a critical check fails", sutCheck},
		{"clean-data", "Wipe the SUT's data dir (sut.data_dir) on every SUT host; the SUT must be stopped", func(ctx context.Context, d *deploy.Deployer, _ io.Writer) error { return d.CleanData(ctx) }},
	}
	var stamp string
	verbs = append(verbs, verb{"rotate-data", "Rename the SUT's data dir to <data_dir>.bak.<stamp> and create a fresh one; the SUT must be stopped",
		func(ctx context.Context, d *deploy.Deployer, _ io.Writer) error { return d.RotateData(ctx, stamp) }})
	for _, v := range verbs {
		var f deployFlags
		c := &cobra.Command{
			Use:   v.name,
			Short: v.short,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				d, err := f.openDeployer(cmd.OutOrStdout())
				if err != nil {
					return err
				}
				defer d.Pool.Close()
				if err := v.run(cmd.Context(), d, cmd.OutOrStdout()); err != nil {
					return exitcode.New(exitcode.NotSo, fmt.Errorf("sut %s: %w", v.name, err))
				}
				return nil
			},
		}
		f.register(c)
		if v.name == "rotate-data" {
			c.Flags().StringVar(&stamp, "stamp", "", "suffix of the kept copy (the Taskfile passes RUN_ID)")
		}
		cmd.AddCommand(c)
	}
	return cmd
}

func okWord(ok bool) string {
	if ok {
		return "ok"
	}
	return "fail"
}

func sutStatus(ctx context.Context, d *deploy.Deployer, w io.Writer) error {
	st, err := d.Status(ctx)
	var down []string
	for _, s := range st {
		if s.Host == "" {
			continue
		}
		fmt.Fprintln(w, runner.FormatKV([][2]string{{"host", s.Host}, {"mode", s.Mode}, {"state", s.State}, {"pid", pidString(s.PID)}, {"detail", s.Detail}}))
		if s.State != "running" {
			down = append(down, s.Host)
		}
	}
	if err != nil {
		return err
	}
	if len(down) > 0 {
		return fmt.Errorf("not running on %s", strings.Join(down, ", "))
	}
	return nil
}

// seedParam records a seed of 0 as what it means: the driver derives one
// from the run id (and writes it into the history's header).
func seedParam(seed int64) string {
	if seed == 0 {
		return "from-run-id"
	}
	return strconv.FormatInt(seed, 10)
}

func pidString(p int) string {
	if p <= 0 {
		return ""
	}
	return strconv.Itoa(p)
}

// sutCheck is `task check`: it says "All critical checks passed" only when
// the SUT is installed, running and answering on every host that runs it.
func sutCheck(ctx context.Context, d *deploy.Deployer, w io.Writer) error {
	failed := 0
	line := func(ok bool, msg string) {
		tag := "OK"
		if !ok {
			tag = "FAIL"
			failed++
		}
		fmt.Fprintf(w, "[%s] %s\n", tag, msg)
	}
	for _, h := range deploy.SUTHosts(d.Hosts) {
		bin, ok, err := d.BinaryPresent(ctx, h)
		switch {
		case err != nil:
			line(false, fmt.Sprintf("%s: unreachable: %v", h.Name, err))
		case bin != "":
			line(ok, fmt.Sprintf("%s: binary %s", h.Name, bin))
		}
	}
	st, err := d.Status(ctx)
	if err != nil {
		line(false, "supervisor status: "+err.Error())
	}
	for _, s := range st {
		if s.Host == "" {
			continue
		}
		line(s.State == "running", fmt.Sprintf("%s: SUT %s (%s, pid %s)", s.Host, s.State, s.Mode, pidString(s.PID)))
	}
	res := d.Health(ctx)
	for _, r := range res {
		line(r.OK, fmt.Sprintf("%s: health of role %s: %s", r.Host, r.Role, r.Output))
	}
	if len(res) == 0 {
		fmt.Fprintln(w, "[--] no sut.health command in env.yml: only the supervisor state is checked")
	}
	if failed > 0 {
		return fmt.Errorf("%d critical check(s) failed", failed)
	}
	fmt.Fprintln(w, "All critical checks passed")
	return nil
}
