package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	analyzebench "github.com/dstgen/dstgen/analyze/bench"
	"github.com/dstgen/dstgen/deploy"
	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/dstgen/dstgen/internal/oneline"
	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/session"
	"github.com/spf13/cobra"
)

// exitBenchFailed is `bench status`'s code for a benchmark job that
// finished with a non-zero exit code: it ended, and it failed — neither
// 0 (finished ok) nor 1 (running), 2 (lost) or 3 (unreachable)
// (docs/real-env-test.md §5).
const exitBenchFailed = 4

// benchSettle is how long `bench start` watches a job it just started
// before answering: a command that fails on its flags, its endpoints or a
// missing file is done by then, and is a failed start, never "started".
const benchSettle = time.Second

// maxErrorLine bounds the error line quoted from a job's output.
const maxErrorLine = 300

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "The benchmark as a detached job: start, status, collect",
	}
	cmd.AddCommand(newBenchStartCmd(), newBenchStatusCmd(), newBenchCollectCmd())
	return cmd
}

// benchJob is the job id of run id.
func benchJob(runID string) string { return "bench-" + runID }

// checkRunID is the --run-id every bench subcommand needs.
func checkRunID(what, runID string) error {
	if runID == "" {
		return fmt.Errorf("bench %s: --run-id is required", what)
	}
	if err := runner.ValidateJobID(benchJob(runID)); err != nil {
		return fmt.Errorf("bench %s: --run-id: %w", what, err)
	}
	return nil
}

// benchTarget is the bench host: --host, else parameters.bench_host, else
// the first client host.
func benchTarget(e *env.Env, host string) (env.Host, error) {
	if host == "" {
		host = benchHost(e)
	}
	i := slices.IndexFunc(e.Hosts, func(h env.Host) bool { return h.Name == host })
	if i < 0 {
		return env.Host{}, fmt.Errorf("%s: bench host %q is not a host of env.yml", e.Path, host)
	}
	return e.Hosts[i], nil
}

func newBenchStartCmd() *cobra.Command {
	var f deployFlags
	var runID, host, outDir string
	start := &cobra.Command{
		Use:   "start --run-id ID",
		Short: "Render benchmark.command for the bench host and start it as job bench-<ID> (answers in ~2 s)",
		Long: `Render benchmark.command for the bench host (a per-host template: the
SUT's endpoints come from the hosts of its roles) and start it as the
detached job bench-<ID> in <workdir>/results/<ID>/, with the driver
contract's variables set: DSTGEN_RUN_ID, DSTGEN_SEED (when benchmark.seed or
--set seed= gives one), DSTGEN_HISTORY, DSTGEN_DURATION_S, DSTGEN_RATE,
DSTGEN_MODE, DSTGEN_DATASET, DSTGEN_SUT_HOSTS, DSTGEN_HOSTS_<ROLE>.
--set overrides benchmark values for this run only.

What the run was started with — rate, duration, mode, dataset, seed, and
the oracle benchmark.model / benchmark.checker — is recorded beside its
results as bench.params, so every later analysis of the run judges it
with the checker it was started with.

The job is watched for a second: a command that exits non-zero by then
(bad flags, unreachable endpoints, a missing file) is a failed start.

Prints the job's status line and "benchmark_started pid=N run_id= job= host=";
a failed start prints "benchmark_failed rc=N run_id= job= host= error=<the
command's first stderr line>" and says the same on stderr.
Exit 0 started, 1 failed at once or already running with another command,
2 bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkRunID("start", runID); err != nil {
				return err
			}
			d, err := f.openDeployer(cmd.OutOrStdout())
			if err != nil {
				return err
			}
			defer d.Pool.Close()
			if host == "" {
				host = benchHost(d.Env)
			}
			i := slices.IndexFunc(d.Hosts, func(h deploy.Host) bool { return h.Name == host })
			if i < 0 {
				return fmt.Errorf("%s: bench host %q is not a host of env.yml", d.Env.Path, host)
			}
			h := d.Hosts[i]
			if strings.TrimSpace(d.Env.Benchmark.Command) == "" || strings.Contains(d.Env.Benchmark.Command, "TODO(") {
				return fmt.Errorf("%s: benchmark.command is not set (still empty or a TODO)", d.Env.Path)
			}
			command, err := env.Render("benchmark.command", d.Env.Benchmark.Command, h.Facts)
			if err != nil {
				return err
			}
			switch {
			case outDir == "":
				outDir = path.Join(h.Workdir, "results", runID)
			case !path.IsAbs(outDir):
				outDir = path.Join(h.Workdir, outDir) // relative to the host's own work dir
			}
			// What this run was asked to do, beside its results: the
			// analyzer's target rate is the one the run had, overrides
			// included, and its checker the one declared when it started,
			// not whatever env.yml says by then.
			b := d.Env.Benchmark
			var lines []string
			for _, kv := range benchParams(runID, host, b) {
				lines = append(lines, kv[0]+"="+kv[1])
			}
			if _, err := d.Run(cmd.Context(), h, "mkdir -p "+shell.Quote(outDir)+" && printf '%s\\n' "+shell.QuoteArgs(lines)+" >"+shell.Quote(path.Join(outDir, session.BenchParamsFile))); err != nil {
				return exitcode.New(exitcode.NotSo, fmt.Errorf("bench start on %s: record parameters: %w", host, err))
			}
			vars := d.Env.WorkloadEnv(env.WorkloadInput{RunID: runID, Seed: d.Env.Benchmark.Seed,
				HistoryPath: path.Join(outDir, "history.jsonl"), Benchmark: d.Env.Benchmark})
			argv := append([]string{"env"}, vars...)
			argv = append(argv, "bash", path.Join(h.Workdir, "scripts", "remote-setup.sh"), "bench", outDir, strings.TrimSpace(command))
			job := benchJob(runID)
			st, err := runner.StartJob(cmd.Context(), d.Pool, h.Host, h.Workdir, job, argv)
			if err != nil {
				return exitcode.New(exitcode.NotSo, fmt.Errorf("bench start on %s: %w", host, err))
			}
			if st.Status != runner.StatusFinished {
				st = settle(cmd.Context(), d.Pool, h.Host, h.Workdir, job, st)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintln(w, runner.FormatKV(st.Fields()))
			if st.Status == runner.StatusFinished && st.RC != nil && *st.RC != 0 {
				line := jobErrorLine(cmd.Context(), d.Pool, h.Host, job)
				fmt.Fprintln(w, "benchmark_failed "+runner.FormatKV([][2]string{{"rc", strconv.Itoa(*st.RC)}, {"run_id", runID}, {"job", job}, {"host", host}, {"error", line}}))
				return exitcode.New(exitcode.NotSo, fmt.Errorf("bench start: benchmark %s on %s exited %d at once: %s", job, host, *st.RC, line))
			}
			// The contract's marker line: "benchmark_started pid=<PID> ...".
			fmt.Fprintln(w, "benchmark_started "+runner.FormatKV([][2]string{{"pid", pidString(st.PID)}, {"run_id", runID}, {"job", job}, {"host", host}}))
			return nil
		},
	}
	f.register(start)
	start.Flags().StringVar(&runID, "run-id", "", "run id (the Taskfile's RUN_ID)")
	start.Flags().StringVar(&host, "host", "", "host to run on (default parameters.bench_host)")
	start.Flags().StringVar(&outDir, "out", "", "remote results dir; relative = below the host's work dir (default results/<ID>)")
	return start
}

// benchParams are the bench.params lines: what the run was started with,
// the oracle included (docs/real-env-test.md §12).
func benchParams(runID, host string, b env.Benchmark) [][2]string {
	return [][2]string{{"run_id", runID}, {"host", host}, {"rate", strconv.FormatFloat(b.Rate, 'f', -1, 64)},
		{"duration_s", strconv.Itoa(b.Duration)}, {"mode", b.Mode}, {"dataset", b.Dataset}, {"seed", seedParam(b.Seed)},
		{"model", b.Model}, {"checker", b.Checker}}
}

// settle looks at a just-started job once more after benchSettle; st is
// kept when the host does not answer (the job was started: status finds
// out the rest).
func settle(ctx context.Context, pool *runner.Pool, h env.Host, workdir, job string, st runner.JobStatus) runner.JobStatus {
	t := time.NewTimer(benchSettle)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return st
	case <-t.C:
	}
	if now, err := runner.JobStatusOf(ctx, pool, h, workdir, job); err == nil {
		return now
	}
	return st
}

// jobErrorLine is the first non-blank line of job's stderr on h (the
// command's own error), else the last line of its stdout, cut to one
// line; "" when both are empty or the host did not answer.
func jobErrorLine(ctx context.Context, pool *runner.Pool, h env.Host, job string) string {
	d := `"$DSTGEN_WORKDIR"/jobs/` + shell.Quote(job)
	out, err := runner.Script(ctx, pool, h, `l=$(sed -n '/[^[:space:]]/{p;q;}' `+d+`/stderr 2>/dev/null | head -c 2000)
if [ -z "$l" ]; then l=$(grep -v '^[[:space:]]*$' `+d+`/stdout 2>/dev/null | tail -n 1 | head -c 2000); fi
printf '%s' "$l"`)
	if err != nil {
		return ""
	}
	return oneline.Cut(out, maxErrorLine)
}

func newBenchStatusCmd() *cobra.Command {
	var f runnerFlags
	var runID, host string
	cmd := &cobra.Command{
		Use:   "status --run-id ID",
		Short: "The benchmark job's state (exit 0 finished ok, 1 running, 2 lost/absent, 3 unreachable, 4 finished with a failure)",
		Long: `Report the state of the benchmark job bench-<ID> on the bench host in one
round trip (within about 1 s) as key=value lines: status=running|finished|
lost|absent job= pid= rc= elapsed= host=. A job that finished with a
non-zero rc adds error=<the command's first stderr line> and says it on
stderr too: the benchmark failed, which is not "finished".

A host that does not answer within the bound prints status=unreachable
job= host= error= and exits 3: that says nothing about the job; poll again.

Exit: 0 finished with rc 0; 1 running; 2 lost, absent or error; 3 host
unreachable; 4 finished with a non-zero rc (the benchmark failed).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkRunID("status", runID); err != nil {
				return err
			}
			e, pool, err := f.open()
			if err != nil {
				return fmt.Errorf("bench status: %w", err)
			}
			defer pool.Close()
			h, err := benchTarget(e, host)
			if err != nil {
				return err
			}
			job := benchJob(runID)
			st, err := runner.JobStatusOf(cmd.Context(), pool, h, e.HostWorkdir(h), job)
			if ok, uerr := unreachable(cmd.OutOrStdout(), f.json, st, err); ok {
				fmt.Fprintf(cmd.ErrOrStderr(), "dstgen: %v\n", err)
				return uerr
			}
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if st.Status == runner.StatusFinished && st.RC != nil && *st.RC != 0 {
				line := jobErrorLine(cmd.Context(), pool, h, job)
				if err := printJob(w, f.json, false, st); err != nil {
					return err
				}
				if !f.json {
					fmt.Fprintln(w, runner.FormatKV([][2]string{{"error", line}}))
				}
				return exitcode.New(exitBenchFailed, fmt.Errorf("bench status: benchmark %s on %s exited %d: %s", job, h.Name, *st.RC, line))
			}
			if err := printJob(w, f.json, false, st); err != nil {
				return err
			}
			return statusExit(st)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&runID, "run-id", "", "run id (the Taskfile's RUN_ID)")
	cmd.Flags().StringVar(&host, "host", "", "bench host (default parameters.bench_host)")
	return cmd
}

// benchPiece is one thing `bench collect` brings back: a remote path on
// some hosts and the local directory its contents land in.
type benchPiece struct {
	name   string // benchmark, job, metrics, logs
	remote string // relative to the host's work dir, or absolute
	// into is the local dir; contents lands the remote directory's
	// contents there (not the directory under its own name); files, when
	// set, are the only files of the remote directory taken (into lands
	// them by name).
	into     string
	contents bool
	files    []string
}

func newBenchCollectCmd() *cobra.Command {
	var f runnerFlags
	var runID, host, outDir, into string
	cmd := &cobra.Command{
		Use:   "collect --run-id ID",
		Short: "Pull a benchmark run into results/run_<ID>/ (results, the job's output, metrics, logs); exit 1 when its history is missing or its job failed",
		Long: `Pull everything of benchmark run ID over SFTP (sha256-verified) into
--into (default results/run_<ID>):

  benchmark/           what benchmark.command wrote (history.jsonl, bench.params, reports)
  benchmark/job/       the job's own stdout, stderr and rc
  metrics/<bench host>/  vmstat.log, iostat.log, mpstat.log, top.log, start_time, end_time
  logs/<host>/         every host's journals, dmesg, mounts, the SUT's own output

Output, key=value: one "piece= host= files= dir=" line per piece (status=
missing when the host has none of it), then job= rc=, history=<path or
missing> and results_dir=.

Exit: 0 every piece there and the history present; 1 the history is
missing, the job failed (rc != 0) or has not finished, or a file failed
sha256 verification — named on stderr with the job's first error line;
2 bad input, a rejected name or a host error (what arrived is kept).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkRunID("collect", runID); err != nil {
				return err
			}
			e, pool, err := f.open()
			if err != nil {
				return fmt.Errorf("bench collect: %w", err)
			}
			defer pool.Close()
			bh, err := benchTarget(e, host)
			if err != nil {
				return err
			}
			if into == "" {
				into = filepath.Join("results", "run_"+runID)
			}
			if outDir == "" {
				outDir = path.Join("results", runID)
			}
			if err := runner.HostDirName(bh.Name); err != nil {
				return fmt.Errorf("bench collect: %w", err)
			}
			job := benchJob(runID)
			bench := filepath.Join(into, session.BenchmarkDir)
			pieces := map[string][]benchPiece{bh.Name: {
				{name: "benchmark", remote: outDir, into: bench, contents: true},
				{name: "job", remote: path.Join("jobs", job), into: filepath.Join(bench, "job"), files: []string{"stdout", "stderr", "rc"}},
				{name: "metrics", remote: path.Join("metrics", runID), into: filepath.Join(into, session.MetricsDir, bh.Name), contents: true},
			}}
			for _, h := range e.Hosts {
				if err := runner.HostDirName(h.Name); err != nil {
					return fmt.Errorf("bench collect: %w", err)
				}
				pieces[h.Name] = append(pieces[h.Name], benchPiece{name: "logs", remote: path.Join("logs", runID), into: filepath.Join(into, session.LogsDir, h.Name), contents: true})
			}
			var all []runner.FileResult
			w := cmd.OutOrStdout()
			for _, h := range e.Hosts {
				ps := pieces[h.Name]
				if len(ps) == 0 {
					continue
				}
				res, err := collectPieces(cmd.Context(), pool, h, e.HostWorkdir(h), ps, w)
				all = append(all, res...)
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "dstgen: bench collect: %v\n", err)
					all = append(all, runner.FileResult{Host: h.Name, Status: runner.FileError, Reason: err.Error()})
				}
			}
			for _, r := range all {
				if r.Status != runner.FileOK {
					fmt.Fprintln(w, runner.FormatKV(r.Fields()))
				}
			}
			return benchVerdictOfCollect(w, cmd.ErrOrStderr(), into, job, bh.Name, all)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&runID, "run-id", "", "run id (the Taskfile's RUN_ID)")
	cmd.Flags().StringVar(&host, "host", "", "bench host (default parameters.bench_host)")
	cmd.Flags().StringVar(&outDir, "out", "", "the remote results dir bench start used; relative = below the host's work dir (default results/<ID>)")
	cmd.Flags().StringVar(&into, "into", "", "local run directory (default results/run_<ID>)")
	return cmd
}

// collectPieces brings ps back from h: one round trip finds which of them
// (and which of their named files) exist, then one SFTP collect per
// present piece. A piece the host does not have is a status=missing line,
// not an error.
func collectPieces(ctx context.Context, pool *runner.Pool, h env.Host, workdir string, ps []benchPiece, w io.Writer) ([]runner.FileResult, error) {
	roots := make([]string, len(ps))
	var probe strings.Builder
	for i, p := range ps {
		r, err := runner.ResolveRemote(workdir, p.remote)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		roots[i] = r
		if len(p.files) == 0 {
			fmt.Fprintf(&probe, "if [ -e %s ]; then echo %d; fi\n", remoteWord(r), i)
		}
		for j, f := range p.files {
			fmt.Fprintf(&probe, "if [ -f %s ]; then echo %d/%d; fi\n", remoteWord(path.Join(r, f)), i, j)
		}
	}
	out, err := runner.Script(ctx, pool, h, probe.String())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.Name, err)
	}
	present := map[string]bool{}
	for _, l := range strings.Fields(out) {
		present[l] = true
	}
	var all []runner.FileResult
	for i, p := range ps {
		remotes := []string{roots[i]}
		if len(p.files) > 0 {
			remotes = nil
			for j, f := range p.files {
				if present[fmt.Sprintf("%d/%d", i, j)] {
					remotes = append(remotes, path.Join(roots[i], f))
				}
			}
		} else if !present[strconv.Itoa(i)] {
			remotes = nil
		}
		kv := [][2]string{{"piece", p.name}, {"host", h.Name}}
		if len(remotes) == 0 {
			fmt.Fprintln(w, runner.FormatKV(append(kv, [2]string{"status", "missing"}, [2]string{"remote", roots[i]})))
			continue
		}
		res, err := collectPiece(ctx, pool, h, remotes, p)
		if err != nil {
			return all, err
		}
		n := 0
		for _, r := range res {
			if r.Status == runner.FileOK {
				n++
			}
		}
		all = append(all, res...)
		fmt.Fprintln(w, runner.FormatKV(append(kv, [2]string{"status", "ok"}, [2]string{"files", strconv.Itoa(n)}, [2]string{"dir", p.into})))
	}
	return all, nil
}

// remoteWord is a remote path as a shell word, a leading ~ left to the
// remote shell.
func remoteWord(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return `"$HOME"/` + shell.Quote(rest)
	}
	return shell.Quote(p)
}

// collectPiece collects one remote directory. runner.Collect lands a
// directory under its own name, so it goes through a hidden staging dir
// beside p.into and its contents are moved into place.
func collectPiece(ctx context.Context, pool *runner.Pool, h env.Host, remotes []string, p benchPiece) ([]runner.FileResult, error) {
	if !p.contents {
		return runner.Collect(ctx, pool, h, remotes, p.into, nil)
	}
	remote := remotes[0]
	stage := filepath.Join(filepath.Dir(p.into), ".incoming-"+filepath.Base(p.into))
	if err := os.RemoveAll(stage); err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	res, err := runner.Collect(ctx, pool, h, remotes, stage, nil)
	if err != nil {
		return res, err
	}
	src := filepath.Join(stage, path.Base(remote))
	ents, err := os.ReadDir(src)
	if err != nil {
		return res, nil // nothing arrived (every file rejected): the results say why
	}
	if err := os.MkdirAll(p.into, 0o755); err != nil {
		return res, err
	}
	for _, ent := range ents {
		dst := filepath.Join(p.into, ent.Name())
		if err := os.RemoveAll(dst); err != nil {
			return res, err
		}
		if err := os.Rename(filepath.Join(src, ent.Name()), dst); err != nil {
			return res, err
		}
	}
	for i := range res {
		if rel, err := filepath.Rel(src, res[i].File); err == nil && filepath.IsLocal(rel) {
			res[i].File = filepath.Join(p.into, rel)
		}
	}
	return res, nil
}

// benchVerdictOfCollect prints job=, history= and results_dir= and
// decides collect's exit: the history must be there and the job must have
// ended with rc 0, or the run is not a result (docs/real-env-test.md §4).
func benchVerdictOfCollect(w, stderr io.Writer, into, job, host string, res []runner.FileResult) error {
	jobDir := filepath.Join(into, session.BenchmarkDir, "job")
	rc := ""
	if b, err := os.ReadFile(filepath.Join(jobDir, "rc")); err == nil {
		rc = strings.TrimSpace(string(b))
	}
	fmt.Fprintln(w, runner.FormatKV([][2]string{{"job", job}, {"rc", rc}}))
	hist := filepath.Join(into, session.BenchmarkDir, "history.jsonl")
	histOK := nonEmptyFile(hist)
	if histOK {
		fmt.Fprintln(w, runner.FormatKV([][2]string{{"history", hist}}))
	} else {
		fmt.Fprintln(w, runner.FormatKV([][2]string{{"history", "missing"}}))
	}
	fmt.Fprintln(w, runner.FormatKV([][2]string{{"results_dir", into}}))
	// The history is the result the driver contract asks for; a benchmark
	// tool that writes only *.json reports (fio, k6) has a result too, unless
	// the run declared a model, whose checker needs the history.
	model, _, _ := analyzebench.RecordedOracle(into)
	reports, _ := filepath.Glob(filepath.Join(into, session.BenchmarkDir, "*.json"))
	var missing string
	switch {
	case histOK:
	case model != "":
		missing = fmt.Sprintf("no history: %s is missing or empty, and the run declared model %s, whose checker needs it (benchmark.command must write DSTGEN_HISTORY)", hist, model)
	case len(reports) == 0:
		missing = fmt.Sprintf("no history: %s is missing or empty and benchmark/ holds no *.json report either (benchmark.command must write DSTGEN_HISTORY)", hist)
	}

	errLine := localErrorLine(jobDir)
	why := func(s string) string {
		if errLine != "" {
			s += ": " + errLine
		}
		return s + " (its output: " + filepath.Join(jobDir, "stderr") + ")"
	}
	var problems []string
	switch {
	case rc == "":
		problems = append(problems, fmt.Sprintf("job %s on %s has no exit code (not finished, or its job dir is gone: run task -x bench:stop first)", job, host))
	case rc != "0":
		problems = append(problems, why(fmt.Sprintf("job %s on %s exited %s", job, host, rc)))
	}
	if missing != "" {
		if rc == "0" {
			missing = why(missing)
		}
		problems = append(problems, missing)
	}
	code := filesCode(res)
	if len(problems) > 0 {
		code = max(code, exitcode.NotSo)
		for _, p := range problems[:len(problems)-1] {
			fmt.Fprintf(stderr, "dstgen: bench collect: %s\n", p)
		}
		return exitcode.New(code, errors.New("bench collect: "+problems[len(problems)-1]))
	}
	if code != exitcode.OK {
		return exitcode.New(code, errors.New("bench collect: some files did not arrive intact (the lines above)"))
	}
	return nil
}

func nonEmptyFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Size() > 0
}

// localErrorLine is jobErrorLine on the collected copy of a job's output.
func localErrorLine(jobDir string) string {
	for _, stream := range []string{"stderr", "stdout"} {
		b, err := os.ReadFile(filepath.Join(jobDir, stream))
		if err != nil {
			continue
		}
		if stream == "stderr" {
			if l := oneline.Cut(string(b), maxErrorLine); l != "" {
				return l
			}
			continue
		}
		return oneline.Cut(oneline.Last(string(b)), maxErrorLine)
	}
	return ""
}
