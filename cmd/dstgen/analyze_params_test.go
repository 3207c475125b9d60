package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/testsupport/fixture"
)

// `dstgen analyze results/`, run from testing/ as the design card says,
// judges a benchmark run with the oracle `bench start` recorded in its
// bench.params — the same verdict `task analyze` (with --env) reaches, and
// env.yml changed since the run does not change it; a declared checker that
// could not run on the run's histories is inconclusive with the reason,
// never a pass. (Before bench.params carried the oracle, the first case
// printed "no model named: linearizability not checked" and passed.)
func TestAnalyzeBenchRunJudgedAsStarted(t *testing.T) {
	fx := analyzeFixtures(t)
	collected := filepath.Join(fx, "benchruns", "collected", "run_20261201_100000")
	nativeRun := filepath.Join(fx, "benchruns", "results", "run_20261128_100000")
	const started = "run_id=20261201_100000\nhost=client\nrate=0\nduration_s=20\nmode=mixed\ndataset=\nseed=from-run-id\nmodel=kv\nchecker=linearizability\n"
	// testing/ holds env.yml and results/ with one run, as a workflow leaves it.
	layout := func(t *testing.T, src, params, envModel string, extra func(run string)) string {
		t.Helper()
		testing := filepath.Join(t.TempDir(), "testing")
		run := filepath.Join(testing, "results", filepath.Base(src))
		fixture.CopyDir(t, src, run)
		if params != "" {
			checkWriteFileAt(t, filepath.Join(run, "benchmark", "bench.params"), params)
		}
		checkWriteFileAt(t, filepath.Join(testing, "env.yml"), "hosts:\n  - {name: client, address: 127.0.0.1, roles: [client]}\nbenchmark:\n  model: "+envModel+"\n")
		if extra != nil {
			extra(run)
		}
		return testing
	}
	for _, tc := range []struct {
		name    string
		src     string
		params  string
		env     string // benchmark.model of env.yml by now
		extra   func(run string)
		args    []string
		code    int
		verdict string
		want    string // in stdout
		stderr  string
	}{
		{name: "the card's command judges with the recorded checker", src: collected, params: started, env: "", args: []string{"results/"},
			code: 0, verdict: "DONE", want: "linearizability judged 1 of 1 histories valid"},
		{name: "as task analyze does", src: collected, params: started, env: "kv", args: []string{"results", "--env", "env.yml"},
			code: 0, verdict: "DONE", want: "linearizability judged 1 of 1 histories valid"},
		{name: "env.yml changed since the run: judged as started", src: collected, params: started, env: "", args: []string{"results/", "--env", "env.yml"},
			code: 0, verdict: "DONE", want: "linearizability judged", stderr: "judged as started"},
		{name: "a run started without a model", src: collected, params: strings.Replace(strings.Replace(started, "model=kv", "model=", 1), "checker=linearizability", "checker=", 1), env: "kv", args: []string{"results/", "--env", "env.yml"},
			code: 1, verdict: "DONE_WITH_CONCERNS", want: "linearizability not checked"},
		{name: "declared checker, no history to run it on", src: nativeRun, params: started, env: "kv", args: []string{"results/"},
			code: 1, verdict: "INCONCLUSIVE", want: "no dst-history/1 history"},
		{name: "declared checker, a history it could not read", src: collected, params: started, env: "kv", args: []string{"results/"},
			extra: func(run string) {
				if err := os.Symlink("/nonexistent/history.jsonl", filepath.Join(run, "benchmark", "ghost.jsonl")); err != nil {
					t.Fatal(err)
				}
			},
			code: 1, verdict: "INCONCLUSIVE", want: "1 of 2 histories could not be read"},
		{name: "declared checker that does not exist", src: collected, params: strings.Replace(started, "checker=linearizability", "checker=nosuchchecker", 1), env: "kv", args: []string{"results/"},
			code: 1, verdict: "INCONCLUSIVE", want: "nosuchchecker"},
		{name: "a checker without a model", src: collected, params: strings.Replace(started, "model=kv", "model=", 1), env: "kv", args: []string{"results/"},
			code: 1, verdict: "INCONCLUSIVE", want: "declared without a model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(layout(t, tc.src, tc.params, tc.env, tc.extra))
			// The fixture's history has 2.5% failed ops, on purpose.
			code, stdout, stderr := runAnalyzeCLI(t, append(tc.args, "--max-error-rate", "0.05")...)
			kv := kvOf(stdout)
			if code != tc.code || kv["session_verdict"] != tc.verdict || !strings.Contains(stdout, tc.want) || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d session_verdict=%s, want %d %s with %q (stderr %q)\nstdout:\n%s\nstderr:\n%s",
					code, kv["session_verdict"], tc.code, tc.verdict, tc.want, tc.stderr, stdout, stderr)
			}
			if _, ok := kv["benchmark_result"]; ok {
				t.Errorf("a second verdict key: %s", stdout)
			}
		})
	}
}

func checkWriteFileAt(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
