package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dstgen/dstgen/analyze"
	"github.com/dstgen/dstgen/analyze/bench"
	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/dstgen/dstgen/internal/oneline"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/session"
)

// analyzeFlags are the options of dstgen analyze.
type analyzeFlags struct {
	planFile     string
	asJSON       bool
	out          string
	checkTimeout time.Duration
	maxErrorRate float64
	envFile      string
	model        string
	checker      string
}

func newAnalyzeCmd() *cobra.Command {
	var f analyzeFlags
	cmd := &cobra.Command{
		Use:   "analyze RESULTS [--plan FILE] [--env FILE] [--model M [--checker C]] [--json] [--out DIR] [--check-timeout D]",
		Short: "Judge a session (verdicts, findings/report.md, report.json, junit.xml, report.html) or a benchmark run",
		Long: `analyze judges what a run collected.

RESULTS is one session directory (<plan-slug>/<UTC>/ or
run_<YYYYMMDD_HHMMSS>/), a Real Env Test benchmark run, or a results root.
For a root, the newest session in it is judged and printed as for one
session; then every other session is judged too (one judged=<dir>
session_verdict= line each; a session whose findings/report.json is newer
than its records, histories, logs and metrics keeps that report), and the
roll-up follows: latest.<ID>=<verdict> session=<dir> per scenario (the
newest session that ran it), latest.benchmark=<session verdict> for the
newest benchmark run. The exit code is the newest session's. Findings are written to <session>/findings/ (or --out DIR):
report.md, <ID>.md per scenario, report.json, verdicts.json, junit.xml,
report.html; verdicts.json is also copied to <session>/analysis/. When an
earlier session of the same plan exists, the report shows what changed.

Output: the headline, session_verdict=<DONE|DONE_WITH_CONCERNS|
INCONCLUSIVE|FAIL|BLOCKED>, for a plan session one verdict.<ID>= and
reason.<ID>= line per plan scenario, then report=<path>.

Exit codes: 0 session verdict DONE; 1 FAIL, DONE_WITH_CONCERNS, INCONCLUSIVE
or BLOCKED; 2 bad input (missing directory, unreadable plan) or a report
that could not be written (it is then printed to stdout instead). Bad input
inside a session (truncated history, garbage lines, missing run.json) is
listed as file:line problems on stderr and the analysis continues.

A run_<ts>/ directory without run.json records is a benchmark run: totals,
latency percentiles, throughput against target, error categories, peak
host resources, named saturation and error patterns, the comparison with
the previous run and recommendations. Its session verdict is FAIL when the
error rate is above --max-error-rate (default 1%) or a checker found an
anomaly, BLOCKED when nothing ran, INCONCLUSIVE when a check could not
decide or a declared checker could not run, DONE_WITH_CONCERNS for a
history no checker judged (no model declared), else DONE. Accepted benchmark/*.json shapes: the dstgen shape
{"name","target_rate","duration_s","ops","errors":{category:n},
"latency_ms":{"mean","p50","p95","p99"} | "samples_ms":[...],
"series":[{"t","ops","errors","p99_ms"}]}, fio --output-format=json, and
k6 --summary-export; a dst-history/1 *.jsonl history anywhere under
benchmark/ is a benchmark result too (ops, throughput, p50/p95/p99/max,
fail/timeout counts) and, when a model is declared, its checker decides.
The model and checker are the ones the run was started with, recorded by
dstgen bench start in benchmark/bench.params, so every way of analyzing the
run judges it the same; --model (and --checker) win over them, and --env's
benchmark.model / benchmark.checker count only for a run that recorded
none. A dirty initial state, a checker time limit, or a declared checker
that did not run on every history is inconclusive, never a pass; without a
model the numbers are reported and linearizability is said to be unchecked. metrics/ may hold vmstat/iostat -x/mpstat -P ALL/top
logs (per host in metrics/<host>/) and timestamp,host,cpu,mem,disk_io,net
CSV files.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAnalyze(cmd, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.planFile, "plan", "", "plan markdown (default: the plan named in session-log.md or the run records)")
	fl.BoolVar(&f.asJSON, "json", false, "print report.json to stdout instead of the headline")
	fl.StringVar(&f.out, "out", "", "directory for the findings files (default <session>/findings)")
	fl.DurationVar(&f.checkTimeout, "check-timeout", 0, "time limit per checker run (default: the checker's own); a checker that runs out is unknown, never a pass")
	fl.Float64Var(&f.maxErrorRate, "max-error-rate", bench.DefaultMaxErrorRate, "benchmark runs: error-rate fraction above which the run fails")
	fl.StringVar(&f.envFile, "env", "", "benchmark runs: env.yml whose benchmark.model / benchmark.checker judge a run that recorded no oracle in its bench.params")
	fl.StringVar(&f.model, "model", "", "benchmark runs: model of the collected history (wins over env.yml benchmark.model)")
	fl.StringVar(&f.checker, "checker", "", "benchmark runs: checker for --model (wins over env.yml benchmark.checker; default: the model's)")
	return cmd
}

func runAnalyze(cmd *cobra.Command, results string, f analyzeFlags) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if f.checkTimeout < 0 {
		return fmt.Errorf("analyze: --check-timeout %s is negative", f.checkTimeout)
	}
	if f.maxErrorRate <= 0 || f.maxErrorRate > 1 {
		return fmt.Errorf("analyze: --max-error-rate %g: want a fraction in (0, 1]", f.maxErrorRate)
	}
	st, err := os.Stat(results)
	if err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("analyze: %s is not a directory", results)
	}
	var p *plan.Plan
	if f.planFile != "" {
		p, err = plan.Parse(f.planFile)
		if err != nil {
			return fmt.Errorf("analyze: %w", err)
		}
	}
	dir, err := session.Find(results)
	if err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	j, err := analyzeSession(cmd, dir, p, f, stdout, stderr)
	if err != nil {
		return err
	}
	if !session.IsSession(results) && f.out == "" && !f.asJSON {
		// A results root: every other session is judged too (or its
		// report reused when nothing changed since), and each scenario's
		// latest verdict summed up (docs/report-format.md §1.1).
		if err := rollUp(cmd, results, dir, j, p, f); err != nil {
			return err
		}
	}
	if j.verdict == analyze.Done {
		return nil
	}
	return exitcode.New(exitcode.NotSo, nil)
}

// judged is one session's verdicts as a root's roll-up reads them.
type judged struct {
	verdict   analyze.SessionVerdict
	scenarios []judgedScenario
	bench     bool
}

type judgedScenario struct {
	ID      string
	Verdict analyze.Verdict
}

// analyzeSession judges one session (a plan session or a benchmark run),
// writes its findings and prints its lines to stdout (problems to
// stderr); the error is one that kept it from being judged at all.
func analyzeSession(cmd *cobra.Command, dir string, p *plan.Plan, f analyzeFlags, stdout, stderr io.Writer) (judged, error) {
	ctx := cmd.Context()
	if bench.IsRunDir(dir) {
		// A run_<ts> that `task collect` brought back from the benchmark
		// workflows holds no scenario records: judging it against the
		// plan would only say NOT-RUN for every scenario, so it gets the
		// benchmark analysis. Nothing went wrong, so stderr (what an agent
		// quotes as the error) stays empty.
		if runs, _ := session.RunFiles(dir); len(runs) == 0 {
			v, err := analyzeBenchRun(cmd, dir, f, stdout, stderr)
			return judged{verdict: v, bench: true}, err
		}
	}

	out := f.out
	if out == "" {
		out = filepath.Join(dir, session.FindingsDir)
	}
	// Violations get their porcupine visualization beside the report.
	// A directory that cannot be made is reported by the report writer.
	_ = os.MkdirAll(out, 0o755)
	opts := analyze.Options{CheckTimeout: f.checkTimeout, HTMLDir: out}
	rep, aerr := analyze.Analyze(ctx, dir, p, opts)
	if aerr != nil {
		if ctx.Err() != nil {
			return judged{}, fmt.Errorf("analyze: interrupted: %w", ctx.Err())
		}
		if rep == nil {
			return judged{}, fmt.Errorf("analyze: %w", aerr)
		}
		// Nothing could be judged: the session is BLOCKED, and says why.
		rep.SessionVerdict = analyze.Blocked
		rep.Headline = "nothing could be analyzed: " + aerr.Error()
	}
	for _, pr := range rep.Problems {
		fmt.Fprintf(stderr, "problem: %s\n", pr)
	}

	opts.HTMLDir = "" // never write into the previous session
	cmp := previousComparison(cmd, rep, p, opts)
	if werr := analyze.WriteReport(rep, cmp, out); werr != nil {
		return judged{}, reportNotWritten(stdout, out, werr, analyze.RenderMarkdown(rep, cmp))
	}
	if f.out == "" {
		// docs/report-format.md §1: verdicts.json also lives in <session>/analysis/.
		if vj, err := analyze.RenderVerdictsJSON(rep); err == nil {
			if err := writeAnalysisFile(filepath.Join(dir, "analysis", analyze.VerdictsJSONFile), vj); err != nil {
				fmt.Fprintf(stderr, "warning: %v\n", err)
			}
		}
		if err := analyze.AppendSessionLog(rep, dir, time.Now()); err != nil {
			fmt.Fprintf(stderr, "warning: %v\n", err)
		}
	}
	if f.asJSON {
		js, err := analyze.RenderJSON(rep, cmp)
		if err != nil {
			return judged{}, fmt.Errorf("analyze: render report.json: %w", err)
		}
		stdout.Write(js)
	} else {
		fmt.Fprintf(stdout, "%s\nsession_verdict=%s\n", rep.Headline, rep.SessionVerdict)
		// Each plan scenario's verdict and its reason, one key per
		// scenario, for the agent's scenario report (docs/real-env-test.md §10.4).
		for _, sc := range rep.Scenarios {
			fmt.Fprintln(stdout, runner.FormatKV([][2]string{{"verdict." + sc.ID, string(sc.Verdict)}}))
			if why := sc.Why(); why.Text != "" {
				fmt.Fprintln(stdout, runner.FormatKV([][2]string{{"reason." + sc.ID, oneline.First(why.String())}}))
			}
		}
		fmt.Fprintf(stdout, "report=%s\n", filepath.Join(out, analyze.ReportMarkdownFile))
	}
	j := judged{verdict: rep.SessionVerdict}
	for _, sc := range rep.Scenarios {
		j.scenarios = append(j.scenarios, judgedScenario{ID: sc.ID, Verdict: sc.Verdict})
	}
	return j, nil
}

// previousComparison finds the earlier session of the same plan and
// compares with it: from its report.json when analyze already ran there,
// else by analyzing it now (in memory, nothing written into it).
func previousComparison(cmd *cobra.Command, rep *analyze.Report, p *plan.Plan, opts analyze.Options) *analyze.Comparison {
	// analyze.Analyze already looked for the previous session.
	prevDir := rep.PreviousDir
	if prevDir == "" {
		return nil
	}
	prev, err := analyze.LoadReportJSON(analyze.PreviousReportPath(prevDir))
	if err != nil {
		var aerr error
		prev, aerr = analyze.Analyze(cmd.Context(), prevDir, p, opts)
		if aerr != nil || prev == nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: previous session %s not compared: %v\n", prevDir, errors.Join(err, aerr))
			return nil
		}
	}
	if prev.PlanSlug != rep.PlanSlug {
		return nil
	}
	return analyze.Compare(prev, rep)
}

func analyzeBenchRun(cmd *cobra.Command, dir string, f analyzeFlags, stdout, stderr io.Writer) (analyze.SessionVerdict, error) {
	opts := bench.Options{MaxErrorRate: f.maxErrorRate, CheckTimeout: f.checkTimeout}
	if err := benchOracle(&opts, dir, f, stderr); err != nil {
		return "", err
	}
	b, err := bench.Analyze(cmd.Context(), dir, opts)
	if err != nil {
		return "", fmt.Errorf("analyze: %w", err)
	}
	for _, pr := range b.Problems {
		fmt.Fprintf(stderr, "problem: %s\n", pr)
	}
	out := f.out
	if out == "" {
		out = filepath.Join(dir, session.FindingsDir)
	}
	if werr := bench.WriteReport(b, out); werr != nil {
		return "", reportNotWritten(stdout, out, werr, bench.RenderMarkdown(b))
	}
	if f.asJSON {
		data, err := bench.RenderJSON(b)
		if err != nil {
			return "", fmt.Errorf("analyze: render report.json: %w", err)
		}
		stdout.Write(data)
	} else {
		// One vocabulary for every kind of result: session_verdict= as a
		// plan session prints it (docs/real-env-test.md §10.4).
		fmt.Fprintf(stdout, "%s\nsession_verdict=%s\nreport=%s\n", b.Headline, b.SessionVerdict, filepath.Join(out, analyze.ReportMarkdownFile))
	}
	return b.SessionVerdict, nil
}

// benchOracle decides which checker judges a benchmark run's histories:
// --model (and --checker) when given; else what `dstgen bench start`
// recorded in benchmark/bench.params, so `dstgen analyze results/` judges a
// run the same as `task analyze` does; only a run that recorded none (from
// an older dstgen, or made by hand) falls back to --env's benchmark.model.
func benchOracle(opts *bench.Options, dir string, f analyzeFlags, stderr io.Writer) error {
	model, checker, recorded := bench.RecordedOracle(dir)
	source := filepath.Join(session.BenchmarkDir, session.BenchParamsFile)
	var e *env.Env
	if f.envFile != "" {
		var err error
		if e, err = env.Load(f.envFile); err != nil {
			return fmt.Errorf("analyze: --env: %w", err)
		}
	}
	switch {
	case f.model != "":
		// A --model without --checker takes the model's default, not the
		// checker recorded (or in env.yml) for another model.
		model, checker, source = f.model, f.checker, "--model"
	case recorded:
		if e != nil && (e.Benchmark.Model != model || e.Benchmark.Checker != checker) {
			fmt.Fprintf(stderr, "note: %s was started with model %q checker %q (%s); %s now says model %q checker %q: judged as started\n",
				dir, model, checker, source, e.Path, e.Benchmark.Model, e.Benchmark.Checker)
		}
	case e != nil:
		model, checker, source = e.Benchmark.Model, e.Benchmark.Checker, e.Path
	default:
		source = ""
	}
	if f.model == "" && f.checker != "" {
		checker = f.checker
		source += " and --checker"
	}
	if f.checker != "" && model == "" {
		return errors.New("analyze: --checker needs a model (--model, the run's bench.params or benchmark.model in --env)")
	}
	opts.Model, opts.Checker, opts.OracleSource = model, checker, strings.TrimPrefix(source, " and ")
	return nil
}

// reportNotWritten applies the write-failure rule of docs/report-format.md §1:
// the full report goes to stdout and the failure is said explicitly.
func reportNotWritten(stdout io.Writer, out string, werr error, md []byte) error {
	fmt.Fprintf(stdout, "REPORT NOT WRITTEN to %s (%v); full report follows:\n\n", out, werr)
	stdout.Write(md)
	return fmt.Errorf("analyze: findings were NOT written to %s: %w", out, werr)
}

func writeAnalysisFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
