package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/dstgen/dstgen/generator"
	"github.com/dstgen/dstgen/internal/gotask/taskcheck"
	"github.com/dstgen/dstgen/plan"
)

// newInitCmd is `dstgen init`: scan the SUT, read and lint the plan, and
// generate the testing/ framework.
func newInitCmd() *cobra.Command {
	o := generator.InitOptions{CheckTaskfile: taskcheck.Check}
	var agentNames []string
	cmd := &cobra.Command{
		Use:   "init [--plan FILE] [--sut DIR] [--out DIR] [--agents claude,agents-md] [--force] [--dry-run] [--yes]",
		Short: "Generate testing/ (Taskfile, env.example.yml, scenarios.yml, scripts, README) from the SUT and its plan",
		Long: `init scans the system under test (--sut, default: the current directory),
reads the plan (--plan, default: the single docs/testing-plans/*.md; with
none it generates the benchmark framework with an empty scenarios list) and
writes the testing/ framework into --out (default: <sut>/testing).

On a terminal it asks the scanner's open questions (Enter keeps the default;
--yes accepts every default). Without a terminal it never waits: unanswered
questions become visible TODO(<id>) lines in env.example.yml and
scenarios.yml.

Re-running is safe: env.yml is never written, and a generated file edited
since generation is kept ("skip (edited)") unless --force. --dry-run lists
create|update|unchanged|skip per file and writes nothing.

--agents also writes, at the SUT root where each agent looks by itself
(opt-in: outside testing/): claude = .claude/agents/test-runner.md, the
test-runner contract as a Claude Code sub-agent (frontmatter name,
description, tools); agents-md = a block in AGENTS.md between
<!-- dstgen:begin test-runner --> and <!-- dstgen:end test-runner -->
markers pointing at testing/, replaced on every re-run, the rest of the
file kept byte for byte (created when missing). The same edit rule holds:
a definition edited since generation is kept unless --force.

Exit codes: 0 generated (or dry run listed); 2 bad input: missing or
unreadable SUT dir, several plans without --plan, a plan that fails lint
(problems printed as file:line), output dir not writable, a Taskfile
go-task cannot compile, an unknown --agents name, or AGENTS.md markers out
of order (file:line). Nothing is half-written.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			agents, err := generator.ParseAgents(agentNames)
			if err != nil {
				return fmt.Errorf("init: %w", err)
			}
			o.Agents = agents
			if !o.Yes && isTerminal(cmd.InOrStdin()) {
				o.Prompt, o.Log = cmd.InOrStdin(), stderr
			}
			res, err := generator.Init(cmd.Context(), o)
			if err != nil {
				var le *plan.LintError
				if errors.As(err, &le) {
					for _, p := range le.Problems {
						fmt.Fprintln(stderr, p.String())
					}
				}
				return fmt.Errorf("init: %w", err)
			}
			printInitSummary(stdout, res)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Plan, "plan", "", "plan file (default: the single docs/testing-plans/*.md of the SUT)")
	f.StringVar(&o.SUT, "sut", "", "SUT root directory (default: current directory)")
	f.StringVar(&o.Out, "out", "", "output directory (default: <sut>/testing)")
	f.StringSliceVar(&agentNames, "agents", nil, "also write agent definitions at the SUT root: "+strings.Join(generator.KnownAgents(), ", ")+" (comma list)")
	f.BoolVar(&o.Force, "force", false, "overwrite generated files edited since generation")
	f.BoolVar(&o.DryRun, "dry-run", false, "list what would change; write nothing")
	f.BoolVar(&o.Yes, "yes", false, "accept every question's default without asking")
	return cmd
}

// isTerminal reports whether r is an interactive terminal; only then may
// init wait for answers.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func printInitSummary(w io.Writer, res *generator.InitResult) {
	p := res.Profile
	fmt.Fprintf(w, "SUT: %s (%s)\n", p.Name, res.SUT)
	fmt.Fprintf(w, "Mode: %s (docs complete: %t, intent clear: %t)\n", p.Completeness.Mode, p.Completeness.DocsComplete, p.Completeness.IntentClear)
	fmt.Fprintf(w, "Found: %d build system(s), %d artifact(s), %d systemd unit(s), %d config template(s), %d toolbox item(s) (dstgen scan shows each with its file)\n",
		len(p.Build), len(p.Artifacts), len(p.Units), len(p.Configs), len(p.Toolbox))
	if res.Plan == nil {
		fmt.Fprintln(w, "Plan: none found — generated the benchmark framework only (scenarios.yml has an empty scenarios list); add docs/testing-plans/<plan>.md and re-run")
	} else {
		fmt.Fprintf(w, "Plan: %s (%d scenarios)\n", rel(res.SUT, res.PlanPath), len(res.Plan.Scenarios))
		for _, pr := range res.Warnings {
			fmt.Fprintf(w, "  %s\n", pr.String())
		}
	}
	open := 0
	for _, q := range p.Questions {
		if q.Answer == "" {
			open++
		}
	}
	if open > 0 {
		fmt.Fprintf(w, "Open questions: %d, written as TODO(<id>) in env.example.yml / scenarios.yml\n", open)
	}
	verb := "Wrote"
	if res.DryRun {
		verb = "Would write (dry run, nothing written)"
	}
	fmt.Fprintf(w, "%s %s:\n", verb, res.Out)
	skipped := 0
	for _, a := range res.Actions {
		fmt.Fprintf(w, "  %-26s %s\n", a.Action, a.Path)
		if a.Action == generator.ActSkip {
			skipped++
		}
	}
	if len(res.AgentActions) > 0 {
		fmt.Fprintf(w, "%s %s (--agents):\n", verb, res.SUT)
		for _, a := range res.AgentActions {
			fmt.Fprintf(w, "  %-26s %s\n", a.Action, a.Path)
			if a.Action == generator.ActSkip {
				skipped++
			}
		}
	}
	// With an env.yml already there, "cp env.example.yml env.yml" would
	// destroy the user's hosts and settings: never suggest it then.
	_, err := os.Stat(filepath.Join(res.Out, "env.yml"))
	haveEnv := err == nil
	if haveEnv {
		fmt.Fprintf(w, "  %-26s %s\n", "never written", "env.yml (yours, kept; compare it with env.example.yml)")
	} else {
		fmt.Fprintf(w, "  %-26s %s\n", "never written", "env.yml (cp env.example.yml env.yml)")
	}
	if skipped > 0 {
		fmt.Fprintf(w, "%d edited file(s) kept; --force overwrites them\n", skipped)
	}
	if !res.DryRun {
		dir := rel(mustWd(), res.Out)
		if strings.HasPrefix(dir, "..") {
			dir = res.Out
		}
		if haveEnv {
			fmt.Fprintf(w, "Next: cd %s && task -x validate\n", dir)
		} else {
			fmt.Fprintf(w, "Next: cd %s && cp env.example.yml env.yml && $EDITOR env.yml && task -x validate\n", dir)
		}
	}
}

func mustWd() string {
	wd, err := os.Getwd()
	if err != nil {
		return "/"
	}
	return wd
}

func rel(base, target string) string {
	r, err := filepath.Rel(base, target)
	if err != nil {
		return target
	}
	return r
}
