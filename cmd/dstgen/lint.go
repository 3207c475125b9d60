package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/dstgen/dstgen/internal/fileline"
	"github.com/dstgen/dstgen/plan"
)

// lintReport is the --json output of dstgen lint.
type lintReport struct {
	File     string         `json:"file"`
	Problems []plan.Problem `json:"problems"`
	Errors   int            `json:"errors"`
	Warnings int            `json:"warnings"`
	// Claims and Scenarios count what was parsed (§1b rows, §7 scenarios),
	// so a reader can tell an empty plan from a clean one.
	Claims    int `json:"claims"`
	Scenarios int `json:"scenarios"`
}

func newLintCmd() *cobra.Command {
	var asJSON, strict, drift bool
	var sutDir string
	cmd := &cobra.Command{
		Use:   "lint FILE",
		Short: "Check a test plan against the plan-format rules",
		Long: `Parse a claim-driven test plan and check it against the plan-format lint
rules. Prints one "file:line: message" per problem (warnings say "warning:"),
then, when the plan passes, one summary line:

  plan=FILE errors=0 warnings=N claims=N scenarios=N

FILE "-" reads the plan from standard input.

--drift then checks the test files dstgen author wrote for the plan: one
"file:line: drift: …" per authored file whose provenance sha256 is not the
plan's current one (the plan changed since; the file names the scenario),
and exit 1 when there is any. --sut is the SUT root the Target test files
are relative to (default: above the plan's docs/testing-plans/, else the
current directory).

Exit status: 0 when there are no errors (warnings allowed unless --strict),
2 when the plan has errors or cannot be read, 1 when --drift finds drift
(drift is looked for only in a plan that lints clean).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := runLint(cmd, args[0], asJSON, strict); err != nil || !drift {
				return err
			}
			return runDrift(cmd, args[0], sutDir, asJSON)
		},
	}
	cmd.Flags().BoolVar(&drift, "drift", false, "also report files dstgen author wrote from an older version of the plan (exit 1)")
	cmd.Flags().StringVar(&sutDir, "sut", "", "SUT root for --drift (default: above the plan's docs/testing-plans/, else the current directory)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the problems as JSON")
	cmd.Flags().BoolVar(&strict, "strict", false, "treat warnings as errors (exit 2)")
	return cmd
}

func runLint(cmd *cobra.Command, file string, asJSON, strict bool) error {
	out := cmd.OutOrStdout()
	p, err := parsePlanArg(cmd, file)
	if err != nil {
		var pe *fileline.Error
		if !errors.As(err, &pe) {
			return fmt.Errorf("lint: %w", err)
		}
		// A plan that cannot be parsed is one error-severity problem, so
		// --json readers see the same shape as for lint errors.
		prob := plan.Problem{File: pe.File, Line: pe.Line, Severity: plan.SevError, Rule: "parse", Message: pe.Reason()}
		if asJSON {
			if err := writeLintJSON(cmd, file, p, []plan.Problem{prob}); err != nil {
				return err
			}
			return exitcode.New(exitcode.BadInput, nil)
		}
		return err
	}
	probs := plan.Lint(p)
	if asJSON {
		if err := writeLintJSON(cmd, file, p, probs); err != nil {
			return err
		}
	} else {
		for _, pr := range probs {
			if _, err := fmt.Fprintln(out, pr.String()); err != nil {
				return fmt.Errorf("lint: write: %w", err)
			}
		}
	}
	errs := plan.Errors(probs)
	switch {
	case errs > 0:
		if !asJSON {
			return exitcode.New(exitcode.BadInput, fmt.Errorf("lint: %s: %d error(s), %d warning(s)", file, errs, len(probs)-errs))
		}
		return exitcode.New(exitcode.BadInput, nil)
	case strict && len(probs) > 0:
		if !asJSON {
			return exitcode.New(exitcode.BadInput, fmt.Errorf("lint: %s: %d warning(s) (--strict)", file, len(probs)))
		}
		return exitcode.New(exitcode.BadInput, nil)
	}
	if !asJSON {
		// Every dstgen command prints key=value lines; a silent success
		// could not be told from a lint that read nothing.
		if _, err := fmt.Fprintf(out, "plan=%s errors=0 warnings=%d claims=%d scenarios=%d\n",
			kvValue(file), len(probs)-errs, len(p.Claims), len(p.Scenarios)); err != nil {
			return fmt.Errorf("lint: write: %w", err)
		}
	}
	return nil
}

// kvValue quotes a key=value value only when it would otherwise not read
// back as one field (spaces, quotes, '=' or nothing at all).
func kvValue(v string) string {
	if v == "" || strings.ContainsAny(v, " \t\n\"=") {
		return strconv.Quote(v)
	}
	return v
}

// writeLintJSON writes the --json report; p may be nil or partial when the
// plan could not be parsed, and the counts are what was read.
func writeLintJSON(cmd *cobra.Command, file string, p *plan.Plan, probs []plan.Problem) error {
	errs := plan.Errors(probs)
	if probs == nil {
		probs = []plan.Problem{}
	}
	rep := lintReport{File: file, Problems: probs, Errors: errs, Warnings: len(probs) - errs}
	if p != nil {
		rep.Claims, rep.Scenarios = len(p.Claims), len(p.Scenarios)
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("lint: write json: %w", err)
	}
	return nil
}

// parsePlanArg parses the plan named on the command line; "-" is stdin.
func parsePlanArg(cmd *cobra.Command, file string) (*plan.Plan, error) {
	if file != "-" {
		return plan.Parse(file)
	}
	data, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), plan.MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("read plan from stdin: %w", err)
	}
	return plan.ParseBytes("<stdin>", data)
}
