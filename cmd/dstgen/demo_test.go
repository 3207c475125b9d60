package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDemoBadInput: a --bug that is no setting, an --src that is not
// examples/kv and a working directory with no examples/kv above it are
// each one line on stderr and exit 2, before anything is built.
func TestDemoBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown bug", []string{"demo", "--bug", "nonsense"}, `--bug "nonsense": want stale-reads, none or both`},
		{"src not examples/kv", []string{"demo", "--src", t.TempDir()}, "not examples/kv"},
		{"extra argument", []string{"demo", "now"}, "unknown command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runDstgen(t, "", c.args...)
			if code != 2 || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 || out != "" {
				t.Fatalf("exit %d stdout %q stderr %q; want 2 and one line with %q", code, out, errs, c.want)
			}
		})
	}
	t.Run("no examples/kv above the working directory", func(t *testing.T) {
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chdir(t.TempDir()); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = os.Chdir(wd) }()
		code, out, errs := runDstgen(t, "", "demo", "--bug", "none")
		if code != 2 || !strings.Contains(errs, "examples/kv not found") || strings.Count(strings.TrimSpace(errs), "\n") > 0 || out != "" {
			t.Fatalf("exit %d stdout %q stderr %q; want 2 and one line saying examples/kv was not found", code, out, errs)
		}
	})
}

// TestDemoEndToEnd runs `dstgen demo --dir T` as a child process, as a
// user would from the repository root: the safe partition scenario is
// PASS-smoke with the proxy counters as landing evidence, the stale-read
// run FAIL-reproducible with the anomaly, the report files are where the
// headline says, and the exit code is the last analysis's (1: FAIL).
func TestDemoEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo builds examples/kv and runs three scenarios")
	}
	bin := buildDstgen(t)
	// dstgen task finds its runner beside dstgen, as after go install.
	runner, err := exec.LookPath(taskRunnerName)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(runner, filepath.Join(filepath.Dir(bin), taskRunnerName)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "demo")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, "demo", "--dir", dir)
	cmd.Dir = "../.." // the repository root, where `go run ./cmd/dstgen demo` runs
	cmd.Env = append(os.Environ(), "DSTGEN_NO_HOLDER=1")
	out, err := cmd.CombinedOutput()
	wall := time.Since(start)
	t.Logf("dstgen demo: wall %s\n%s", wall.Round(100*time.Millisecond), out)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		if b, rerr := os.ReadFile(filepath.Join(dir, "demo.log")); rerr == nil {
			t.Logf("demo.log:\n%s", tail(string(b), 200))
		}
		t.Fatalf("exit: %v; want 1 (the stale-read run's FAIL is the last analysis)", err)
	}
	text := string(out)
	lines := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && (f[0] == "safe" || f[0] == "stale-reads") && regexp.MustCompile(`^S[0-9]+$`).MatchString(f[1]) {
			lines[f[0]+" "+f[1]] = sc.Text()
		}
	}
	checks := []struct{ key, verdict, evidence string }{
		// S1's verdict is whatever the analyzer says of a clean smoke
		// run; the line must be there, with evidence.
		{"safe S1", "", ""},
		{"safe S2", "PASS-smoke", "proxy"},
		{"stale-reads S2", "FAIL-reproducible", ""},
	}
	for _, c := range checks {
		l, ok := lines[c.key]
		if !ok {
			t.Errorf("no headline line for %s", c.key)
			continue
		}
		f := strings.Fields(l)
		if !strings.HasPrefix(f[2], c.verdict) || len(f) < 4 || !strings.Contains(l, c.evidence) {
			t.Errorf("%s: %q; want verdict %s with evidence (%q)", c.key, l, c.verdict, c.evidence)
		}
	}
	paths := regexp.MustCompile(`(?m)^(safe|stale-reads) (report|porcupine): (\S+)$`).FindAllStringSubmatch(text, -1)
	kinds := map[string]bool{}
	for _, m := range paths {
		kinds[m[1]+" "+m[2]+" "+filepath.Ext(m[3])] = true
		if _, err := os.Stat(m[3]); err != nil {
			t.Errorf("%s %s: %v", m[1], m[2], err)
		}
	}
	for _, k := range []string{"safe report .md", "safe report .html", "stale-reads report .md", "stale-reads report .html", "stale-reads porcupine .html"} {
		if !kinds[k] {
			t.Errorf("headline names no %s", k)
		}
	}
	for _, phase := range []string{"phase=build", "phase=hosts", "phase=deploy", "phase=ran", "ops=", "phase=rerun", "phase=analyze"} {
		if !strings.Contains(text, phase) {
			t.Errorf("no progress line with %s", phase)
		}
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
