package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// TestGeneratedBenchWorkflowOverSSH drives the generated Taskfile end to end
// against a real sshd on loopback, through `dstgen task` (go-task
// in-process) and the real dstgen binary the tasks call: deploy:upload,
// bench:start, bench:status polled until finished, bench:stop, collect.
// It proves the generated tasks, scripts and the runner CLIs fit together.
func TestGeneratedBenchWorkflowOverSSH(t *testing.T) {
	// The real binary would leave a connection holder running past the
	// test; this test is about something else.
	t.Setenv("DSTGEN_NO_HOLDER", "1")
	if testing.Short() {
		t.Skip("builds dstgen and runs sshd")
	}
	sshtest.Require(t)
	bin := filepath.Join(t.TempDir(), "dstgen")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	k := sshtest.NewKeys(t)
	srv := sshtest.Start(t, k, sshtest.Options{})
	k.Trust(t, srv)

	sut := initCopySUT(t)
	for _, b := range []string{"bin/tallyd", "bin/tallyctl"} {
		p := filepath.Join(sut, b)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho fake\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, errs := runDstgen(t, "", "init", "--sut", sut); code != 0 {
		t.Fatalf("init: exit %d %s", code, errs)
	}
	dir := filepath.Join(sut, "testing")

	// The remote work dir must be writable by the sshd test user.
	remote, err := os.MkdirTemp("/tmp", "dstgen-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A test that fails between bench:start and bench:stop leaves the
		// job and the metric samplers running: stop them by PID (the
		// samplers' pids files, then anything still naming the work dir)
		// before removing the dir they write to.
		pidFiles, _ := filepath.Glob(filepath.Join(remote, "metrics", "*", "pids"))
		for _, f := range pidFiles {
			data, _ := os.ReadFile(f)
			for _, field := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(field); err == nil && pid > 1 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		for _, pid := range sshtest.Pgrep(remote) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		os.RemoveAll(remote)
	})
	if err := os.Chmod(remote, 0o777); err != nil {
		t.Fatal(err)
	}
	// The benchmark leaves a text marker and a dstgen-shaped JSON report,
	// so the collected run can be analyzed like a real one.
	benchCmd := `echo bench-ran > report.txt; ` +
		`printf '%s\n' '{"name":"e2e","target_rate":10,"duration_s":3,"ops":30,"errors":{"timeout":0},"latency_ms":{"mean":1.5,"p50":1,"p95":2,"p99":3}}' > bench.json; sleep 3`
	writeEnv := func(name, benchCmd string) {
		t.Helper()
		extra := "workdir: " + remote + "\n" +
			"benchmark:\n  command: " + strconv.Quote(benchCmd) + "\n" +
			"parameters:\n  bench_host: h1\n"
		data, err := os.ReadFile(k.WriteEnv(t, []*sshtest.Server{srv}, [][]string{{"tallyd", "client"}}, extra))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeEnv("env.yml", benchCmd)
	// A benchmark that fails after it started: the job's rc and its first
	// stderr line must reach bench:status and collect.
	// One that fails at once, like `go run` on a host without the module.
	writeEnv("env-fail.yml", `echo 'go: go.mod file not found in current directory or any parent directory' >&2; exit 1`)
	writeEnv("env-late-fail.yml", `echo starting; sleep 2; echo 'boom: disk full on /data' >&2; echo second line >&2; exit 3`)

	task := func(name string, vars ...string) (int, string, string) {
		t.Helper()
		if len(vars) == 0 {
			vars = []string{"RUN_ID=e2e"}
		}
		return runDstgen(t, "", append(append([]string{"task", name}, vars...), "DSTGEN="+bin, "--dir", dir)...)
	}
	mustTask := func(name, wantOut string) string {
		t.Helper()
		code, out, errs := task(name)
		if code != 0 {
			t.Fatalf("task %s: exit %d\nstdout: %s\nstderr: %s", name, code, out, errs)
		}
		if !strings.Contains(out, wantOut) {
			t.Fatalf("task %s output lacks %q:\n%s\nstderr: %s", name, wantOut, out, errs)
		}
		return out
	}

	mustTask("deploy:upload", "==> Upload complete")
	start := time.Now()
	startOut := mustTask("bench:start", "benchmark_started pid=")
	if !regexp.MustCompile(`(?m)^benchmark_started pid=[0-9]+ run_id=e2e `).MatchString(startOut) {
		t.Errorf("bench:start lacks the spec marker `benchmark_started pid=<PID>` with a real pid:\n%s", startOut)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("bench:start took %v, want a few seconds", d)
	}
	sawRunning, finished := false, false
	for i := 0; i < 40 && !finished; i++ {
		code, out, errs := task("bench:status")
		switch code {
		case 0:
			finished = true
			if !strings.Contains(out, "status=finished") {
				t.Errorf("finished status output: %q", out)
			}
		case 1:
			sawRunning = true
			time.Sleep(500 * time.Millisecond)
		default:
			t.Fatalf("bench:status exit %d: %s %s", code, out, errs)
		}
	}
	if !finished {
		t.Fatal("benchmark never finished (40 polls)")
	}
	if !sawRunning {
		t.Error("bench:status never reported running (exit 1) for a 3 s benchmark")
	}
	mustTask("bench:stop", "post_benchmark_collection_complete")
	mustTask("collect", "results_dir=results/run_e2e")

	runDir := filepath.Join(dir, "results", "run_e2e")
	found := map[string]bool{}
	_ = filepath.WalkDir(runDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			found[d.Name()] = true
			if d.Name() == "report.txt" {
				if b, _ := os.ReadFile(p); !strings.Contains(string(b), "bench-ran") {
					t.Errorf("report.txt = %q", b)
				}
				if !strings.Contains(p, string(filepath.Separator)+"benchmark"+string(filepath.Separator)) {
					t.Errorf("report.txt collected outside benchmark/: %s", p)
				}
			}
		}
		return nil
	})
	for _, f := range []string{"report.txt", "bench.json", "start_time", "end_time", "bench.params"} {
		if !found[f] {
			t.Errorf("collect did not bring back %s (got %v)", f, found)
		}
	}
	// The job's own output lands where the README's tree says.
	for _, f := range []string{"stdout", "stderr", "rc"} {
		if _, err := os.Stat(filepath.Join(runDir, "benchmark", "job", f)); err != nil {
			t.Errorf("collect: the job's %s: %v", f, err)
		}
	}

	// The generated analyze task judges what collect brought back: the
	// benchmark analysis of run_e2e, not a plan verdict over no records.
	code, out, errs := runDstgen(t, "", "task", "analyze", "RESULTS=results/run_e2e", "DSTGEN="+bin, "--dir", dir)
	if code != 0 {
		t.Fatalf("task analyze: exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "session_verdict=DONE\n") {
		t.Errorf("task analyze did not run the benchmark analysis:\n%s\n%s", out, errs)
	}
	rep, err := os.ReadFile(filepath.Join(runDir, "findings", "report.md"))
	if err != nil {
		t.Fatalf("no findings/report.md after task analyze: %v", err)
	}
	if !strings.Contains(string(rep), "30") {
		t.Errorf("report does not show the 30 ops the benchmark reported:\n%s", rep)
	}

	// A benchmark that fails at once is a failed start (exit 1), with the
	// job's rc and first stderr line, never "benchmark_started".
	code, out, errs = task("bench:start", "RUN_ID=e2efail", "ENV_FILE=env-fail.yml")
	if kv := contractKV(out); code != 1 || strings.Contains(out, "benchmark_started") || kv["rc"] != "1" ||
		kv["error"] != "go: go.mod file not found in current directory or any parent directory" ||
		!strings.Contains(errs, "exited 1 at once: go: go.mod file not found") {
		t.Fatalf("bench:start of a benchmark that fails at once: exit %d (want 1 with benchmark_failed rc=1 error=)\nstdout: %s\nstderr: %s", code, out, errs)
	}

	// A benchmark that fails 2 s in: started (exit 0), then bench:status
	// exit 4 with the rc and its first stderr line, and collect exit 1
	// naming the job's failure and the missing history — never a result.
	late := []string{"RUN_ID=e2elate", "ENV_FILE=env-late-fail.yml"}
	if code, out, errs := task("bench:start", late...); code != 0 || !strings.Contains(out, "benchmark_started") {
		t.Fatalf("bench:start of a benchmark that fails later: exit %d\n%s\n%s", code, out, errs)
	}
	var last string
	for i := 0; ; i++ {
		code, out, errs := task("bench:status", late...)
		if code == 1 && i < 40 {
			time.Sleep(500 * time.Millisecond)
			continue
		}
		if kv := contractKV(out); code != exitBenchFailed || kv["rc"] != "3" || kv["error"] != "boom: disk full on /data" {
			t.Fatalf("bench:status of a failed benchmark: exit %d (want %d)\nstdout: %s\nstderr: %s", code, exitBenchFailed, out, errs)
		}
		last = errs
		break
	}
	if !strings.Contains(last, "exited 3: boom: disk full on /data") {
		t.Errorf("bench:status's stderr does not name the failure: %q", last)
	}
	if code, out, errs := task("bench:stop", late...); code != 0 {
		t.Fatalf("bench:stop: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = task("collect", late...)
	if code != 1 || contractKV(out)["history"] != "missing" || !strings.Contains(errs, "job bench-e2elate on h1 exited 3: boom: disk full on /data") || !strings.Contains(errs, "no history") {
		t.Fatalf("collect of a failed benchmark: exit %d (want 1, naming the job and the missing history)\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "results", "run_e2elate", "benchmark", "job", "stderr")); err != nil || !strings.Contains(string(b), "second line") {
		t.Errorf("the failed job's stderr was not collected: %v %q", err, b)
	}
}
