package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// analyzeFixtures copies analyze/testdata (sessions, plans, benchmark runs)
// into a temp dir, because analyze writes findings into the session.
func analyzeFixtures(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "analyze", "testdata"))); err != nil {
		t.Fatalf("copy fixtures: %v", err)
	}
	// The benchmark-run fixtures live with their package, analyze/bench.
	if err := os.CopyFS(filepath.Join(dir, "benchruns"), os.DirFS(filepath.Join("..", "..", "analyze", "bench", "testdata", "benchruns"))); err != nil {
		t.Fatalf("copy benchmark fixtures: %v", err)
	}
	return dir
}

func runAnalyzeCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"analyze"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestAnalyzeExitCodes(t *testing.T) {
	fx := analyzeFixtures(t)
	q := filepath.Join(fx, "sessions", "quorumkv-core-guarantees")
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		stdout  string
		stderr  string
		written string // file expected afterwards
	}{
		{"missing dir", []string{filepath.Join(fx, "absent")}, 2, "", "no such file", ""},
		{"not a dir", []string{filepath.Join(fx, "plan.md")}, 2, "", "not a directory", ""},
		{"unreadable plan", []string{q, "--plan", filepath.Join(fx, "absent.md")}, 2, "", "read plan", ""},
		{"negative timeout", []string{q, "--check-timeout", "-1s"}, 2, "", "negative", ""},
		{"bad error rate", []string{q, "--max-error-rate", "2"}, 2, "", "fraction", ""},
		{"done session", []string{filepath.Join(fx, "sessions", "mini", "20260610T100000Z")}, 0, "session_verdict=DONE\n", "",
			"sessions/mini/20260610T100000Z/findings/report.md"},
		{"blocked session", []string{filepath.Join(fx, "sessions", "mini", "20260611T100000Z")}, 1, "session_verdict=BLOCKED\n", "",
			"sessions/mini/20260611T100000Z/findings/junit.xml"},
		{"fail session", []string{filepath.Join(q, "20260602T100000Z")}, 1, "session_verdict=FAIL\n", "",
			"sessions/quorumkv-core-guarantees/20260602T100000Z/analysis/verdicts.json"},
		// reason.<ID>= is the reason that set the verdict: S3's read the
		// budget-tier warning recorded after it.
		{"reason line is the deciding reason", []string{filepath.Join(q, "20260601T100000Z")}, 1,
			"verdict.S3=INCONCLUSIVE-fault-not-proven\nreason.S3=\"landing signal absent or ambiguous: S3-w1", "", ""},
		{"results root takes newest", []string{q}, 1, "20260606T100000Z/findings/report.md", "",
			"sessions/quorumkv-core-guarantees/20260606T100000Z/findings/report.html"},
		{"garbage history lines are problems, analysis goes on", []string{filepath.Join(q, "20260605T100000Z")}, 1, "session_verdict=INCONCLUSIVE\n",
			"artifacts/S1/history.jsonl:57:", "sessions/quorumkv-core-guarantees/20260605T100000Z/findings/S1.md"},
		{"failing benchmark run", []string{filepath.Join(fx, "benchruns", "results")}, 1, "session_verdict=FAIL\n", "broken.json:5:",
			"benchruns/results/run_20261129_100000/findings/report.html"},
		{"benchmark under a looser threshold", []string{filepath.Join(fx, "benchruns", "results", "run_20261129_100000"), "--max-error-rate", "0.05"}, 0, "session_verdict=DONE\n", "", ""},
		{"healthy benchmark run", []string{filepath.Join(fx, "benchruns", "results", "run_20261128_100000")}, 0, "session_verdict=DONE\n", "",
			"benchruns/results/run_20261128_100000/findings/report.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runAnalyzeCLI(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stdout, tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, stdout)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, stderr)
			}
			if tc.code == 2 && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("bad input must be one line, got:\n%s", stderr)
			}
			if tc.written != "" {
				if st, err := os.Stat(filepath.Join(fx, tc.written)); err != nil || st.Size() == 0 {
					t.Errorf("%s not written: %v", tc.written, err)
				}
			}
		})
	}
}

// A healthy benchmark run analyzed as `task analyze` calls it (with the
// plan) writes nothing to stderr: nothing went wrong, and stderr is what
// the test-runner agent quotes as the error.
func TestAnalyzeBenchRunWithPlanIsQuiet(t *testing.T) {
	fx := analyzeFixtures(t)
	code, stdout, stderr := runAnalyzeCLI(t, filepath.Join(fx, "benchruns", "results", "run_20261128_100000"), "--plan", filepath.Join(fx, "plan.md"))
	if code != 0 || !strings.Contains(stdout, "session_verdict=DONE\n") || stderr != "" {
		t.Errorf("exit %d, stdout %q, stderr %q: want 0, DONE and an empty stderr", code, stdout, stderr)
	}
}

// TestAnalyzeEndToEndSession runs the whole pipeline on a fixture session
// with an earlier session beside it and checks the artefacts a reviewer and
// a CI system read.
func TestAnalyzeEndToEndSession(t *testing.T) {
	fx := analyzeFixtures(t)
	sess := filepath.Join(fx, "sessions", "quorumkv-core-guarantees", "20260606T100000Z")
	code, stdout, stderr := runAnalyzeCLI(t, sess, "--plan", filepath.Join(fx, "plan.md"))
	if code != 1 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if first := strings.SplitN(stdout, "\n", 2)[0]; !strings.Contains(first, "nondeterministic") {
		t.Errorf("headline not printed first: %q", first)
	}
	md, err := os.ReadFile(filepath.Join(sess, "findings", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	var hs []string
	for _, l := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(l, "## ") {
			hs = append(hs, l)
		}
	}
	want := []string{"## Summary", "## Changes since 20260605T100000Z", "## Scenario results", "## Findings", "## Coverage summary",
		"## Surface coverage (boundary and fairness scenarios)", "## Release-budget disclosures",
		"## Adequacy assessment vs the plan's coverage argument", "## Confidence delta", "## Green-but-broken check"}
	if strings.Join(hs, "\n") != strings.Join(want, "\n") {
		t.Errorf("sections:\n%s", strings.Join(hs, "\n"))
	}
	if !strings.Contains(string(md), "| S1 | PARTIAL-model → FAIL-nondeterministic |") {
		t.Errorf("verdict change since the previous session not shown")
	}
	for _, id := range []string{"S1", "S2", "S3", "S4", "S5"} {
		if _, err := os.Stat(filepath.Join(sess, "findings", id+".md")); err != nil {
			t.Errorf("findings/%s.md: %v", id, err)
		}
	}
	junit, err := os.ReadFile(filepath.Join(sess, "findings", "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
	}
	if err := xml.Unmarshal(junit, &doc); err != nil {
		t.Fatalf("junit.xml: %v", err)
	}
	if doc.Tests != 9 || doc.Failures != 1 || doc.Skipped != 8 {
		t.Errorf("junit tests=%d failures=%d skipped=%d, want 9/1/8", doc.Tests, doc.Failures, doc.Skipped)
	}

	page, err := os.ReadFile(filepath.Join(sess, "findings", "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Entity = xml.HTMLEntity
	for {
		if _, err := d.Token(); err != nil {
			if err != io.EOF {
				t.Fatalf("report.html not well-formed: %v", err)
			}
			break
		}
	}
	if n := bytes.Count(page, []byte(`<svg class="chart"`)); n != 7 {
		t.Errorf("report.html has %d charts, want one per scenario/arm with a workload (7)", n)
	}

	code, stdout, _ = runAnalyzeCLI(t, sess, "--json")
	var rep struct {
		Schema         string `json:"schema"`
		SessionVerdict string `json:"session_verdict"`
		Verdicts       struct {
			Scenarios []json.RawMessage `json:"scenarios"`
		} `json:"verdicts"`
		Changes *struct {
			Previous string `json:"previous_session"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, stdout)
	}
	if code != 1 || rep.Schema != "dst-report/1" || rep.SessionVerdict != "INCONCLUSIVE" || len(rep.Verdicts.Scenarios) != 5 || rep.Changes == nil || rep.Changes.Previous != "20260605T100000Z" {
		t.Errorf("--json: code %d, %+v", code, rep)
	}
}

func TestAnalyzeOutDirAndWriteFailure(t *testing.T) {
	fx := analyzeFixtures(t)
	sess := filepath.Join(fx, "sessions", "mini", "20260610T100000Z")
	out := filepath.Join(t.TempDir(), "elsewhere")
	if code, stdout, stderr := runAnalyzeCLI(t, sess, "--out", out); code != 0 || !strings.Contains(stdout, "report="+filepath.Join(out, "report.md")) {
		t.Fatalf("--out: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "report.md")); err != nil {
		t.Errorf("--out not honoured: %v", err)
	}
	if _, err := os.Stat(filepath.Join(sess, "findings")); err == nil {
		t.Errorf("findings written into the session although --out was given")
	}

	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{sess, filepath.Join(fx, "benchruns", "results", "run_20261128_100000")} {
		code, stdout, stderr := runAnalyzeCLI(t, target, "--out", filepath.Join(blocker, "findings"))
		if code != 2 {
			t.Errorf("%s: exit %d on an unwritable --out, want 2", target, code)
		}
		if !strings.Contains(stdout, "REPORT NOT WRITTEN") || !strings.Contains(stdout, "\n# ") || !strings.Contains(stderr, "NOT written") {
			t.Errorf("%s: write failure not stated or report not printed:\nstdout: %.300s\nstderr: %s", target, stdout, stderr)
		}
	}
}

// TestAnalyzeBenchRunJSON: --json on a benchmark run prints exactly the
// report.json it wrote, and that is the benchmark-run schema.
func TestAnalyzeBenchRunJSON(t *testing.T) {
	fx := analyzeFixtures(t)
	run := filepath.Join(fx, "benchruns", "results", "run_20261128_100000")
	code, stdout, stderr := runAnalyzeCLI(t, run, "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	var rep struct {
		Schema string `json:"schema"`
		ID     string `json:"id"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Schema != "dst-benchrun/1" || rep.ID != "run_20261128_100000" {
		t.Fatalf("--json output %+v, %v:\n%.300s", rep, err, stdout)
	}
	written, err := os.ReadFile(filepath.Join(run, "findings", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(written) != stdout {
		t.Errorf("--json output differs from findings/report.json")
	}
}

// A collected benchmark run holding only a dst-history/1 history is a
// benchmark result; without a record of its oracle (a run from before
// bench.params carried one) the model comes from env.yml (benchmark.model)
// or --model, which wins; a history no checker judged is a concern.
func TestAnalyzeBenchRunHistory(t *testing.T) {
	fx := analyzeFixtures(t)
	run := filepath.Join(fx, "benchruns", "collected", "run_20261201_100000")
	envWith := func(model string) string {
		return checkWriteFile(t, "env.yml", "hosts:\n  - {name: node1, address: 127.0.0.1, roles: [etcd]}\nbenchmark:\n  model: "+model+"\n")
	}
	badEnv := checkWriteFile(t, "bad.yml", "hosts: [\n")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"no model", []string{run, "--max-error-rate", "0.05"}, 1, "session_verdict=DONE_WITH_CONCERNS", ""},
		{"model from env.yml", []string{run, "--max-error-rate", "0.05", "--env", envWith("kv")}, 0, "linearizability judged 1 of 1 histories valid", ""},
		{"--model wins over env.yml", []string{run, "--max-error-rate", "0.05", "--env", envWith("nosuchmodel"), "--model", "kv"}, 0, "session_verdict=DONE", ""},
		{"unknown model from env.yml", []string{run, "--max-error-rate", "0.05", "--env", envWith("nosuchmodel")}, 1, "session_verdict=INCONCLUSIVE", "no default checker for model"},
		{"bad env file", []string{run, "--env", badEnv}, 2, "", "bad.yml:"},
		{"checker without model", []string{run, "--checker", "linearizability"}, 2, "", "--checker needs a model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runAnalyzeCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if strings.Contains(stdout, "no benchmark results found") {
				t.Errorf("history not taken as a benchmark result: %s", stdout)
			}
		})
	}
	md, err := os.ReadFile(filepath.Join(run, "findings", "report.md"))
	if err != nil || !strings.Contains(string(md), "p99 (ms)") || !strings.Contains(string(md), "| timeout | 2 |") {
		t.Errorf("report.md lacks the history's figures: %v\n%.2000s", err, md)
	}
}

// TestAnalyzeResultsRootJudgesEverySession: `dstgen analyze <root>` judges
// the newest session as before, every other one too (judged= lines), and
// prints each scenario's latest verdict with its session; a second call
// reuses the reports nothing has changed under, and a session whose
// history changed is judged again.
func TestAnalyzeResultsRootJudgesEverySession(t *testing.T) {
	fx := analyzeFixtures(t)
	q := filepath.Join(fx, "sessions", "quorumkv-core-guarantees")
	_, first, stderr := runAnalyzeCLI(t, q)
	if !strings.Contains(first, "session_verdict=") || strings.Count(first, "\njudged=") != 5 {
		t.Fatalf("want the newest session's lines and 5 judged= lines:\n%s\n%s", first, stderr)
	}
	latest := regexp.MustCompile(`(?m)^latest\.(\S+)=(\S+) session=(\S+)$`).FindAllStringSubmatch(first, -1)
	sessions := map[string]bool{}
	var ids []string
	for _, m := range latest {
		ids = append(ids, m[1])
		sessions[filepath.Base(m[3])] = true
	}
	if len(latest) == 0 || ids[0] != "S1" || !sessions["20260606T100000Z"] || len(sessions) < 2 {
		t.Errorf("latest lines %v: want S1 first, from the newest session and older ones", latest)
	}
	_, second, _ := runAnalyzeCLI(t, q)
	if strings.Contains(second, "judged=") || !strings.Contains(second, latest[0][0]) {
		t.Errorf("second call judged again or changed its roll-up:\n%s", second)
	}
	hist := filepath.Join(q, "20260603T100000Z", "artifacts", "S1", "history.jsonl")
	now := time.Now().Add(time.Minute)
	if err := os.Chtimes(hist, now, now); err != nil {
		t.Fatal(err)
	}
	if _, third, _ := runAnalyzeCLI(t, q); strings.Count(third, "judged=") != 1 || !strings.Contains(third, "judged="+filepath.Join(q, "20260603T100000Z")) {
		t.Errorf("after a history changed, want that session judged again only:\n%s", third)
	}
	// A benchmark results root: the newest run's verdict is the latest.
	_, out, _ := runAnalyzeCLI(t, filepath.Join(fx, "benchruns", "results"))
	if !regexp.MustCompile(`(?m)^latest\.benchmark=\S+ session=\S+run_`).MatchString(out) {
		t.Errorf("benchmark root: no latest.benchmark line:\n%s", out)
	}
}
