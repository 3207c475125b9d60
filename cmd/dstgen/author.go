package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dstgen/dstgen/author"
	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/dstgen/dstgen/plan"
)

// newAuthorCmd is `dstgen author`: write the plan's skeletons into the
// SUT's tree for review.
func newAuthorCmd() *cobra.Command {
	var o author.Options
	var quiet bool
	cmd := &cobra.Command{
		Use:   "author [--plan FILE] [--sut DIR] [--scenario ID ...] [--on-exists ask|skip|overwrite|sibling] [--dry-run]",
		Short: "Write each scenario's Skeleton to its Target test file in the SUT, for review",
		Long: `author writes the Skeleton of every scenario that declares a Target test
file (docs/plan-format.md §9.2, §9.3) into the SUT's own tree, with a
provenance line on top (scenario, plan path, the plan's sha256), runs the
SUT's formatter (gofmt, rustfmt, ruff/black, prettier, shfmt: as a filter,
when installed), then the compile step (go vet ./pkg, cargo test --no-run,
a Python compile, tsc --noEmit, bash -n), each bounded in time.

It never commits: it prints the diff, and in a git repository stages the
file (git add) for review. It writes only the declared targets, inside the
SUT tree: an absolute path, "..", a symlink, a manifest (go.mod,
Cargo.toml, package.json, pyproject.toml, pom.xml, …), .git, a file of
another language, or a skeleton without the AUTO-GENERATED header is
refused. An existing target is shown and asked about on a terminal;
otherwise --on-exists decides (default skip; sibling writes
<stem>.new.<ext> beside it). A scenario without Target test file or
Skeleton is reported: it runs on the ephemeral harness instead.

One line per scenario:

  scenario=S1 action=written path=kv/s1_test.go format=gofmt compile=ok staged=true

Exit codes: 0 every scenario written, skipped or not in author mode, and
everything written compiles; 1 a compile step failed; 2 bad input (no
plan, a plan that fails lint, an unknown --scenario, a refused target or
skeleton — file:line of the plan).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.OnExists == "" || o.OnExists == author.OnExistsAsk {
				if isTerminal(cmd.InOrStdin()) {
					o.Prompt, o.Log = cmd.InOrStdin(), cmd.ErrOrStderr()
				}
			}
			res, err := author.Run(cmd.Context(), o)
			if err != nil {
				var le *plan.LintError
				if errors.As(err, &le) {
					for _, p := range le.Problems {
						fmt.Fprintln(cmd.ErrOrStderr(), p.String())
					}
				}
				return fmt.Errorf("author: %w", err)
			}
			return printAuthor(cmd.OutOrStdout(), res, !quiet)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Plan, "plan", "", "plan file (default: the single docs/testing-plans/*.md of the SUT)")
	f.StringVar(&o.SUT, "sut", "", "SUT root (default: above the plan's docs/testing-plans/, else the current directory)")
	f.StringSliceVar(&o.Scenarios, "scenario", nil, "scenario id to author (repeatable or comma-separated; default: all)")
	f.StringVar(&o.OnExists, "on-exists", "", "existing target: ask (terminal), skip, overwrite, sibling (default: ask on a terminal, else skip)")
	f.BoolVar(&o.DryRun, "dry-run", false, "show what would be written and the diff; write nothing")
	f.DurationVar(&o.CompileTimeout, "compile-timeout", author.DefaultCompileTimeout, "bound of each compile step")
	f.BoolVar(&quiet, "no-diff", false, "do not print the diffs")
	return cmd
}

// printAuthor prints one key=value line per scenario (then its diff) and
// a summary, and turns the outcome into the exit code.
func printAuthor(w io.Writer, res *author.Result, diffs bool) error {
	var refused, failed, written int
	for _, s := range res.Scenarios {
		kv := []string{"scenario=" + s.ID, "action=" + s.Action}
		if s.Path != "" {
			kv = append(kv, "path="+kvValue(s.Path))
		} else if s.Target != "" {
			kv = append(kv, "target="+kvValue(s.Target))
		}
		if s.Format != "" {
			kv = append(kv, "format="+kvValue(s.Format))
		}
		if s.FormatError != "" {
			kv = append(kv, "format_error="+kvValue(s.FormatError))
		}
		if s.Compile != "" {
			kv = append(kv, "compile="+s.Compile)
		}
		if s.CompileErr != "" {
			kv = append(kv, "compile_detail="+kvValue(s.CompileErr))
		}
		if s.Path != "" && s.Action != author.ActWouldWrite {
			kv = append(kv, fmt.Sprintf("staged=%t", s.Staged))
		}
		if s.Reason != "" {
			kv = append(kv, "reason="+kvValue(s.Reason))
		}
		if _, err := fmt.Fprintln(w, strings.Join(kv, " ")); err != nil {
			return fmt.Errorf("author: write: %w", err)
		}
		if diffs && s.Diff != "" && s.Action != author.ActSkipped {
			fmt.Fprint(w, s.Diff)
		}
		switch {
		case s.Action == author.ActRefused:
			refused++
		case s.Compile == author.CompileFailed:
			failed++
		}
		if s.Path != "" && s.Action != author.ActWouldWrite {
			written++
		}
	}
	fmt.Fprintf(w, "author plan=%s plan_sha256=%s scenarios=%d written=%d refused=%d compile_failed=%d (nothing committed)\n",
		kvValue(res.Plan), res.PlanSHA, len(res.Scenarios), written, refused, failed)
	switch {
	case refused > 0:
		return exitcode.New(exitcode.BadInput, fmt.Errorf("author: %d scenario(s) refused (see reason=)", refused))
	case failed > 0:
		return exitcode.New(exitcode.NotSo, fmt.Errorf("author: %d authored test(s) do not compile (see compile_detail=)", failed))
	}
	return nil
}

// runDrift is `dstgen lint --drift`: the authored files whose provenance
// sha256 is not the plan's current one. With --json it prints a second
// JSON document, {"drift": [...]}, after lint's.
func runDrift(cmd *cobra.Command, file, sutDir string, asJSON bool) error {
	if file == "-" {
		return errors.New("lint --drift: needs the plan's file (its SUT and sha256), not standard input")
	}
	items, err := author.Drift(cmd.Context(), file, sutDir)
	if err != nil {
		return fmt.Errorf("lint --drift: %w", err)
	}
	out := cmd.OutOrStdout()
	if asJSON {
		if items == nil {
			items = []author.DriftItem{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Drift []author.DriftItem `json:"drift"`
		}{items}); err != nil {
			return fmt.Errorf("lint --drift: write json: %w", err)
		}
	} else {
		for _, d := range items {
			fmt.Fprintln(out, d.String())
		}
		fmt.Fprintf(out, "drift=%d\n", len(items))
	}
	if len(items) > 0 {
		return exitcode.New(exitcode.NotSo, fmt.Errorf("lint: %d authored test file(s) drifted from %s; re-author them (dstgen author --on-exists sibling) and review", len(items), file))
	}
	return nil
}
