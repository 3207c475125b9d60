package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/dstgen/dstgen/deploy"
	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/dstgen/dstgen/nemesis"
	"github.com/dstgen/dstgen/runner"
	"github.com/spf13/cobra"
)

func newHealCmd() *cobra.Command {
	var f runnerFlags
	var all bool
	var host string
	cmd := &cobra.Command{
		Use:   "heal [--all] [--host H]",
		Short: "Remove every fault dstgen may have left on the hosts (undo scripts, the DSTGEN chain, fill files) and say what",
		Long: `Heal runs every undo script under <workdir>/nemesis/active/ and removes
what carries the dstgen tag — the DSTGEN iptables chain and its jumps, fill
files in the SUT data dir — on every host of env.yml (--all, the default)
or one (--host). Nothing without the tag is touched. A SUT member that
died on its own (sut status state=failed: a member that exited on a full
disk) is started again the way deploy starts it; one somebody stopped
stays stopped. Use it after a run was killed (SIGKILL, a crash): a run
heals by itself otherwise.

Prints host=H removed="…" (or restarted="sut (…)") per thing and a summary. Exit 0 when done (also
when nothing was there), 1 when a host could not be healed (named), 2 bad
input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if all && host != "" {
				return errors.New("heal: --all and --host exclude each other")
			}
			return healHosts(cmd.Context(), &f, host, cmd.OutOrStdout())
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "every host of env.yml (the default)")
	cmd.Flags().StringVar(&host, "host", "", "heal this host only")
	return cmd
}

// faultHosts opens env.yml and the pool and prepares the nemesis view of
// every host: what `dstgen heal` and `dstgen nemesis` act on. The caller
// closes the pool.
func faultHosts(f *runnerFlags) (*deploy.Deployer, []nemesis.Host, error) {
	e, pool, err := f.open()
	if err != nil {
		return nil, nil, err
	}
	hs, err := deploy.Prepare(e)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	d := &deploy.Deployer{Env: e, Pool: pool, Hosts: hs, Out: io.Discard}
	return d, d.NemesisHosts(nil), nil
}

// healHosts is `dstgen heal` and `dstgen nemesis heal`.
func healHosts(ctx context.Context, f *runnerFlags, host string, w io.Writer) error {
	d, targets, err := faultHosts(f)
	if err != nil {
		return err
	}
	e, pool := d.Env, d.Pool
	defer pool.Close()
	if host != "" {
		var one []nemesis.Host
		for _, h := range targets {
			if h.Name == host {
				one = append(one, h)
			}
		}
		if len(one) == 0 {
			return fmt.Errorf("%s: --host %q is not a host of env.yml", e.Path, host)
		}
		targets = one
	}
	removed, herr := nemesis.HealAll(ctx, runner.Shell{Pool: pool}, targets)
	for _, r := range removed {
		fmt.Fprintln(w, runner.FormatKV([][2]string{{"host", r.Host}, {"removed", r.What}}))
	}
	// A member the fault brought down (etcd exits on a full disk) is part
	// of the damage: started again the way deploy starts it.
	var only []string
	if host != "" {
		only = []string{host}
	}
	restarted, rerr := d.RestartFailed(ctx, only)
	for _, st := range restarted {
		fmt.Fprintln(w, runner.FormatKV([][2]string{{"host", st.Host}, {"restarted", "sut (" + st.Detail + ")"}}))
		removed = append(removed, nemesis.Removed{Host: st.Host, What: "dead sut"})
	}
	herr = errors.Join(herr, rerr)
	status := "healed"
	if herr != nil {
		status = "failed"
	}
	fmt.Fprintln(w, runner.FormatKV([][2]string{{"heal", status}, {"hosts", strconv.Itoa(len(targets))}, {"removed", strconv.Itoa(len(removed))}}))
	if herr != nil {
		return exitcode.New(exitcode.NotSo, herr)
	}
	return nil
}
