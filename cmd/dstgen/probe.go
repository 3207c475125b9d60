package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/capability"
	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/atomicfile"
	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/runner"
	"github.com/spf13/cobra"
)

// exitProbeUnreachable is probe's exit code when a host did not answer.
const exitProbeUnreachable = 3

func newProbeCmd() *cobra.Command {
	var f runnerFlags
	var planPath string
	var reach, verbose, strict bool
	var matrixDir string
	cmd := &cobra.Command{
		Use:   "probe [TARGET] [--plan FILE] [--reach]",
		Short: "Capability matrix per host, mapped to the plan's §6b requirements",
		Long: `Probe every host of TARGET (default all) and print its capability matrix:
root/sudo, iptables (a rule really added to a private chain and removed),
tc and whether a netem qdisc really works (tried on lo in a throwaway
network namespace, never on a real interface), ip netns, faketime,
systemd, stress-ng, docker/podman, go, dmsetup, cgroup IO, free disk in
the workdir, kernel, goos/goarch, container, boot_id, shared_kernel (the
host runs on this machine's kernel), and the clock offset against this
machine: measured on one open session over 8 round trips, the fastest
kept, printed as clock_offset_ms=OFFSET±UNCERTAINTY (half that round
trip), with rtt_ms that round trip. systemd=yes only when PID 1 is
systemd in the host's network namespace and systemctl is-system-running
answers. source.FIELD= says where each SSH value came from.

With --plan, each §6b requirement is mapped to a capability on every host
that runs the SUT (sut.roles; a requirement no probe covers, naming a
binary such as etcd-server or "etcd-client (etcdctl)", is looked up on
PATH and asked for --version): present=yes|no|unknown|by-sut. The output
is then what to act on — one "problem:" line per missing requirement or
unreachable host, with the scenarios it makes INCONCLUSIVE-env and the
fix, and the summary line last, e.g.
"capabilities: 4 present, 1 missing: systemd (h1) → S2, S3 INCONCLUSIVE-env; runnable: S1".
--verbose prints the whole matrix first; --matrix-dir DIR writes it to
DIR/capabilities.txt and DIR/capabilities.json (task validate keeps it
under results/validate/). A missing requirement leaves the scenarios that
need it INCONCLUSIVE-env (dstgen run records them so without running
them) and does not stop the others: probe fails only when nothing
selected can run, or with --strict when any selected scenario would be
INCONCLUSIVE-env. dstgen.capabilities.<key>: false in env.yml says the
hosts lack it on purpose; dstgen.scenarios selects the scenarios (empty =
all).

--reach checks only that every host answers one bounded round trip: a
line per host and "hosts: N reachable, M unreachable".

An unreachable host prints only host= reachable=no error= (no made-up
facts).

Exit: 0 something selected can run; 1 nothing can (or --strict and a
scenario would be INCONCLUSIVE-env); 2 bad input, or a host refused us
(key, known_hosts) (plan errors as file:line); 3 a host unreachable.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var p *plan.Plan
			if planPath != "" {
				if reach {
					return fmt.Errorf("probe: --reach and --plan do not go together")
				}
				var err error
				if p, err = plan.Parse(planPath); err != nil {
					return fmt.Errorf("probe: %w", err)
				}
			}
			e, pool, err := f.open()
			if err != nil {
				return fmt.Errorf("probe: %w", err)
			}
			defer pool.Close()
			target := "all"
			if len(args) == 1 {
				target = args[0]
			}
			hosts, err := e.Select(target)
			if err != nil {
				return fmt.Errorf("probe: %s: %w", e.Path, err)
			}
			if reach {
				return probeReach(cmd, f.json, runner.ProbeReach(cmd.Context(), pool, hosts))
			}
			var bins []string
			if p != nil {
				bins = append(capability.RequirementBinaries(p.EnvReqs), samplerTools...)
			}
			caps := runner.Probe(cmd.Context(), pool, hosts, bins...)
			var rows []capability.ReqRow
			var sum *capability.CapSummary
			if p != nil {
				rows = capability.MapRequirements(p.EnvReqs, sutCaps(e, caps))
				s := capability.Summarize(rows, e.Dstgen.Capabilities, e.Dstgen.Scenarios, p.ScenarioIDs())
				sum = &s
			}
			code := exitcode.OK
			if sum != nil && (sum.Blocking || strict && len(sum.Inconclusive) > 0) {
				code = exitcode.NotSo
			}
			var problems []string
			for _, h := range caps {
				switch {
				case h.Refused || (h.Reachable && h.Err != ""):
					code = exitcode.BadInput
					problems = append(problems, fmt.Sprintf("%s; fix: the host's key or known_hosts entry in %s", h.Err, e.Path))
				case !h.Reachable:
					if code != exitcode.BadInput {
						code = exitProbeUnreachable
					}
					problems = append(problems, fmt.Sprintf("host %s unreachable: %s; fix: its address, port and ssh settings in %s (dstgen probe --reach)", h.Host, h.Err, e.Path))
				}
			}
			if sum != nil {
				for _, m := range sum.Details {
					problems = append(problems, m.Problem(e.Path))
				}
			}
			if matrixDir != "" {
				if err := writeMatrix(matrixDir, caps, rows, sum); err != nil {
					return fmt.Errorf("probe: %w", err)
				}
			}
			w := cmd.OutOrStdout()
			switch {
			case f.json:
				if rows == nil {
					rows = []capability.ReqRow{}
				}
				out := map[string]any{"hosts": caps, "requirements": rows, "problems": problems}
				if sum != nil {
					out["summary"] = sum
				}
				if err := json.NewEncoder(w).Encode(out); err != nil {
					return err
				}
			case sum == nil:
				// No plan: the matrix is all there is to say.
				printProbe(w, caps, nil)
				for _, pr := range problems {
					fmt.Fprintln(cmd.ErrOrStderr(), "dstgen: probe: "+pr)
				}
			default:
				// What an agent or a person acts on: one line per problem
				// and the summary; the matrix on request, and in the file.
				if verbose {
					printProbe(w, caps, rows)
				}
				for _, pr := range problems {
					fmt.Fprintln(w, "problem: "+pr)
				}
				if n := unknownReqs(rows); n != "" {
					fmt.Fprintln(w, "confirm by hand (no probe covers it): "+n)
				}
				if n := missingSamplers(caps); n != "" {
					fmt.Fprintln(w, "note: "+n)
				}
				if matrixDir != "" {
					fmt.Fprintf(w, "matrix: %s\n", filepath.Join(matrixDir, matrixFile))
				} else if !verbose {
					fmt.Fprintln(w, "matrix: dstgen probe --verbose")
				}
				fmt.Fprintln(w, sum.Line())
			}
			if code == exitcode.OK {
				return nil
			}
			return exitcode.New(code, nil)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&planPath, "plan", "", "plan markdown whose §6b requirements to check")
	cmd.Flags().BoolVar(&reach, "reach", false, "only check that every host answers one bounded round trip")
	cmd.Flags().BoolVar(&verbose, "verbose", false, "with --plan: print the whole capability matrix before the problems")
	cmd.Flags().BoolVar(&strict, "strict", false, "with --plan: exit 1 when any selected scenario would be INCONCLUSIVE-env, not only when none can run")
	cmd.Flags().StringVar(&matrixDir, "matrix-dir", "", "write the capability matrix to DIR/"+matrixFile+" (and .json)")
	return cmd
}

// sutCaps is the matrices of the hosts that run the SUT (sut.roles; every
// host without roles): the §6b requirements are the SUT's and its
// nemeses', and a client host without etcd is not a missing etcd.
func sutCaps(e *env.Env, caps []runner.HostCaps) []runner.HostCaps {
	sut := map[string]bool{}
	for _, h := range e.SUTHosts() {
		sut[h.Name] = true
	}
	var out []runner.HostCaps
	for _, c := range caps {
		if sut[c.Host] {
			out = append(out, c)
		}
	}
	return out
}

// samplerTools are what scripts/collect-metrics.sh samples with; none is
// required (docs/real-env-test.md §8).
var samplerTools = []string{"vmstat", "iostat", "mpstat"}

// missingSamplers says which hosts lack which sampler tools and what the
// benchmark report loses; "" when every reachable host has them all.
func missingSamplers(caps []runner.HostCaps) string {
	byTools := map[string][]string{}
	var order []string
	for _, h := range caps {
		if !h.Reachable {
			continue
		}
		var lack []string
		for _, t := range samplerTools {
			if c, ok := h.Cap(runner.BinaryCap(t)); ok && !c.Present {
				lack = append(lack, t)
			}
		}
		if len(lack) > 0 {
			k := strings.Join(lack, ", ")
			if _, seen := byTools[k]; !seen {
				order = append(order, k)
			}
			byTools[k] = append(byTools[k], h.Host)
		}
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, "no "+k+" on "+strings.Join(byTools[k], ","))
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + ": benchmark metrics lack those figures (vmstat: CPU and memory; iostat: disk; mpstat: per-CPU) — apt-get install procps sysstat"
}

// unknownReqs names, once each, the requirements no probe decided.
func unknownReqs(rows []capability.ReqRow) string {
	var names []string
	for _, r := range rows {
		if r.Present == capability.ReqUnknown && !slices.Contains(names, r.Requirement) {
			names = append(names, r.Requirement)
		}
	}
	return strings.Join(names, "; ")
}

// matrixFile is the capability matrix's name under --matrix-dir.
const matrixFile = "capabilities.txt"

// writeMatrix writes the matrix as probe --verbose prints it, and as
// JSON, under dir: what validate keeps beside the results.
func writeMatrix(dir string, caps []runner.HostCaps, rows []capability.ReqRow, sum *capability.CapSummary) error {
	var b bytes.Buffer
	printProbe(&b, caps, rows)
	if sum != nil {
		fmt.Fprintln(&b, sum.Line())
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("capability matrix: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, matrixFile), b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("capability matrix: %w", err)
	}
	js, err := json.MarshalIndent(map[string]any{"hosts": caps, "requirements": rows, "summary": sum}, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, strings.TrimSuffix(matrixFile, ".txt")+".json"), append(js, '\n'), 0o644)
}

// probeReach prints --reach's answer and picks its exit code: 0 all
// reachable, 3 any unreachable, 2 any refused us.
func probeReach(cmd *cobra.Command, asJSON bool, rs []runner.Reach) error {
	up, down, refused := 0, 0, 0
	for _, r := range rs {
		switch {
		case r.Reachable:
			up++
		case r.Refused:
			refused++
		default:
			down++
		}
	}
	w := cmd.OutOrStdout()
	if asJSON {
		if err := json.NewEncoder(w).Encode(map[string]any{"hosts": rs, "reachable": up, "unreachable": down + refused}); err != nil {
			return err
		}
	} else {
		for _, r := range rs {
			kv := [][2]string{{"host", r.Host}, {"reachable", yn(r.Reachable)}}
			if r.Reachable {
				kv = append(kv, [2]string{"rtt_ms", ms(r.RTT)})
			}
			if r.Err != "" {
				kv = append(kv, [2]string{"error", r.Err})
			}
			fmt.Fprintln(w, runner.FormatKV(append(kv, sourcePairs(r.Sources)...)))
		}
		fmt.Fprintf(w, "hosts: %d reachable, %d unreachable\n", up, down+refused)
	}
	switch {
	case refused > 0:
		return exitcode.New(exitcode.BadInput, nil)
	case down > 0:
		return exitcode.New(exitProbeUnreachable, nil)
	}
	return nil
}

func yn(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// ms renders d in milliseconds with microsecond precision: loopback round
// trips are a fraction of a millisecond.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Nanoseconds())/1e6, 'f', 3, 64)
}

// sourcePairs renders where each SSH value came from, source.FIELD=WHERE,
// fields in order.
func sourcePairs(src map[string]string) [][2]string {
	var kv [][2]string
	for _, k := range slices.Sorted(maps.Keys(src)) {
		kv = append(kv, [2]string{"source." + k, src[k]})
	}
	return kv
}

func printProbe(w io.Writer, caps []runner.HostCaps, rows []capability.ReqRow) {
	for _, h := range caps {
		if !h.Reachable {
			// Nothing else is known: no zeros that read as facts.
			fmt.Fprintln(w, runner.FormatKV(append([][2]string{{"host", h.Host}, {"reachable", "no"}, {"error", h.Err}}, sourcePairs(h.Sources)...)))
			continue
		}
		fmt.Fprintln(w, runner.FormatKV(append([][2]string{{"host", h.Host}, {"reachable", "yes"},
			{"goos", h.OS}, {"goarch", h.Arch}, {"machine", h.Machine}, {"kernel", h.Kernel}, {"distro", h.Distro},
			{"uid", strconv.Itoa(h.UID)}, {"systemd", yn(h.Systemd)}, {"shared_kernel", yn(h.SharedKernel)},
			{"container", h.Container}, {"boot_id", h.BootID},
			{"disk_free_mb", strconv.FormatInt(h.DiskFreeKB/1024, 10)}, {"disk_path", h.DiskPath},
			{"clock_offset_ms", ms(h.ClockOffset) + "±" + ms(h.ClockUncertainty)},
			{"rtt_ms", ms(h.RTT)}, {"clock_samples", strconv.Itoa(h.ClockSamples)}, {"error", h.Err}}, sourcePairs(h.Sources)...)))
		for _, c := range h.Caps {
			fmt.Fprintln(w, runner.FormatKV([][2]string{{"host", h.Host}, {"requirement", c.Name}, {"present", yn(c.Present)},
				{"version", c.Version}, {"source", c.Source}, {"message", c.Message}}))
		}
	}
	for _, r := range rows {
		fmt.Fprintln(w, runner.FormatKV(r.Fields()))
	}
}
