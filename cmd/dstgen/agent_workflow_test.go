package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// boundFactor is how far past a documented bound a command may return
// before the test calls the bound false: the machine is shared and noisy,
// and the bounds are "~N s" figures.
const boundFactor = 4

// TestAgentWorkflowOnDemoHosts plays the test-runner agent literally from
// the generated testing/README.md and agents/test-runner.md, on the hosts
// of `dstgen demo --stay`: the commands of workflows 1 and 2 and of the
// plan scenarios are the README's fenced blocks (task -x NAME → dstgen task
// NAME, which the README names as the equivalent), bench:status is polled
// at the documented interval within the documented limit and its exit codes
// read from the documented protocol table, every command returns within its
// documented bound (logged), and every report the contract defines is
// built from what the commands printed, parsed by the contract's own
// key=value rule: the benchmark summary of workflow 1 (with the verdict of
// the checker the run declared), one scenario report per run:scenario,
// the pre-flight report, and the error report — for a benchmark whose
// command fails at once (it must name the job's first error line and can
// never be a summary) and for an unknown scenario. A README that drifts
// from what works breaks this test.
func TestAgentWorkflowOnDemoHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds examples/kv and runs benchmarks and two scenarios on the demo's hosts")
	}
	// The long end-to-end tests run side by side: the demo-hosted ones need
	// no network namespace, and the namespace ones queue on sshtest's lock.
	t.Parallel()
	bin := buildDstgen(t)
	runner, err := exec.LookPath(taskRunnerName)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(runner, filepath.Join(filepath.Dir(bin), taskRunnerName)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ready, hint := startDemoStay(ctx, t, bin, filepath.Join(t.TempDir(), "demo"))
	testingDir := ready["testing"]
	for _, h := range []string{"kv1", "kv2", "kv3", "client"} {
		if !strings.Contains(","+ready["hosts"]+",", ","+h+",") {
			t.Fatalf("ready line names hosts %q; want %s among them", ready["hosts"], h)
		}
	}
	readme := readText(t, filepath.Join(testingDir, "README.md"))
	contract := readText(t, filepath.Join(testingDir, "agents", "test-runner.md"))

	// The shell an agent would use: the environment the demo's hint says
	// to export, nothing else of this test's.
	shellEnv := hintEnv(t, hint)
	if !strings.Contains(readme, "`dstgen task <name>`") || !strings.Contains(contract, "`dstgen task <name>`") {
		t.Fatal("README.md / test-runner.md no longer name `dstgen task <name>` as the equivalent of `task -x <name>`")
	}
	// The rules this agent applies, as the contract states them.
	for _, rule := range []string{"continue on 0", "`analyze` exit 1 is a verdict", "`run:scenario` exit 1 is a scenario that could not run",
		"a value holding a space, a\nquote or `=` is double-quoted with Go escapes"} {
		if !strings.Contains(contract, rule) {
			t.Fatalf("test-runner.md no longer says %q", rule)
		}
	}
	checkReportFormats(t, readme, contract)
	a := &agentRunner{t: t, ctx: ctx, dir: testingDir, env: shellEnv, readme: readme, contract: contract}
	a.b = parseBounds(t, readme)
	t.Logf("documented bounds: %+v", a.b)
	envYML := readEnvYML(t, filepath.Join(testingDir, "env.yml"))
	a.interval, a.maxPolls = pollRules(t, readme, contract, envYML)
	a.statusCodes = statusProtocol(t, readme)
	defer func() { t.Logf("per-command latencies:\n%s", strings.Join(a.figures, "\n")) }()
	for _, k := range []string{"`RATE=`", "`DURATION=`"} {
		if !strings.Contains(readme, k) {
			t.Fatalf("README.md no longer documents the %s override of bench:start", k)
		}
	}

	// Pre-flight report: validate failing for real (an env file that is
	// not there), reported with the contract's fields.
	pre := a.sh("dstgen task validate ENV_FILE=absent.yml")
	if pre.code == 0 {
		t.Fatalf("validate with a missing env file exited 0:\n%s", pre.stdout)
	}
	preflight := map[string]string{"preflight_check": "failed", "missing": "validation", "message": oneLineOf(pre.stderr)}
	for _, f := range blockFields(t, contract, "## Pre-flight", "preflight_check=") {
		if preflight[f] == "" {
			t.Errorf("pre-flight report field %s cannot be filled from what validate printed", f)
		}
	}
	if !strings.Contains(preflight["message"], "absent.yml") {
		t.Errorf("pre-flight message does not say what is missing: %q", preflight["message"])
	}
	t.Logf("pre-flight report:\n%s", renderKV(blockFields(t, contract, "## Pre-flight", "preflight_check="), preflight))

	// Workflow 1 with one RUN_ID, made the way both files say; the
	// benchmark summary it ends in.
	runID := readmeRunID(t, readme, contract)
	out := a.workflow(fencedCommands(t, readme, "**Workflow 1"), runID, "RATE=50 DURATION=2")
	if out.failed != nil {
		t.Fatalf("workflow 1 failed at %s: exit %d\nstdout:\n%s\nstderr:\n%s", out.failed.line, out.failed.code, out.failed.stdout, out.failed.stderr)
	}
	if st := out.ran["bench:start"]; !strings.Contains(st.stdout, "benchmark_started") ||
		!strings.Contains(st.stdout, fmt.Sprintf("(every %d s, at most %d polls)", int(a.interval/time.Second), a.maxPolls)) {
		t.Errorf("bench:start printed no benchmark_started, or no next: line with env.yml's limits:\n%s", st.stdout)
	}
	summary := a.benchmarkSummary(1, runID, out)
	if summary["session_verdict"] != "DONE" {
		t.Errorf("workflow 1's summary: session_verdict=%s; the demo declares model kv / linearizability, and a healthy kv is DONE", summary["session_verdict"])
	}
	// dstgen analyze of the run dir, called by hand with no --env, judges it
	// the same (the checker comes from the run's bench.params).
	if byHand := contractKV(a.sh("dstgen analyze results/run_" + runID).stdout); byHand["session_verdict"] != summary["session_verdict"] {
		t.Errorf("dstgen analyze results/run_%s by hand: session_verdict=%s, task analyze said %s", runID, byHand["session_verdict"], summary["session_verdict"])
	}

	// The plan scenarios, as the README's block says: one scenario report
	// per run:scenario.
	tier := envYML.Dstgen.Tier
	scen := readScenarioDurations(t, filepath.Join(testingDir, "scenarios.yml"), tier)
	ids := slices.Sorted(maps.Keys(scen))
	ran := 0
	steps := fencedCommands(t, readme, "**Plan scenarios**")
	for i := 0; i < len(steps); i++ {
		step := steps[i]
		if taskName(step) != "run:scenario" {
			if r := a.step(step); r.code != 0 {
				t.Fatalf("%s: exit %d\n%s%s", step, r.code, r.stdout, r.stderr)
			}
			continue
		}
		id := regexp.MustCompile(`SCENARIO=(\S+)`).FindStringSubmatch(step)
		if id == nil || i+1 == len(steps) || taskName(steps[i+1]) != "analyze" {
			t.Fatalf("%q: a run:scenario with SCENARIO= followed by analyze, as the README says", step)
		}
		d, ok := scen[id[1]]
		if !ok {
			t.Fatalf("scenarios.yml has no %s with a %s duration_s", id[1], tier)
		}
		r := a.sh(step)
		a.measure(r, time.Duration(d)*time.Second+a.b.scenarioExtra, fmt.Sprintf("duration_s %d at %s + %s", d, tier, a.b.scenarioExtra))
		if r.code != 0 && r.code != 1 {
			t.Fatalf("%s: exit %d: the error protocol\nstdout:\n%s\nstderr:\n%s", r.line, r.code, r.stdout, r.stderr)
		}
		an := a.step(steps[i+1])
		i++
		rep := a.scenarioReport(id[1], tier, r, an, ids)
		// The design card's `dstgen analyze <session>`, by hand in testing/
		// without the task's --env and --plan, judges it the same.
		byHand := contractKV(a.sh("dstgen analyze " + rep["session"]).stdout)
		for k, v := range contractKV(an.stdout) {
			if (k == "session_verdict" || strings.HasPrefix(k, "verdict.")) && byHand[k] != v {
				t.Errorf("dstgen analyze %s by hand: %s=%s, task analyze said %s", rep["session"], k, byHand[k], v)
			}
		}
		if rep["status"] != "success" {
			// On the demo's healthy hosts every scenario runs to its end.
			t.Errorf("%s did not run on the demo's hosts: run_error=%q\nstdout:\n%s\nstderr:\n%s", id[1], rep["run_error"], r.stdout, r.stderr)
		}
		ran++
	}
	if ran < 2 {
		t.Errorf("the plan scenarios block ran %d scenarios; the demo's plan has S1 and S2", ran)
	}

	// A benchmark whose command fails at once (the SUT README's local `go
	// run` line, issue 18's first break), run as workflow 2 with default
	// parameters: the contract's rules lead to the error report, naming
	// the job's first error line, never to a summary.
	restore := setBenchCommand(t, filepath.Join(testingDir, "env.yml"), "go run ./workload -out history.jsonl")
	failID := time.Now().UTC().Add(time.Second).Format("20060102_150405")
	if failID == runID {
		failID += "b"
	}
	fout := a.workflow(fencedCommands(t, readme, "**Workflow 2"), failID, "")
	restore()
	if fout.failed == nil {
		t.Fatalf("workflow 2 with a benchmark command that cannot run: every step exited 0; its summary would say success")
	}
	// It fails within bench:start's first second; on a loaded machine
	// `go` may take longer to give up, and then bench:status says it (4).
	switch name := taskName(fout.failed.line); {
	case name == "bench:start" && fout.failed.code == 1, name == "bench:status" && fout.failed.code == exitBenchFailed:
		t.Logf("the failing benchmark failed at %s (exit %d)", name, fout.failed.code)
	default:
		t.Errorf("the failing benchmark failed at %s exit %d, want bench:start exit 1 (or bench:status exit %d)", name, fout.failed.code, exitBenchFailed)
	}
	if kv := contractKV(fout.failed.stdout); kv["rc"] == "" || kv["rc"] == "0" || kv["error"] == "" {
		t.Errorf("the failed step printed no rc= and error= of the job:\n%s", fout.failed.stdout)
	}
	report := a.errorReport(fout, failID)
	first := oneLineOf(readText(t, filepath.Join(testingDir, "results", "run_"+failID, "benchmark", "job", "stderr")))
	if first == "" || !strings.Contains(report["error_message"], first) {
		t.Errorf("error_message does not name the job's first error line %q (the protocol's collect kept it):\n%s", first, report["error_message"])
	}

	// A step that fails on purpose: an unknown scenario.
	fail := a.sh("dstgen task run:scenario SCENARIO=S9")
	bound, why := a.b.forTask("run:scenario")
	a.measure(fail, bound, why)
	if want := documentedExit(t, readme, "run:scenario", "bad input"); fail.code != want {
		t.Errorf("run:scenario SCENARIO=S9: exit %d; the README's table says %d for bad input", fail.code, want)
	}
	sr := a.errorReport(workflowRun{failed: &fail}, "")
	if !strings.Contains(sr["error_message"], `"S9"`) {
		t.Errorf("error_message does not say what was wrong (the unknown S9): %q", sr["error_message"])
	}
}

// agentRunner is the test-runner agent: it runs README lines in the
// testing dir with the hint's environment and applies the contract.
type agentRunner struct {
	t                *testing.T
	ctx              context.Context
	dir              string
	env              []string
	readme, contract string
	b                bounds
	interval         time.Duration
	maxPolls         int
	statusCodes      map[int]string
	figures          []string
}

func (a *agentRunner) sh(line string) agentResult {
	a.t.Helper()
	return agentRun(a.ctx, a.t, a.dir, a.env, line)
}

func (a *agentRunner) measure(r agentResult, bound time.Duration, why string) {
	a.t.Helper()
	a.figures = append(a.figures, fmt.Sprintf("%-45s %6.2fs (bound %s: %s)", r.line, r.elapsed.Seconds(), bound, why))
	if r.elapsed > boundFactor*bound {
		a.t.Errorf("%s took %s; the README's bound is %s (%s), allowed ×%d", r.line, r.elapsed.Round(time.Millisecond), bound, why, boundFactor)
	}
}

// step runs one line and measures it against its task's bound.
func (a *agentRunner) step(line string) agentResult {
	a.t.Helper()
	r := a.sh(line)
	bound, why := a.b.forTask(taskName(line))
	a.measure(r, bound, why)
	return r
}

// workflowRun is what one workflow's steps printed, and the first step
// that failed by the contract's rules (nil: none).
type workflowRun struct {
	runID  string
	ran    map[string]agentResult
	failed *agentResult
}

// workflow runs a README workflow block with $RUN_ID set, by the
// contract's rules: continue on 0; bench:status polled while it exits 1
// (or 3, at most 4 in a row); analyze exit 1 is a verdict; anything else
// stops the workflow. overrides go on bench:start.
func (a *agentRunner) workflow(steps []string, runID, overrides string) workflowRun {
	a.t.Helper()
	w := workflowRun{runID: runID, ran: map[string]agentResult{}}
	for _, line := range steps {
		line = strings.ReplaceAll(line, "$RUN_ID", runID)
		name := taskName(line)
		if name == "bench:start" && overrides != "" {
			line += " " + overrides
		}
		var r agentResult
		if name == "bench:status" {
			r = a.poll(line)
		} else {
			r = a.step(line)
		}
		w.ran[name] = r
		if r.code == 0 || name == "analyze" && r.code == 1 {
			continue
		}
		w.failed = &r
		return w
	}
	return w
}

// poll is the async loop's polling: wait the interval, poll; 1 again, 3
// again (4 in a row is a failure), anything else is the answer.
func (a *agentRunner) poll(line string) agentResult {
	a.t.Helper()
	unreachable := 0
	var r agentResult
	for poll := 1; poll <= a.maxPolls; poll++ {
		time.Sleep(a.interval)
		r = a.sh(line)
		a.measure(r, a.b.status, "~"+a.b.status.String()+" per poll")
		st := contractKV(r.stdout)["status"]
		if want, ok := a.statusCodes[r.code]; !ok || st != want {
			a.t.Fatalf("poll %d: exit %d status=%q; the protocol table says exit %d is status=%s\n%s%s", poll, r.code, st, r.code, want, r.stdout, r.stderr)
		}
		switch r.code {
		case 1:
			unreachable = 0
			continue
		case 3:
			if unreachable++; unreachable < 4 {
				continue
			}
		}
		a.t.Logf("bench:status: exit %d at poll %d (every %s)", r.code, poll, a.interval)
		return r
	}
	r.code = -1
	r.stderr += "\n(poll limit reached)"
	return r
}

// benchmarkSummary builds the contract's benchmark summary from what the
// workflow printed: session_verdict= and report= of analyze, the run's
// mode/rate/duration from its bench.params; every field must be fillable.
func (a *agentRunner) benchmarkSummary(workflow int, runID string, w workflowRun) map[string]string {
	a.t.Helper()
	an := contractKV(w.ran["analyze"].stdout)
	params := contractKV(readText(a.t, filepath.Join(a.dir, "results", "run_"+runID, "benchmark", "bench.params")))
	col := contractKV(w.ran["collect"].stdout)
	rd := "results/run_" + runID
	v := map[string]string{"workflow": strconv.Itoa(workflow), "status": "success", "timestamp": runID, "results_dir": rd,
		"session_verdict": an["session_verdict"], "report": an["report"],
		"mode": params["mode"], "rate": params["rate"], "duration": params["duration_s"] + "s",
		"benchmark": rd + "/benchmark/", "metrics": rd + "/metrics/", "logs": rd + "/logs/"}
	if col["results_dir"] != rd {
		a.t.Errorf("collect printed results_dir=%q, want %s", col["results_dir"], rd)
	}
	if col["history"] == "missing" || col["history"] == "" {
		a.t.Errorf("collect exited 0 without a history:\n%s", w.ran["collect"].stdout)
	}
	for _, sub := range []string{"benchmark", "benchmark/job", "metrics", "logs"} {
		if _, err := os.Stat(filepath.Join(a.dir, rd, sub)); err != nil {
			a.t.Errorf("collect: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(a.dir, an["report"])); err != nil {
		a.t.Errorf("analyze's report=: %v", err)
	}
	if params["rate"] != "50" || params["duration_s"] != "2" {
		a.t.Errorf("bench.params does not hold the run's overrides RATE=50 DURATION=2: %v", params)
	}
	fields := blockFields(a.t, a.contract, "### Benchmark summary", "workflow=")
	a.t.Logf("benchmark summary (workflow %d):\n%s", workflow, renderKV(fields, v))
	for _, f := range fields {
		if strings.TrimSpace(v[f]) == "" {
			a.t.Errorf("benchmark summary field %s cannot be filled from what the commands printed", f)
		}
	}
	return v
}

// scenarioReport builds the contract's scenario report for one
// run:scenario and its analyze; every plan scenario must have its
// verdict.<ID>= and reason.<ID>= lines.
func (a *agentRunner) scenarioReport(id, tier string, run, an agentResult, ids []string) map[string]string {
	a.t.Helper()
	first := contractKV(strings.SplitN(run.stdout, "\n", 2)[0])
	kv := contractKV(an.stdout)
	v := map[string]string{"scenario": id, "run_exit_code": strconv.Itoa(run.code), "tier": first["tier"], "session": first["session"],
		"session_verdict": kv["session_verdict"], "report": kv["report"]}
	v["status"], v["run_error"] = "success", ""
	if run.code == 1 {
		v["status"] = "not-run"
		for _, l := range strings.Split(run.stdout, "\n") {
			if strings.Contains(l, "result=not-run") {
				v["run_error"] = contractKV(l)["reason"]
			}
		}
		if v["run_error"] == "" {
			a.t.Errorf("run:scenario exit 1 printed no result=not-run reason=:\n%s", run.stdout)
		}
	}
	if an.code != 0 && an.code != 1 {
		a.t.Fatalf("%s: exit %d: the error protocol (phase analyze)\n%s%s", an.line, an.code, an.stdout, an.stderr)
	}
	if v["tier"] != tier {
		a.t.Errorf("run:scenario's first line says tier=%q, env.yml dstgen.tier is %s", v["tier"], tier)
	}
	if v["session"] == "" || !strings.HasPrefix(v["report"], v["session"]+"/") {
		a.t.Errorf("analyze judged %s; the run before it wrote session %q", v["report"], v["session"])
	}
	fields := blockFields(a.t, a.contract, "### Scenario report", "scenario=")
	var lines []string
	for _, f := range fields {
		switch f {
		case "verdict.<ID>", "reason.<ID>":
			key := strings.TrimSuffix(f, "<ID>")
			for _, sid := range ids {
				val, ok := kv[key+sid]
				if !ok || val == "" {
					a.t.Errorf("analyze printed no %s%s= line (every plan scenario gets one)", key, sid)
				}
				lines = append(lines, key+sid+"="+val)
			}
		default:
			if f != "run_error" && strings.TrimSpace(v[f]) == "" {
				a.t.Errorf("scenario report field %s cannot be filled from what the commands printed", f)
			}
			lines = append(lines, f+"="+v[f])
		}
	}
	if v["status"] == "success" && kv["verdict."+id] == "NOT-RUN" {
		a.t.Errorf("%s ran (exit 0) but analyze says NOT-RUN", id)
	}
	a.t.Logf("scenario report:\n%s", strings.Join(lines, "\n"))
	return v
}

// errorReport follows the error protocol for a failed workflow: for a
// benchmark step, bench:stop and collect first (they keep the job's
// output), then clean; and fills the report's fields from what was
// printed, its phase from the Failure Modes table.
func (a *agentRunner) errorReport(w workflowRun, runID string) map[string]string {
	a.t.Helper()
	f := *w.failed
	name := taskName(f.line)
	if name == "bench:start" || name == "bench:status" || name == "collect" {
		if r := a.step("dstgen task bench:stop RUN_ID=" + runID); r.code != 0 {
			a.t.Errorf("bench:stop in the error protocol: exit %d\n%s", r.code, r.stderr)
		}
		if name != "collect" {
			r := a.step("dstgen task collect RUN_ID=" + runID)
			// A failed benchmark has no history: collect says so.
			if r.code == 0 || !strings.Contains(r.stderr, "no history") {
				a.t.Errorf("collect after a failed benchmark: exit %d, want 1 naming the missing history\n%s", r.code, r.stderr)
			}
		}
	}
	clean := a.step("dstgen task clean")
	phase := failurePhase(a.t, a.readme, name)
	if cp := failurePhase(a.t, a.contract, name); cp != phase {
		a.t.Errorf("error_phase of %s: README %s, test-runner.md %s", name, phase, cp)
	}
	v := map[string]string{
		"error_phase":       phase,
		"error_task":        name,
		"error_exit_code":   strconv.Itoa(f.code),
		"error_message":     strings.Join(tailLines(f.stderr, 20), "\n"),
		"attempted_cleanup": "true",
		"cleanup_success":   strconv.FormatBool(clean.code == 0),
	}
	fields := errorFields(a.t, a.readme, "Structured error report")
	if af := errorFields(a.t, a.contract, "## Error protocol"); strings.Join(af, ",") != strings.Join(fields, ",") {
		a.t.Errorf("error report fields: README %v, test-runner.md %v", fields, af)
	}
	for _, k := range fields {
		if strings.TrimSpace(v[k]) == "" {
			a.t.Errorf("error report field %s cannot be filled from what the commands printed", k)
		}
	}
	if clean.code != 0 {
		a.t.Errorf("clean after the failure: exit %d\n%s", clean.code, clean.stderr)
	}
	a.t.Logf("structured error report:\n%s", renderKV(fields, v))
	return v
}

// checkReportFormats: README.md and test-runner.md define the same
// reports, with the same fields, and the same failure-mode table.
func checkReportFormats(t *testing.T, readme, contract string) {
	t.Helper()
	for _, c := range []struct{ readme, contract, first string }{
		{"Benchmark summary (workflows 1–4)", "### Benchmark summary", "workflow="},
		{"Scenario report, one per", "### Scenario report", "scenario="},
	} {
		rf, cf := blockFields(t, readme, c.readme, c.first), blockFields(t, contract, c.contract, c.first)
		if strings.Join(rf, ",") != strings.Join(cf, ",") {
			t.Errorf("%s fields: README %v, test-runner.md %v", c.contract, rf, cf)
		}
	}
	if rt, ct := sectionTable(t, readme, "## Failure Modes"), sectionTable(t, contract, "## Failure modes"); rt != ct {
		t.Errorf("the failure-mode tables differ:\nREADME:\n%s\ntest-runner.md:\n%s", rt, ct)
	}
	// Every task a README workflow runs has a row.
	table := sectionTable(t, readme, "## Failure Modes")
	for _, marker := range []string{"**Workflow 1", "**Workflow 2", "**Workflow 3", "**Plan scenarios**"} {
		for _, step := range fencedCommands(t, readme, marker) {
			if !strings.Contains(table, "`"+taskName(step)+"`") {
				t.Errorf("the Failure Modes table has no row for %s (%s)", taskName(step), marker)
			}
		}
	}
}

// blockFields are the keys of the ```text block after marker whose first
// key line starts with first: "k=..." lines, and "k: ..." lines of its
// "Results Location" part.
func blockFields(t *testing.T, doc, marker, first string) []string {
	t.Helper()
	i := strings.Index(doc, marker)
	if i < 0 {
		t.Fatalf("no %q", marker)
	}
	for _, m := range regexp.MustCompile("(?s)```text\n(.*?)```").FindAllStringSubmatch(doc[i:], -1) {
		if !strings.Contains(m[1], "\n"+first) && !strings.HasPrefix(m[1], first) {
			continue
		}
		var fields []string
		for _, l := range strings.Split(m[1], "\n") {
			if k, _, ok := strings.Cut(l, "="); ok && regexp.MustCompile(`^[a-z_]+(\.<ID>)?$|^[a-z_]+\.S[0-9]+$`).MatchString(k) {
				k = regexp.MustCompile(`\.S[0-9]+$`).ReplaceAllString(k, ".<ID>")
				if !slices.Contains(fields, k) {
					fields = append(fields, k)
				}
			} else if k, _, ok := strings.Cut(l, ":"); ok && regexp.MustCompile(`^[a-z]+$`).MatchString(k) {
				fields = append(fields, k)
			}
		}
		return fields
	}
	t.Fatalf("no ```text block starting with %s after %q", first, marker)
	return nil
}

// sectionTable is the first markdown table after heading.
func sectionTable(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, heading)
	if i < 0 {
		t.Fatalf("no %q", heading)
	}
	var rows []string
	for _, l := range strings.Split(doc[i:], "\n")[1:] {
		if strings.HasPrefix(l, "|") {
			rows = append(rows, l)
		} else if len(rows) > 0 {
			break
		}
	}
	if len(rows) < 3 {
		t.Fatalf("no table after %q", heading)
	}
	return strings.Join(rows, "\n")
}

// failurePhase is the error_phase the Failure Modes table gives task.
func failurePhase(t *testing.T, doc, task string) string {
	t.Helper()
	heading := "## Failure Modes"
	if !strings.Contains(doc, heading) {
		heading = "## Failure modes" // test-runner.md's
	}
	for _, row := range strings.Split(sectionTable(t, doc, heading), "\n") {
		cells := strings.Split(row, "|")
		if len(cells) < 5 || !slices.Contains(regexp.MustCompile("`([a-z:0-9-]+)`").FindAllString(cells[1], -1), "`"+task+"`") {
			continue
		}
		if m := regexp.MustCompile("`([a-z]+)`").FindStringSubmatch(cells[3]); m != nil {
			return m[1]
		}
	}
	t.Fatalf("the Failure Modes table gives %s no error_phase", task)
	return ""
}

// setBenchCommand rewrites benchmark.command of env.yml (the operator's
// edit, not the agent's) and returns the undo.
func setBenchCommand(t *testing.T, envPath, command string) func() {
	t.Helper()
	orig := readText(t, envPath)
	lines := strings.Split(orig, "\n")
	in := false
	done := false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "benchmark:"):
			in = true
		case in && strings.HasPrefix(l, "  command:"):
			lines[i] = "  command: " + strconv.Quote(command)
			done = true
			in = false
		case in && l != "" && !strings.HasPrefix(l, " "):
			in = false
		}
	}
	if !done {
		t.Fatalf("%s has no benchmark.command line", envPath)
	}
	if err := os.WriteFile(envPath, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.WriteFile(envPath, []byte(orig), 0o600); err != nil {
			t.Error(err)
		}
	}
}

// oneLineOf is the first non-blank line of s.
func oneLineOf(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// renderKV is a report's key=value lines, in fields order.
func renderKV(fields []string, v map[string]string) string {
	var b strings.Builder
	for _, f := range fields {
		fmt.Fprintf(&b, "%s=%s\n", f, v[f])
	}
	return b.String()
}

// agentResult is one command an agent ran.
type agentResult struct {
	line           string
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

// agentRun runs line with /bin/sh in dir with exactly env, as an agent's
// shell tool would, bounded by ctx and a minute.
func agentRun(ctx context.Context, t *testing.T, dir string, env []string, line string) agentResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	c := exec.CommandContext(ctx, "/bin/sh", "-c", line)
	c.Dir, c.Env, c.Stdout, c.Stderr = dir, env, &out, &errb
	c.WaitDelay = 5 * time.Second
	start := time.Now()
	err := c.Run()
	r := agentResult{line: line, stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() > 0 {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v (after %s)\n%s", line, err, r.elapsed, r.stderr)
	}
	return r
}

// startDemoStay starts `dstgen demo --stay --dir dir` from the repository
// root, stops it by PID (SIGINT, then SIGKILL) in Cleanup, and returns the
// key=value fields of its ready line and its hint lines.
func startDemoStay(ctx context.Context, t *testing.T, bin, dir string) (map[string]string, []string) {
	t.Helper()
	cmd := exec.Command(bin, "demo", "--stay", "--dir", dir)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "DSTGEN_NO_HOLDER=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var rest bytes.Buffer
	done := make(chan error, 1)
	// drained is closed once the reader started below has written the
	// last line into rest; nil until it starts (a read of rest before
	// then would race with its writes, as go test -race showed).
	var drained chan struct{}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-done:
			if drained != nil {
				<-drained
			}
			if err != nil {
				t.Errorf("dstgen demo --stay after SIGINT: %v\n%s", err, errb.String())
			}
			if !strings.Contains(rest.String(), "phase=cleanup") {
				t.Errorf("dstgen demo --stay stopped without its cleanup:\n%s", rest.String())
			}
		case <-time.After(90 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("dstgen demo --stay still running 90s after SIGINT")
		}
	})
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		done <- cmd.Wait()
	}()
	var ready map[string]string
	var hint []string
	wait := time.NewTimer(2 * time.Minute)
	defer wait.Stop()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("dstgen demo --stay ended before its ready line:\n%s%s", rest.String(), errb.String())
			}
			rest.WriteString(l + "\n")
			if strings.HasPrefix(l, "demo status=ready ") {
				ready = kvOf(l)
			} else if strings.HasPrefix(l, "demo hint: ") {
				hint = append(hint, strings.TrimPrefix(l, "demo hint: "))
			}
			if ready != nil && len(hint) >= 2 {
				// Keep reading (the cleanup line), so the pipe never fills.
				t.Logf("dstgen demo --stay:\n%s", rest.String())
				drained = make(chan struct{})
				go func() {
					defer close(drained)
					for l := range lines {
						rest.WriteString(l + "\n")
					}
				}()
				return ready, hint
			}
		case <-wait.C:
			t.Fatalf("no ready line from dstgen demo --stay in 2m:\n%s", rest.String())
		case <-ctx.Done():
			t.Fatalf("no ready line: %v", ctx.Err())
		}
	}
}

// hintEnv is a minimal shell environment plus the variables the demo's
// hint says to export ("export A=x:$PATH B=1; ...").
func hintEnv(t *testing.T, hint []string) []string {
	t.Helper()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "USER=" + os.Getenv("USER")}
	for _, h := range hint {
		i := strings.Index(h, "export ")
		if i < 0 {
			continue
		}
		decl, _, _ := strings.Cut(h[i+len("export "):], ";")
		for _, kv := range strings.Fields(decl) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("hint %q: %q is no KEY=value", h, kv)
			}
			v = strings.ReplaceAll(v, "$PATH", os.Getenv("PATH"))
			env = append(env, k+"="+strings.Trim(v, "'"))
		}
		return env
	}
	t.Fatalf("the demo's hint has no export line: %q", hint)
	return nil
}

func readText(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fencedCommands are the command lines of the first ```bash block after
// the marker, each `task -x NAME` turned into `dstgen task NAME`.
func fencedCommands(t *testing.T, doc, marker string) []string {
	t.Helper()
	i := strings.Index(doc, marker)
	if i < 0 {
		t.Fatalf("README.md has no %q", marker)
	}
	m := regexp.MustCompile("(?s)```bash\n(.*?)```").FindStringSubmatch(doc[i:])
	if m == nil {
		t.Fatalf("no ```bash block after %q", marker)
	}
	var cmds []string
	for _, l := range strings.Split(strings.TrimSpace(m[1]), "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "task -x ") {
			t.Fatalf("%s: %q is not a `task -x` line", marker, l)
		}
		cmds = append(cmds, "dstgen task "+strings.TrimPrefix(l, "task -x "))
	}
	if len(cmds) == 0 {
		t.Fatalf("%s: an empty block", marker)
	}
	return cmds
}

// taskName is NAME of "dstgen task NAME VAR=...".
func taskName(line string) string {
	f := strings.Fields(strings.TrimPrefix(line, "dstgen task "))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// readmeRunID makes a RUN_ID with the date format both files show.
func readmeRunID(t *testing.T, readme, agent string) string {
	t.Helper()
	const want = "RUN_ID=$(date -u +%Y%m%d_%H%M%S)"
	if !strings.Contains(readme, want) || !strings.Contains(agent, want) {
		t.Fatalf("README.md / test-runner.md no longer make RUN_ID with %s", want)
	}
	return time.Now().UTC().Format("20060102_150405")
}

// bounds are the README's documented command bounds.
type bounds struct {
	roundTrip                    time.Duration // any task of the benchmark workflows
	start, status, stop, collect time.Duration
	scenarioExtra                time.Duration            // run:scenario: duration_s + this
	perTask                      map[string]time.Duration // "(~N s)" of the task table
}

var reSeconds = regexp.MustCompile(`\(~(\d+) s\)`)

func parseBounds(t *testing.T, readme string) bounds {
	t.Helper()
	// The Agent-First box is a blockquote: its text without the "> ".
	var box strings.Builder
	for _, l := range strings.Split(readme, "\n") {
		if strings.HasPrefix(l, "> ") {
			box.WriteString(strings.TrimPrefix(l, "> ") + " ")
		}
	}
	q := box.String()
	sec := func(re string) time.Duration {
		m := regexp.MustCompile(re).FindStringSubmatch(q)
		if m == nil {
			t.Fatalf("README.md's Agent-First box no longer says %s:\n%s", re, q)
		}
		n, _ := strconv.Atoi(m[1])
		return time.Duration(n) * time.Second
	}
	b := bounds{
		roundTrip:     sec(`every task of the benchmark workflows returns within (\d+) s`),
		start:         sec(`start \(~(\d+) s\)`),
		status:        sec(`poll \(~(\d+) s per poll\)`),
		stop:          sec(`stop \(~(\d+) s\)`),
		scenarioExtra: sec("`run:scenario` lasts its scenario's `duration_s` at the tier \\(scenarios.yml, `dstgen.tier`\\) plus up to (\\d+) s"),
		perTask:       map[string]time.Duration{},
	}
	// The Available Tasks table: a "(~N s)" in a row is that row's tasks'.
	for _, l := range strings.Split(readme, "\n") {
		cells := strings.Split(l, "|")
		if len(cells) < 6 {
			continue
		}
		m := reSeconds.FindStringSubmatch(cells[3])
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		for _, name := range regexp.MustCompile("`([a-z:0-9-]+)`").FindAllStringSubmatch(cells[2], -1) {
			b.perTask[name[1]] = time.Duration(n) * time.Second
		}
	}
	for name, want := range map[string]time.Duration{"bench:start": b.start, "bench:status": b.status, "bench:stop": b.stop} {
		if b.perTask[name] != want {
			t.Errorf("README.md: %s is ~%s in the task table, ~%s in the Agent-First box", name, b.perTask[name], want)
		}
	}
	if b.collect = b.perTask["collect"]; b.collect == 0 {
		t.Errorf("README.md's task table gives collect no (~N s)")
	}
	return b
}

// forTask is the bound of one task and where it is documented.
func (b bounds) forTask(name string) (time.Duration, string) {
	if d, ok := b.perTask[name]; ok {
		return d, "~" + d.String() + " in the task table"
	}
	return b.roundTrip, "a task returns within " + b.roundTrip.String()
}

// envYML is what the test reads of env.yml.
type envYML struct {
	Dstgen struct {
		Tier          string `yaml:"tier"`
		PollIntervalS int    `yaml:"poll_interval_s"`
		MaxPolls      int    `yaml:"max_polls"`
	} `yaml:"dstgen"`
}

func readEnvYML(t *testing.T, p string) envYML {
	t.Helper()
	var e envYML
	if err := yaml.Unmarshal([]byte(readText(t, p)), &e); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return e
}

// pollRules are the interval and the poll limit: env.yml's
// dstgen.poll_interval_s and max_polls, which the README's protocol names
// and bounds ("Poll every 15 s (`dstgen.poll_interval_s`, 10–15), at most
// 60 polls").
func pollRules(t *testing.T, readme, agent string, e envYML) (time.Duration, int) {
	t.Helper()
	m := regexp.MustCompile("Poll every (\\d+) s\\s+\\(`dstgen.poll_interval_s`, (\\d+)–(\\d+)\\),\\s+\\*\\*at most (\\d+) polls").FindStringSubmatch(readme)
	if m == nil {
		t.Fatal("README.md's bench:status protocol no longer states the poll interval, its range and the poll limit")
	}
	def, _ := strconv.Atoi(m[1])
	lo, _ := strconv.Atoi(m[2])
	hi, _ := strconv.Atoi(m[3])
	limit, _ := strconv.Atoi(m[4])
	if !strings.Contains(agent, fmt.Sprintf("At most **%d polls at %d-second intervals", limit, def)) {
		t.Errorf("test-runner.md's poll limit disagrees with README.md (%d polls at %d s)", limit, def)
	}
	iv := e.Dstgen.PollIntervalS
	if iv == 0 {
		iv = def
	}
	if iv < lo || iv > hi {
		t.Fatalf("env.yml dstgen.poll_interval_s %d is outside the README's %d–%d", iv, lo, hi)
	}
	if e.Dstgen.MaxPolls > 0 && e.Dstgen.MaxPolls < limit {
		limit = e.Dstgen.MaxPolls
	}
	return time.Duration(iv) * time.Second, limit
}

// statusProtocol maps each bench:status exit code of the README's
// protocol table to the status= it documents.
func statusProtocol(t *testing.T, readme string) map[int]string {
	t.Helper()
	i := strings.Index(readme, "## bench:status Protocol")
	if i < 0 {
		t.Fatal("README.md has no bench:status Protocol section")
	}
	codes := map[int]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| (\\d) \\| `status=([a-z]+)`").FindAllStringSubmatch(readme[i:], -1) {
		n, _ := strconv.Atoi(m[1])
		codes[n] = m[2]
	}
	if codes[0] != "finished" || codes[1] != "running" {
		t.Fatalf("bench:status protocol table: %v; want exit 0 status=finished and exit 1 status=running", codes)
	}
	return codes
}

// readScenarioDurations maps each scenario id to its duration_s at tier.
func readScenarioDurations(t *testing.T, p, tier string) map[string]int {
	t.Helper()
	var doc struct {
		Scenarios []struct {
			ID    string `yaml:"id"`
			Tiers map[string]struct {
				DurationS int `yaml:"duration_s"`
			} `yaml:"tiers"`
		} `yaml:"scenarios"`
	}
	if err := yaml.Unmarshal([]byte(readText(t, p)), &doc); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	m := map[string]int{}
	for _, s := range doc.Scenarios {
		if d := s.Tiers[tier].DurationS; d > 0 {
			m[s.ID] = d
		}
	}
	return m
}

// documentedExit is the exit code the README's task table gives task for
// meaning ("0 ran / 1 failed / 2 bad input").
func documentedExit(t *testing.T, readme, task, meaning string) int {
	t.Helper()
	for _, l := range strings.Split(readme, "\n") {
		cells := strings.Split(l, "|")
		if len(cells) < 6 || !strings.Contains(cells[2], "`"+task) {
			continue
		}
		m := regexp.MustCompile(`(\d+) ` + regexp.QuoteMeta(meaning)).FindStringSubmatch(cells[4])
		if m == nil {
			break
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	t.Fatalf("README.md's task table gives %s no exit code for %q", task, meaning)
	return 0
}

// errorFields are the key= lines of the TEST EXECUTION ERROR block after
// marker.
func errorFields(t *testing.T, doc, marker string) []string {
	t.Helper()
	i := strings.Index(doc, marker)
	if i < 0 {
		t.Fatalf("no %q", marker)
	}
	m := regexp.MustCompile("(?s)```text\n(.*?)```").FindStringSubmatch(doc[i:])
	if m == nil || !strings.Contains(m[1], "TEST EXECUTION ERROR") {
		t.Fatalf("no TEST EXECUTION ERROR block after %q", marker)
	}
	var fields []string
	for _, l := range strings.Split(m[1], "\n") {
		if k, _, ok := strings.Cut(l, "="); ok && regexp.MustCompile(`^[a-z_]+$`).MatchString(k) {
			fields = append(fields, k)
		}
	}
	return fields
}

// tailLines are the last n non-empty lines of s.
func tailLines(s string, n int) []string {
	var l []string
	for _, x := range strings.Split(s, "\n") {
		if strings.TrimSpace(x) != "" {
			l = append(l, x)
		}
	}
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return l
}
