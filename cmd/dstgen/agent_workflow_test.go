package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
// of `dstgen demo --stay`: the commands of workflow 1 and of the plan
// scenarios are the README's fenced blocks (task -x NAME → dstgen task
// NAME, which the README names as the equivalent), bench:status is polled
// at the documented interval within the documented limit and its exit codes
// read from the documented protocol table, every command returns within its
// documented bound (logged), and a step made to fail on purpose (an unknown
// scenario) yields the structured error report with every documented field
// filled from what the commands printed. A README that drifts from what
// works breaks this test.
func TestAgentWorkflowOnDemoHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds examples/kv and runs a benchmark and two scenarios on the demo's hosts")
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
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ready, hint := startDemoStay(ctx, t, bin, filepath.Join(t.TempDir(), "demo"))
	testingDir := ready["testing"]
	for _, h := range []string{"kv1", "kv2", "kv3", "client"} {
		if !strings.Contains(","+ready["hosts"]+",", ","+h+",") {
			t.Fatalf("ready line names hosts %q; want %s among them", ready["hosts"], h)
		}
	}
	readme := readText(t, filepath.Join(testingDir, "README.md"))
	agent := readText(t, filepath.Join(testingDir, "agents", "test-runner.md"))

	// The shell an agent would use: the environment the demo's hint says
	// to export, nothing else of this test's.
	shellEnv := hintEnv(t, hint)
	if !strings.Contains(readme, "`dstgen task <name>`") || !strings.Contains(agent, "`dstgen task <name>`") {
		t.Fatal("README.md / test-runner.md no longer name `dstgen task <name>` as the equivalent of `task -x <name>`")
	}
	b := parseBounds(t, readme)
	t.Logf("documented bounds: %+v", b)

	// One RUN_ID for the whole workflow, made the way the README says.
	runID := readmeRunID(t, readme, agent)
	shellEnv = append(shellEnv, "RUN_ID="+runID)
	sh := func(line string) agentResult {
		t.Helper()
		return agentRun(ctx, t, testingDir, shellEnv, line)
	}

	envYML := readEnvYML(t, filepath.Join(testingDir, "env.yml"))
	interval, maxPolls := pollRules(t, readme, agent, envYML)
	statusCodes := statusProtocol(t, readme)
	overrides := "RATE=50 DURATION=2"
	for _, k := range []string{"`RATE=`", "`DURATION=`"} {
		if !strings.Contains(readme, k) {
			t.Fatalf("README.md no longer documents the %s override of bench:start", k)
		}
	}

	var figures []string
	measure := func(r agentResult, bound time.Duration, why string) {
		t.Helper()
		figures = append(figures, fmt.Sprintf("%-45s %6.2fs (bound %s: %s)", r.line, r.elapsed.Seconds(), bound, why))
		if r.elapsed > boundFactor*bound {
			t.Errorf("%s took %s; the README's bound is %s (%s), allowed ×%d", r.line, r.elapsed.Round(time.Millisecond), bound, why, boundFactor)
		}
	}
	defer func() { t.Logf("per-command latencies:\n%s", strings.Join(figures, "\n")) }()

	// Workflow 1, step by step, as the README's block says.
	for _, step := range fencedCommands(t, readme, "**Workflow 1") {
		name := taskName(step)
		line := step
		switch name {
		case "bench:start":
			line += " " + overrides
		case "bench:status":
			pollStatus(t, sh, line, interval, maxPolls, statusCodes, b, measure)
			continue
		}
		r := sh(line)
		bound, why := b.forTask(name)
		measure(r, bound, why)
		if r.code != 0 {
			t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", r.line, r.code, r.stdout, r.stderr)
		}
		switch name {
		case "bench:start":
			// The agent file: "must print benchmark_started"; and the
			// next-step hint repeats env.yml's polling limits.
			if !strings.Contains(r.stdout, "benchmark_started") {
				t.Errorf("bench:start printed no benchmark_started:\n%s", r.stdout)
			}
			if want := fmt.Sprintf("(every %d s, at most %d polls)", int(interval/time.Second), maxPolls); !strings.Contains(r.stdout, want) {
				t.Errorf("bench:start's next line does not say %q:\n%s", want, r.stdout)
			}
		case "collect":
			dir := filepath.Join(testingDir, "results", "run_"+runID)
			for _, sub := range []string{"benchmark", "metrics", "logs"} {
				if _, err := os.Stat(filepath.Join(dir, sub)); err != nil {
					t.Errorf("collect: %v", err)
				}
			}
		}
	}

	// The plan scenarios, as the README's block says; analyze last.
	tier := envYML.Dstgen.Tier
	scen := readScenarioDurations(t, filepath.Join(testingDir, "scenarios.yml"), tier)
	lastSession, ran := "", 0
	for _, step := range fencedCommands(t, readme, "**Plan scenarios**") {
		name := taskName(step)
		r := sh(step)
		switch name {
		case "run:scenario":
			id := regexp.MustCompile(`SCENARIO=(\S+)`).FindStringSubmatch(step)
			if id == nil {
				t.Fatalf("%q: no SCENARIO=", step)
			}
			d, ok := scen[id[1]]
			if !ok {
				t.Fatalf("scenarios.yml has no %s with a %s duration_s", id[1], tier)
			}
			measure(r, time.Duration(d)*time.Second+b.scenarioExtra, fmt.Sprintf("duration_s %d at %s + %s", d, tier, b.scenarioExtra))
			if r.code != 0 {
				t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", r.line, r.code, r.stdout, r.stderr)
			}
			m := regexp.MustCompile(`(?m)\bsession=(\S+)`).FindAllStringSubmatch(r.stdout, -1)
			if m == nil {
				t.Fatalf("%s printed no session= (README: each run prints session=)", r.line)
			}
			lastSession = m[len(m)-1][1]
			ran++
		case "analyze":
			bound, why := b.forTask(name)
			measure(r, bound, why)
			// README: 0 DONE / 1 another verdict (a result, not a task
			// failure) / 2 bad input.
			kv := kvOf(r.stdout)
			if r.code != 0 && r.code != 1 || kv["session_verdict"] == "" || kv["report"] == "" {
				t.Fatalf("%s: exit %d, want 0 or 1 with session_verdict= and report=\nstdout:\n%s\nstderr:\n%s", r.line, r.code, r.stdout, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(testingDir, kv["report"])); err != nil {
				t.Errorf("analyze's report=: %v", err)
			}
			// What the README promises: analyze judges the session the
			// run before it wrote.
			if lastSession == "" || !strings.HasPrefix(kv["report"], lastSession+"/") {
				t.Errorf("analyze judged %s; the run before it wrote session %q", kv["report"], lastSession)
			}
			// The verdict itself is the analyzer's (one scenario per
			// session: the others NOT-RUN, so exit 1 at best); logged.
			t.Logf("analyze: exit %d session_verdict=%s report=%s", r.code, kv["session_verdict"], kv["report"])
		default:
			t.Fatalf("the plan scenarios block has a step %q this test does not know", step)
		}
	}

	if ran < 2 {
		t.Errorf("the plan scenarios block ran %d scenarios; the demo's plan has S1 and S2", ran)
	}

	// A step that fails on purpose: an unknown scenario. The agent builds
	// the error report from the documented field list, running clean first.
	fail := sh("dstgen task run:scenario SCENARIO=S9")
	bound, why := b.forTask("run:scenario")
	measure(fail, bound, why)
	if fail.code == 0 {
		t.Fatalf("run:scenario SCENARIO=S9 exited 0:\n%s", fail.stdout)
	}
	if want := documentedExit(t, readme, "run:scenario", "bad input"); fail.code != want {
		t.Errorf("run:scenario SCENARIO=S9: exit %d; the README's table says %d for bad input", fail.code, want)
	}
	clean := sh("dstgen task clean")
	bound, why = b.forTask("clean")
	measure(clean, bound, why)
	report := map[string]string{
		"error_phase":       phaseOf(t, readme, "run:scenario"),
		"error_task":        taskName(fail.line),
		"error_exit_code":   strconv.Itoa(fail.code),
		"error_message":     strings.Join(tailLines(fail.stderr, 20), "\n"),
		"attempted_cleanup": "true",
		"cleanup_success":   strconv.FormatBool(clean.code == 0),
	}
	fields := errorFields(t, readme, "Structured error report")
	if af := errorFields(t, agent, "## Error protocol"); strings.Join(af, ",") != strings.Join(fields, ",") {
		t.Errorf("error report fields: README %v, test-runner.md %v", fields, af)
	}
	var block strings.Builder
	block.WriteString("========================================\nTEST EXECUTION ERROR\n========================================\n")
	for _, f := range fields {
		v, ok := report[f]
		if !ok || strings.TrimSpace(v) == "" {
			t.Errorf("error report field %s cannot be filled from what the commands printed", f)
		}
		fmt.Fprintf(&block, "%s=%s\n", f, v)
	}
	block.WriteString("\nRecommendation: fix SCENARIO (known ids are in scenarios.yml), then re-run the step\n========================================\n")
	t.Logf("structured error report:\n%s", block.String())
	if !strings.Contains(report["error_message"], `"S9"`) {
		t.Errorf("error_message does not say what was wrong (the unknown S9): %q", report["error_message"])
	}
	if clean.code != 0 {
		t.Errorf("clean after the failure: exit %d\n%s", clean.code, clean.stderr)
	}
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
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-done:
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
				go func() {
					for l := range lines {
						rest.WriteString(l + "\n")
					}
				}()
				t.Logf("dstgen demo --stay:\n%s", rest.String())
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

// pollStatus polls bench:status the way the agent file's async loop says:
// wait the interval, poll; exit 1 again, 0 done, anything else an error.
func pollStatus(t *testing.T, sh func(string) agentResult, line string, interval time.Duration, maxPolls int,
	codes map[int]string, b bounds, measure func(agentResult, time.Duration, string)) {
	t.Helper()
	for poll := 1; poll <= maxPolls; poll++ {
		time.Sleep(interval)
		r := sh(line)
		measure(r, b.status, "~"+b.status.String()+" per poll")
		st := kvOf(r.stdout)["status"]
		if want, ok := codes[r.code]; !ok || st != want {
			t.Fatalf("poll %d: exit %d status=%q; the protocol table says exit %d is status=%s\n%s%s", poll, r.code, st, r.code, want, r.stdout, r.stderr)
		}
		switch r.code {
		case 0:
			t.Logf("bench:status: finished at poll %d (every %s)", poll, interval)
			return
		case 1:
			continue
		default:
			t.Fatalf("poll %d: exit %d (%s): the error protocol", poll, r.code, st)
		}
	}
	t.Fatalf("bench:status not finished after %d polls", maxPolls)
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

// phaseOf is the error_phase the README assigns to task: "`error_phase` is
// one of `deploy` (…), …, `scenario` (`run:scenario`, …)".
func phaseOf(t *testing.T, readme, task string) string {
	t.Helper()
	i := strings.Index(readme, "`error_phase` is one of")
	if i < 0 {
		t.Fatal("README.md no longer says which error_phase values there are")
	}
	para, _, _ := strings.Cut(readme[i:], "\n\n")
	for _, m := range regexp.MustCompile("`([a-z]+)` \\(([^)]*)\\)").FindAllStringSubmatch(para, -1) {
		if strings.Contains(m[2], "`"+task+"`") {
			return m[1]
		}
	}
	t.Fatalf("README.md names no error_phase for %s:\n%s", task, para)
	return ""
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
