package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// flow is a bundled example walked the way the design card says its user
// walks it: `dstgen testbed up`, `dstgen init --sut … --yes`, env.yml from
// `dstgen testbed env --into` (hosts, ssh and the capabilities the
// namespaces lack — nothing else), then the generated Taskfile under the
// real `task` and `dstgen analyze results/` from testing/.
type flow struct {
	t                      *testing.T
	bin, taskBin, dir, tb  string
	sut                    string
	env                    []string
	validated, lastSession string
}

// newFlow brings up an n-host testbed with roles, runs init on the example
// and writes env.yml. Everything it starts is stopped by t's cleanup.
func newFlow(t *testing.T, example, roles string, n int) *flow {
	t.Helper()
	return newFlowPlan(t, example, roles, n, "", "")
}

// newFlowPlan is newFlow with init given --plan planPath ("" = the
// example's own) and the testbed below tbParent ("" = a test temp dir, mode
// 0700: a SUT that drops to another user needs a parent it can traverse).
func newFlowPlan(t *testing.T, example, roles string, n int, planPath, tbParent string) *flow {
	t.Helper()
	sshtest.Require(t)
	taskBin, err := exec.LookPath("task")
	if err != nil {
		t.Skip("the go-task binary is not on PATH (scripts/test.sh installs it)")
	}
	if tbParent == "" {
		tbParent = t.TempDir()
	}
	f := &flow{t: t, bin: buildDstgen(t), taskBin: taskBin, dir: filepath.Join(t.TempDir(), "testing"), tb: filepath.Join(tbParent, "tb")}
	f.env = append(os.Environ(), "DSTGEN="+f.bin, "NO_COLOR=1", "DSTGEN_SSH_CONFIG=none", "DSTGEN_HOLDER_DIR="+privateHolder(t), "DSTGEN_NO_HOLDER=0")
	if f.sut, err = filepath.Abs(filepath.Join("../../examples", example)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sshtest.LockNet(t)
	t.Cleanup(func() {
		if code, out := f.dstgen("testbed", "down", "--dir", f.tb); code != 0 {
			t.Errorf("testbed down: exit %d\n%s", code, out)
		}
	})
	f.must(f.dstgen("testbed", "up", strconv.Itoa(n), "--dir", f.tb, "--roles", roles))
	initArgs := []string{"init", "--sut", f.sut, "--out", f.dir, "--yes"}
	if planPath != "" {
		initArgs = append(initArgs, "--plan", planPath)
	}
	f.must(f.dstgen(initArgs...))
	f.must(f.dstgen("testbed", "env", "--dir", f.tb, "--into", filepath.Join(f.dir, "env.yml")))
	return f
}

// run runs a command with the flow's environment in testing/, bounded.
func (f *flow) run(limit time.Duration, name string, args ...string) (int, string) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = f.dir, f.env
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), b.String()
	} else if err != nil {
		f.t.Fatalf("%s %v: %v\n%s", name, args, err, b.String())
	}
	return 0, b.String()
}

func (f *flow) dstgen(args ...string) (int, string) {
	f.t.Helper()
	return f.run(3*time.Minute, f.bin, args...)
}

// task is `task -x ARGS` in testing/.
func (f *flow) task(args ...string) (int, string) {
	f.t.Helper()
	return f.run(5*time.Minute, f.taskBin, append([]string{"-x"}, args...)...)
}

func (f *flow) must(code int, out string) string {
	f.t.Helper()
	if code != 0 {
		// The end (where the error is) first: CI shows a failure's first
		// lines and may cut the middle of a long output.
		f.t.Fatalf("exit %d; the output ends:\n%s\nthe whole output:\n%s", code, lastLines(out, 12), out)
	}
	return out
}

// card is the design card's flow after init and env.yml: `task -x
// validate`, `task -x deploy`, `task -x run:scenario SCENARIO=<id>` for
// each scenario, a benchmark (bench:run, collect), and `dstgen analyze
// results/` from testing/, with no edit of scenarios.yml and no other
// command. It returns the analysis: every scenario's verdict and checkers,
// and the benchmark's result.
func (f *flow) card(scenarios ...string) rootAnalysis {
	t := f.t
	t.Helper()
	began := time.Now()
	f.validated = f.must(f.task("validate"))
	t.Logf("validate (default output):\n%s", f.validated)
	f.must(f.task("deploy"))
	t.Logf("deploy: %s", time.Since(began).Round(time.Second))
	for _, id := range scenarios {
		out := f.must(f.task("run:scenario", "SCENARIO="+id))
		f.lastSession = sessionOf(t, f.dir, out)
		t.Logf("%s: %s", id, time.Since(began).Round(time.Second))
	}
	const runID = "card_bench"
	f.must(f.task("bench:run", "RUN_ID="+runID, "DURATION=15"))
	f.must(f.task("collect", "RUN_ID="+runID))
	code, out := f.dstgen("analyze", "results/")
	if code == 2 {
		t.Fatalf("dstgen analyze results/: exit 2\n%s", out)
	}
	t.Logf("dstgen analyze results/ (exit %d):\n%s", code, out)
	return parseRootAnalysis(t, out)
}

// rootAnalysis is what `dstgen analyze results/` printed: each scenario's
// latest verdict (latest.<ID>= session=) and the newest benchmark run's
// (latest.benchmark=).
type rootAnalysis struct {
	verdicts map[string]string // scenario id → verdict
	sessions map[string]string // scenario id → the session dir judged
	bench    string            // session_verdict of the newest benchmark run
}

var (
	rootVerdictRE = regexp.MustCompile(`(?m)^latest\.(S\S+)=(\S+)\s+session=(\S+)`)
	rootBenchRE   = regexp.MustCompile(`(?m)^latest\.benchmark=(\S+)`)
)

func parseRootAnalysis(t *testing.T, out string) rootAnalysis {
	t.Helper()
	ra := rootAnalysis{verdicts: map[string]string{}, sessions: map[string]string{}}
	for _, m := range rootVerdictRE.FindAllStringSubmatch(out, -1) {
		ra.verdicts[m[1]], ra.sessions[m[1]] = m[2], m[3]
	}
	if m := rootBenchRE.FindStringSubmatch(out); m != nil {
		ra.bench = m[1]
	}
	return ra
}

// checkersRan requires that every checker id's report in session sdir
// (findings/report.json, written by the root analysis) lists ran with the
// outcome valid: judged with its checker, not a pass by default.
// why is what a scenario's verdict rests on, for a failure message: its
// reasons and the red flags that did not pass, from the session's
// report.json (sdir relative to the testing dir, or absolute).
func (f *flow) why(sdir, id string) string {
	if !filepath.IsAbs(sdir) {
		sdir = filepath.Join(f.dir, sdir)
	}
	data, err := os.ReadFile(filepath.Join(sdir, "findings", "report.json"))
	if err != nil {
		return err.Error()
	}
	rep := map[string]any{}
	if err := json.Unmarshal(data, &rep); err != nil {
		return err.Error()
	}
	s := scenarioOf(rep, id)
	if s == nil {
		return "no scenario " + id + " in report.json"
	}
	var flags []any
	if rf, ok := s["red_flags"].([]any); ok {
		for _, c := range rf {
			if m, ok := c.(map[string]any); ok && m["status"] != "pass" && m["status"] != "n/a" {
				flags = append(flags, m)
			}
		}
	}
	return "reasons " + js(s["reasons"]) + "; red flags not passed " + js(flags)
}

func (f *flow) checkersRan(sdir, id string, want ...string) {
	t := f.t
	t.Helper()
	if !filepath.IsAbs(sdir) {
		sdir = filepath.Join(f.dir, sdir)
	}
	data, err := os.ReadFile(filepath.Join(sdir, "findings", "report.json"))
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	rep := map[string]any{}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	for _, c := range want {
		got := checkerOf(rep, id, c)
		if got == nil || got["outcome"] != "valid" {
			t.Errorf("%s: checker %s = %v, want it run and valid; scenario: %s", id, c, got, js(scenarioOf(rep, id)))
		}
	}
}
