package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/dstgen/dstgen/nemesis"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
	"github.com/spf13/cobra"
)

func newNemesisCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "nemesis list|inject|heal",
		Short: "The fault catalog by hand: list it, inject one window, heal",
	}
	cmd.AddCommand(newNemesisListCmd(), newNemesisInjectCmd(), newNemesisHealCmd())
	return cmd
}

func newNemesisListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "Every row of docs/nemesis.md: id, group, built in or why not, needs, params",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return listNemeses(cmd.OutOrStdout(), asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// listNemeses prints the catalog, one key=value line per row.
func listNemeses(w io.Writer, asJSON bool) error {
	cat := nemesis.Catalog()
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(cat)
	}
	for _, n := range cat {
		built := "yes"
		if !n.BuiltIn {
			built = "no"
		}
		kv := [][2]string{{"id", n.ID}, {"group", n.Group}, {"built_in", built},
			{"needs", strings.Join(n.Needs, ",")}, {"params", strings.Join(n.Params, "; ")}}
		if !n.BuiltIn {
			kv = append(kv, [2]string{"reason", n.Reason})
		}
		fmt.Fprintln(w, runner.FormatKV(kv))
	}
	return nil
}

func newNemesisInjectCmd() *cobra.Command {
	var f runnerFlags
	var target, leaderQuery string
	var dur time.Duration
	var params []string
	cmd := &cobra.Command{
		Use:   "inject NEMESIS --target EXPR [--for D] [--param k=v]",
		Short: "Inject one fault by hand and print its injector evidence; it stays until `dstgen heal`",
		Long: `Inject one fault of the catalog on the SUT hosts EXPR names (a host,
role:R, leader (with --leader-query), random, one, minority, majority, all,
a comma list), print its target check and injector evidence, and leave it
active with its undo script in <workdir>/nemesis/active/ — heal it with
` + "`dstgen heal --all`" + ` (or ` + "`dstgen nemesis heal`" + `). --for is recorded as the
planned length; nothing heals it by itself.

Exit 0 injected, 1 the injection failed on a host, 2 bad input.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if target == "" {
				return errors.New("nemesis inject: --target is required")
			}
			pm := map[string]string{}
			for _, p := range params {
				k, v, ok := strings.Cut(p, "=")
				if !ok || k == "" {
					return fmt.Errorf("nemesis inject: --param %q: want k=v", p)
				}
				pm[k] = v
			}
			n, missing, err := nemesis.ForFault(scenarios.Fault{Nemesis: args[0]})
			if err != nil {
				return err
			}
			if missing != nil {
				return errors.New(missing.Reason)
			}
			return injectByHand(cmd.Context(), &f, n, args[0], target, leaderQuery, dur, pm, cmd.OutOrStdout())
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&target, "target", "", "target expression")
	cmd.Flags().StringVar(&leaderQuery, "leader-query", "", "shell command printing the leader (for --target leader)")
	cmd.Flags().DurationVar(&dur, "for", 0, "planned length of the fault (recorded; heal by hand)")
	cmd.Flags().StringArrayVar(&params, "param", nil, "nemesis parameter k=v (repeatable; dstgen nemesis list shows them)")
	return cmd
}

func injectByHand(ctx context.Context, f *runnerFlags, n nemesis.Nemesis, id, target, leaderQuery string, dur time.Duration, params map[string]string, w io.Writer) error {
	d, all, err := faultHosts(f)
	if err != nil {
		return err
	}
	e, pool := d.Env, d.Pool
	defer pool.Close()
	x := runner.Shell{Pool: pool}
	cluster := nemesis.SUTOnly(all)
	if len(cluster) == 0 {
		cluster = all
	}
	leader := func(ctx context.Context) (string, error) {
		if leaderQuery == "" {
			return "", errors.New("target leader needs --leader-query")
		}
		for _, h := range cluster {
			out, err := x.Run(ctx, h.Host, leaderQuery)
			if err != nil {
				continue
			}
			if m, ok := nemesis.MatchHost(out, cluster); ok {
				return m.Name, nil
			}
		}
		return "", errors.New("the leader query named no SUT host")
	}
	pick := time.Now().UnixNano()
	targets, err := nemesis.Resolve(ctx, target, cluster, pick, leader)
	if err != nil {
		return fmt.Errorf("nemesis inject: --target %q: %w", target, err)
	}
	epoch := "manual-" + time.Now().UTC().Format(session.StampLayout)
	var names []string
	for _, t := range targets {
		names = append(names, t.Name)
	}
	act, err := n.Inject(ctx, x, nemesis.Fault{Epoch: epoch, Nemesis: id, Targets: targets, Cluster: cluster,
		Params: params, Pick: pick, For: dur})
	if err != nil {
		return exitcode.New(exitcode.NotSo, fmt.Errorf("nemesis inject %s on %s: %w (run `dstgen heal --all` to remove any part of it)", id, strings.Join(names, ","), err))
	}
	fmt.Fprintln(w, runner.FormatKV([][2]string{{"injected", id}, {"epoch", epoch}, {"targets", strings.Join(names, ",")}}))
	if tc, err := act.TargetCheck(ctx); err != nil {
		fmt.Fprintln(w, runner.FormatKV([][2]string{{"target_check", "error"}, {"error", err.Error()}}))
	} else if tc != nil {
		fmt.Fprintln(w, "target_check "+evidenceKV(*tc))
	}
	if ev, err := act.Evidence(ctx); err != nil {
		fmt.Fprintln(w, runner.FormatKV([][2]string{{"evidence", "error"}, {"error", err.Error()}}))
	} else {
		fmt.Fprintln(w, "evidence "+evidenceKV(ev))
	}
	fmt.Fprintf(w, "active: heal with `dstgen heal --all --env %s`\n", e.Path)
	return nil
}

// evidenceKV is one evidence as key=value pairs.
func evidenceKV(ev session.Evidence) string {
	return runner.FormatKV([][2]string{{"kind", ev.Kind}, {"name", ev.Name}, {"before", string(ev.Before)},
		{"after", string(ev.After)}, {"verdict", ev.Verdict}})
}

func newNemesisHealCmd() *cobra.Command {
	var f runnerFlags
	cmd := &cobra.Command{
		Use:   "heal",
		Short: "Same as `dstgen heal --all`",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return healHosts(cmd.Context(), &f, "", cmd.OutOrStdout())
		},
	}
	f.register(cmd)
	return cmd
}
