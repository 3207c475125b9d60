package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/runner"
	"github.com/spf13/cobra"
)

func newProbeCmd() *cobra.Command {
	var f runnerFlags
	var planPath string
	cmd := &cobra.Command{
		Use:   "probe [TARGET] [--plan FILE]",
		Short: "Capability matrix per host, mapped to the plan's §6b requirements",
		Long: `Probe every host of TARGET (default all) in one round trip each (plus
three tiny ones for clock offset and RTT) and print its capability matrix:
root/sudo, iptables (a rule really added to a private chain and removed),
tc and whether a netem qdisc really works (tried on lo in a throwaway
network namespace, never on a real interface), ip netns, faketime,
systemd, stress-ng, docker/podman, go, dmsetup, cgroup IO, free disk in
the workdir, kernel, arch, clock offset against this machine, SSH RTT.

With --plan, each §6b requirement is mapped to a capability on every host:
present=yes|no|unknown|by-sut, with the install hint and the scenarios a
missing one makes INCONCLUSIVE-env. Rows "brought up by SUT" are not
operator installs; requirements no probe covers are unknown (confirm by
hand) and do not fail the probe.

Output: key=value lines (a host= line with facts, then one line per
capability, then one per requirement), or --json.

Exit: 0 every required capability present; 1 some required capability
missing; 2 a host unreachable or bad input (plan errors as file:line).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var p *plan.Plan
			if planPath != "" {
				var err error
				if p, err = plan.Parse(planPath); err != nil {
					return badInput(fmt.Errorf("probe: %w", err))
				}
			}
			e, pool, err := f.open()
			if err != nil {
				return badInput(fmt.Errorf("probe: %w", err))
			}
			defer pool.Close()
			target := "all"
			if len(args) == 1 {
				target = args[0]
			}
			hosts, err := e.Select(target)
			if err != nil {
				return badInput(fmt.Errorf("probe: %s: %w", e.Path, err))
			}
			caps := runner.Probe(cmd.Context(), pool, hosts)
			var rows []runner.ReqRow
			if p != nil {
				rows = runner.MapRequirements(p.EnvReqs, caps)
			}
			code := exitOK
			for _, r := range rows {
				if r.Present == runner.ReqMissing {
					code = exitNotSo
				}
			}
			for _, h := range caps {
				if !h.Reachable || h.Err != "" {
					code = exitBadInput
					fmt.Fprintf(cmd.ErrOrStderr(), "dstgen: probe: %s\n", h.Err)
				}
			}
			if f.json {
				if rows == nil {
					rows = []runner.ReqRow{}
				}
				if err := json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{"hosts": caps, "requirements": rows}); err != nil {
					return err
				}
			} else {
				printProbe(cmd.OutOrStdout(), caps, rows)
			}
			if code == exitOK {
				return nil
			}
			return withCode(code, nil)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&planPath, "plan", "", "plan markdown whose §6b requirements to check")
	return cmd
}

func printProbe(w io.Writer, caps []runner.HostCaps, rows []runner.ReqRow) {
	yn := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	for _, h := range caps {
		fmt.Fprintln(w, runner.FormatKV([][2]string{{"host", h.Host}, {"reachable", yn(h.Reachable)},
			{"kernel", h.Kernel}, {"arch", h.Arch}, {"os", h.OS}, {"uid", strconv.Itoa(h.UID)},
			{"disk_free_mb", strconv.FormatInt(h.DiskFreeKB/1024, 10)}, {"disk_path", h.DiskPath},
			{"clock_offset_ms", strconv.FormatFloat(float64(h.ClockOffset.Microseconds())/1000, 'f', 1, 64)},
			{"rtt_ms", strconv.FormatFloat(float64(h.RTT.Microseconds())/1000, 'f', 1, 64)}, {"error", h.Err}}))
		for _, c := range h.Caps {
			fmt.Fprintln(w, runner.FormatKV([][2]string{{"host", h.Host}, {"requirement", c.Name}, {"present", yn(c.Present)},
				{"version", c.Version}, {"source", c.Source}, {"message", c.Message}}))
		}
	}
	for _, r := range rows {
		fmt.Fprintln(w, runner.FormatKV(r.Fields()))
	}
}
