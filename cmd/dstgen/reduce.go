package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/dstgen/dstgen/reduce"
	"github.com/dstgen/dstgen/session"
)

func newReduceCmd() *cobra.Command {
	var spec checker.Spec
	var out, runPath string
	cmd := &cobra.Command{
		Use:   "reduce HISTORY --model M [--checker C] [--timeout D] [--out FILE] [--run run.json]",
		Short: "Shrink a history with an anomaly to a small reproducer: exit 0 reduced, 1 no anomaly to reduce, 2 bad input",
		Long: `reduce finds the fewest keys, processes, the shortest time window and
then the fewest ops in which the same checker still finds an anomaly of the
same class (delta debugging), writes that history (dst-history/1) to --out
(default HISTORY with .reduced.jsonl) and prints
"reduced from N ops to k ops (keys …, window …)". It never drops the op that
wrote a value a kept op read. --timeout bounds the whole reduction and each
re-check; a reduction cut short says "stopped early" and writes the smallest
reproducer found. A history without an anomaly (valid, or undecided in the
time limit) is never reduced: exit 1 with the checker's outcome. --run names
a run.json whose fault windows the reduced window overlaps.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			if spec.Model == "" {
				return errors.New("reduce: --model is required (register, kv, map, counter, log, set, queue, ...)")
			}
			if spec.Checker == "" {
				c, ok := checker.Pick(spec.Model, "")
				if !ok {
					return fmt.Errorf("reduce: no default checker for model %q; pass --checker", spec.Model)
				}
				spec.Checker = c
			}
			if spec.Timeout <= 0 {
				return fmt.Errorf("reduce: --timeout %v: want a positive duration", spec.Timeout)
			}
			var run *session.Run
			if runPath != "" {
				r, err := session.LoadRun(runPath)
				if err != nil {
					return err
				}
				run = r
			}
			meta, ops, bad, err := history.ReadFile(path)
			if err != nil {
				return err
			}
			if len(bad) > 0 {
				return fmt.Errorf("%d bad lines in %s (first: %v)", len(bad), path, bad[0])
			}
			if errs := history.Validate(path, ops, nil); len(errs) > 0 {
				return fmt.Errorf("history invalid: %v", errs[0])
			}
			if len(ops) == 0 {
				return fmt.Errorf("%s: no ops: nothing to reduce", path)
			}
			spec.History = path
			ctx, cancel := context.WithTimeoutCause(cmd.Context(), spec.Timeout, fmt.Errorf("time limit %v reached", spec.Timeout))
			defer cancel()
			res, err := reduce.Reduce(ctx, spec, ops, nil)
			if errors.Is(err, reduce.ErrNoAnomaly) {
				return exitcode.New(exitcode.NotSo, fmt.Errorf("reduce: %s: %v; only a history with an anomaly is reduced", path, err))
			}
			if err != nil {
				return err
			}
			if out == "" {
				out = strings.TrimSuffix(path, filepath.Ext(path)) + ".reduced.jsonl"
			}
			meta.Schema = history.Schema
			b := append(history.AppendMeta(nil, meta), '\n')
			for i := range res.Ops {
				b = append(history.AppendJSON(b, &res.Ops[i]), '\n')
			}
			if err := os.WriteFile(out, b, 0o644); err != nil {
				return fmt.Errorf("reduce: write the reduced history: %w", err)
			}
			w := cmd.OutOrStdout()
			var fw []string
			if run != nil {
				fw = res.FaultWindows(run.FaultWindows)
			}
			fmt.Fprintf(w, "%s\n", res.Describe(fw))
			fmt.Fprintf(w, "reduced=%s class=%s checks=%d\n", out, res.Class, res.Checks)
			if run != nil && len(fw) == 0 {
				fmt.Fprintf(w, "fault_windows=none (none of the %d in %s overlaps)\n", len(run.FaultWindows), runPath)
			}
			if res.Anomaly.Message != "" {
				fmt.Fprintf(w, "anomaly %s: %s\n", res.Anomaly.Kind, res.Anomaly.Message)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&spec.Model, "model", "", "model under test: register, kv|map, counter, log, set, queue, ...")
	f.StringVar(&spec.Checker, "checker", "", "checker id (default: picked from the model)")
	f.DurationVar(&spec.Timeout, "timeout", time.Minute, "bound on the whole reduction and on each re-check")
	f.StringVar(&out, "out", "", "where to write the reduced history (default HISTORY with .reduced.jsonl)")
	f.StringVar(&runPath, "run", "", "run.json whose fault windows to name")
	return cmd
}
