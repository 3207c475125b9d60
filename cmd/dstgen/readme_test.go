package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// readmeBlock is a fenced block of README.md marked `sh run`.
type readmeBlock struct {
	line int
	text string
}

// runnableBlocks extracts README.md's ```sh run blocks.
func runnableBlocks(t *testing.T, path string) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []readmeBlock
	var cur *readmeBlock
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(l) == "```sh run":
			cur = &readmeBlock{line: n}
		case cur != nil && strings.TrimSpace(l) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += l + "\n"
		}
	}
	if cur != nil {
		t.Fatalf("README.md:%d: unclosed runnable block", cur.line)
	}
	return out
}

// readmeExpect says how a runnable block is judged, keyed by its first
// line: its exit code, what its output must show, what it needs.
var readmeExpect = map[string]struct {
	code  int
	check func(t *testing.T, out string)
	root  bool // needs root, the task binary and etcd (the testbed block)
}{
	"go run ./cmd/dstgen demo": {code: 1, check: func(t *testing.T, out string) { checkDemoHeadline(t, out) }},
	"dstgen testbed up 4 --roles etcd,etcd,etcd,client": {code: 0, root: true, check: func(t *testing.T, out string) {
		if n := strings.Count(out, "health=ok"); n != 3 {
			t.Errorf("the testbed quickstart deployed %d healthy members, want 3", n)
		}
		if !strings.Contains(out, "status=down") {
			t.Errorf("the testbed quickstart did not end with the testbed down")
		}
	}},
}

// TestREADMECommands runs every block of README.md fenced as `sh run`,
// literally, from the repository root with the freshly built dstgen and
// dstgen-task first on PATH (as after `go install`), so the README cannot
// drift from what works: the demo, and the testbed quickstart as root.
func TestREADMECommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's demo and testbed quickstart")
	}
	// The long end-to-end tests run side by side: the demo-hosted ones need
	// no network namespace, and the namespace ones queue on sshtest's lock.
	t.Parallel()
	blocks := runnableBlocks(t, "../../README.md")
	if len(blocks) == 0 {
		t.Fatal("README.md has no `sh run` block: the demo at least must be one")
	}
	bin := buildDstgen(t)
	runner, err := exec.LookPath(taskRunnerName)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(runner, filepath.Join(filepath.Dir(bin), taskRunnerName)); err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		first := strings.TrimSpace(strings.SplitN(b.text, "\n", 2)[0])
		if i := strings.Index(first, "  #"); i > 0 {
			first = strings.TrimSpace(first[:i])
		}
		exp, ok := readmeExpect[first]
		if !ok {
			t.Errorf("README.md:%d: runnable block %q has no expectation in readmeExpect", b.line, first)
			continue
		}
		t.Run(first, func(t *testing.T) {
			t.Parallel()
			if exp.root {
				sshtest.Require(t)
				for _, need := range []string{"task", "etcd", "iptables"} {
					if _, err := exec.LookPath(need); err != nil {
						t.Skipf("%s not on PATH", need)
					}
				}
				sshtest.LockNet(t)
				_ = os.RemoveAll("/tmp/etcd-testing")
				t.Cleanup(func() {
					// The block ends with testbed down; if it failed midway,
					// stop the SUT and take the testbed down here.
					stop := exec.Command("task", "-x", "service:stop")
					stop.Dir, stop.Env = "/tmp/etcd-testing", append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "DSTGEN_NO_HOLDER=1")
					_ = stop.Run()
					_ = exec.Command(bin, "testbed", "down").Run()
					_ = os.RemoveAll("/tmp/etcd-testing")
				})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
			defer cancel()
			start := time.Now()
			cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", b.text)
			cmd.Dir = "../.."
			cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "DSTGEN_NO_HOLDER=1", "NO_COLOR=1")
			out, err := cmd.CombinedOutput()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatalf("README.md:%d: %v", b.line, err)
			}
			t.Logf("README.md:%d: exit %d after %s\n%s", b.line, code, time.Since(start).Round(100*time.Millisecond), tail(string(out), 40))
			if code != exp.code {
				t.Fatalf("README.md:%d: exit %d, want %d", b.line, code, exp.code)
			}
			exp.check(t, string(out))
		})
	}
}

// checkDemoHeadline is what `dstgen demo` must show: the safe partition
// PASS-smoke with the proxy counters as landing evidence, the stale-read
// run FAIL-reproducible with the anomaly, the report files where the
// headline says, and the progress lines.
func checkDemoHeadline(t testing.TB, text string) {
	t.Helper()
	lines := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && (f[0] == "safe" || f[0] == "stale-reads") && regexp.MustCompile(`^S[0-9]+$`).MatchString(f[1]) {
			lines[f[0]+" "+f[1]] = sc.Text()
		}
	}
	for _, c := range []struct{ key, verdict, evidence string }{
		{"safe S1", "", ""}, // a clean smoke run: whatever the analyzer says, with its line
		{"safe S2", "PASS-smoke", "proxy_counter"},
		{"stale-reads S2", "FAIL-reproducible", "cannot be linearized"},
	} {
		l, ok := lines[c.key]
		if !ok {
			t.Errorf("no headline line for %s", c.key)
			continue
		}
		if f := strings.Fields(l); !strings.HasPrefix(f[2], c.verdict) || len(f) < 4 || !strings.Contains(l, c.evidence) {
			t.Errorf("%s: %q; want verdict %s with evidence %q", c.key, l, c.verdict, c.evidence)
		}
	}
	kinds := map[string]bool{}
	copies := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^(safe|stale-reads) (report|porcupine): (\S+)$`).FindAllStringSubmatch(text, -1) {
		kinds[m[1]+" "+m[2]+" "+filepath.Ext(m[3])] = true
		if _, err := os.Stat(m[3]); err != nil {
			t.Errorf("%s %s: %v", m[1], m[2], err)
		}
		if d := filepath.Dir(filepath.Dir(m[3])); strings.HasSuffix(d, "-reports") {
			copies[d] = true
		}
	}
	for d := range copies {
		_ = os.RemoveAll(d) // the demo's copies of its reports, once checked
	}
	for _, k := range []string{"safe report .md", "safe report .html", "stale-reads report .html", "stale-reads porcupine .html"} {
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
