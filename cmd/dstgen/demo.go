package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/dstgen/dstgen/demo"
	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/spf13/cobra"
)

// newDemoCmd is `dstgen demo`: the main job on a built-in default, on this
// machine alone (no root, no remote host, no task binary).
func newDemoCmd() *cobra.Command {
	var cfg demo.Config
	var stay bool
	cmd := &cobra.Command{
		Use:   "demo [--dir DIR] [--keep] [--bug stale-reads|none|both] [--src DIR] [--stay]",
		Short: "Run the whole job on the bundled example: SSH hosts in-process, examples/kv, a partition, verdicts",
		Long: `demo builds examples/kv (a 3-replica key-value store with a stale-read
bug switch), starts one SSH server per simulated host inside this process
on 127.0.0.1 (fresh host keys in the demo's own known_hosts, strict
checking), puts a dstgen proxy in front of each replica's peer traffic,
runs dstgen init on examples/kv and fills env.yml and scenarios.yml, then
drives the generated Taskfile with dstgen task: validate, deploy,
run:scenario S1 (smoke) and S2 (a follower partitioned through the proxy),
analyze. With the bug (--bug stale-reads, or both: the default) it
deploys with -stale-reads, runs S2, re-runs it with the same seed
(dstgen run S2 --rerun) and analyzes: FAIL-reproducible with the
linearizability anomaly. With both, the two runs go at the same time, each
on its own hosts, proxy and testing/ (the stale-read run's in
DIR/stale-reads; its session is moved into DIR/testing/results before it
is analyzed). It prints progress lines (run by run), then each scenario's
verdict with one line of evidence and the report paths (docs/demo.md).

Without --dir the work goes to a temp dir, removed at the end unless
--keep or the run did not end DONE. examples/kv is looked for from the
current directory upward (run it in a dstgen checkout) or given with --src.
Ctrl-C stops the SUT, heals and stops the hosts and the proxy (of both
runs).

--stay brings up the same hosts, proxy and filled-in testing/ (init,
env.yml, scenarios.yml; deploy not run), prints
"demo status=ready testing=DIR/testing env=DIR/testing/env.yml hosts=..."
and a hint, and keeps them up until SIGINT or SIGTERM, so a person or an
agent can follow DIR/testing/README.md by hand (dstgen task NAME with
DIR/bin on PATH). The directory is kept. --bug stale-reads starts env.yml
with the bug switched on; the default is off.

Exit codes: the last dstgen analyze's (0 DONE, 1 otherwise: the default
--bug both ends with the FAIL); 2 bad input (--bug, examples/kv not found).
With --stay: 0 once stopped by a signal, 1 a set-up step failed, 2 bad
input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("demo: this binary's path: %w", err)
			}
			cfg.Exe = exe
			cfg.Out = cmd.OutOrStdout()
			var code int
			if stay {
				if !cmd.Flags().Changed("bug") {
					cfg.Bug = demo.BugNone
				}
				err = demo.Stay(cmd.Context(), cfg)
			} else {
				code, err = demo.Run(cmd.Context(), cfg)
			}
			switch {
			case errors.Is(err, demo.ErrBadInput):
				return fmt.Errorf("demo: %w", err)
			case err != nil:
				return exitcode.New(exitcode.NotSo, fmt.Errorf("demo: %w", err))
			case code != 0:
				return exitcode.New(code, nil)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.Dir, "dir", "", "work directory (kept); default a temp dir")
	fl.BoolVar(&cfg.Keep, "keep", false, "keep the temp work directory")
	fl.StringVar(&cfg.Bug, "bug", demo.BugBoth, "stale-reads (only the bug run), none (only the safe run) or both")
	fl.StringVar(&cfg.Src, "src", "", "examples/kv directory (default: found from the current directory upward)")
	fl.StringVar(&cfg.Plan, "plan", "", "the plan dstgen init reads (default: examples/kv's own)")
	fl.BoolVar(&stay, "stay", false, "set up the hosts, the proxy and testing/ (no deploy), print a ready line, hold them up until Ctrl-C")
	return cmd
}
