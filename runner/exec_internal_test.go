package runner

import (
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dstgen/dstgen/internal/shell"
)

// TestWrapLocal runs the remote wrapper under the local /bin/sh (dash on
// Debian, as on the test sshd) to pin exit codes, stdout and the pgid file.
func TestWrapLocal(t *testing.T) {
	tests := []struct {
		cmd  string
		out  string
		code int
	}{
		{"echo hi", "hi\n", 0},
		{"exit 7", "", 7},
		{"printf '%s' \"$0\"", "sh", 0},
		{"echo 'it''s'; exit 1", "its\n", 1},
	}
	for _, g := range []int32{groupUnknown, groupGrouped, groupPlain} {
		for _, tc := range tests {
			m := randomMarker()
			c := exec.Command("sh", "-c", wrap(tc.cmd, m, 5*time.Second, g))
			out, err := c.Output()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.out || code != tc.code {
				t.Errorf("grouping %d %q: out %q code %d, want %q %d", g, tc.cmd, out, code, tc.out, tc.code)
			}
			if err := exec.Command("test", "-e", pgidFile(m)).Run(); err == nil {
				t.Errorf("grouping %d %q: pgid file left behind", g, tc.cmd)
			}
		}
	}
}

// TestKillScriptLocal: the kill script ends the whole group under dash,
// whose kill builtin rejects "--".
func TestKillScriptLocal(t *testing.T) {
	// groupPlain promises no group: nothing to kill it by.
	for _, g := range []int32{groupUnknown, groupGrouped} {
		t.Run(strconv.Itoa(int(g)), func(t *testing.T) { killScriptLocal(t, g) })
	}
}

func killScriptLocal(t *testing.T, g int32) {
	m := randomMarker()
	tag := "dstgen-killtest-" + m
	c := exec.Command("sh", "-c", wrap("sh -c 'sleep 300; : "+tag+"' & sleep 301; : "+tag, m, 30*time.Second, g))
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	deadline := time.Now().Add(3 * time.Second)
	for exec.Command("test", "-s", pgidFile(m)).Run() != nil {
		if time.Now().After(deadline) {
			t.Fatal("pgid file never written")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if out, err := exec.Command("sh", "-c", killScript(m)).CombinedOutput(); err != nil {
		t.Fatalf("kill script: %v %s", err, out)
	}
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		_ = c.Process.Kill()
		t.Fatal("wrapper still running after the kill script")
	}
	time.Sleep(100 * time.Millisecond)
	if out, _ := exec.Command("pgrep", "-f", tag).Output(); len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("survivors: %s", out)
	}
	// Garbage in the pgid file must not turn into "kill -9 -1".
	if out, err := exec.Command("sh", "-c", "echo 1 2 >"+pgidFile(m)+"; "+killScript(m)).CombinedOutput(); err != nil {
		t.Fatalf("kill script on garbage: %v %s", err, out)
	}
}

func TestLineWriter(t *testing.T) {
	var mu sync.Mutex
	var b strings.Builder
	a := NewLineWriter(&b, &mu, "[a] ")
	z := NewLineWriter(&b, &mu, "[z] ")
	_, _ = a.Write([]byte("one\ntw"))
	_, _ = z.Write([]byte("x\n"))
	_, _ = a.Write([]byte("o\nthree"))
	a.Flush()
	z.Flush()
	want := "[a] one\n[z] x\n[a] two\n[a] three\n"
	if b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
}

func TestSummary(t *testing.T) {
	tests := []struct {
		r    Result
		want string
	}{
		{Result{Host: "h", Status: StatusOK, Elapsed: 1234567 * time.Microsecond}, "host=h status=ok exit=0 elapsed=1.235s"},
		{Result{Host: "h", Status: StatusTimeout, ExitCode: 124, Elapsed: 2 * time.Second, Err: `a "b"`}, `host=h status=timeout exit=124 elapsed=2s error="a \"b\""`},
	}
	for _, tc := range tests {
		if got := Summary(tc.r); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// TestQuoteArgsRunsLiterally: a quoted argv must run as exactly that argv
// under a real sh, including a first word that looks like an assignment.
func TestQuoteArgsRunsLiterally(t *testing.T) {
	tests := []struct {
		name string
		argv []string
		want string // stdout+stderr must contain it
		code int
	}{
		{"plain", []string{"printf", "%s|", "a b", "$(id)", "`id`", "'", "-n"}, "a b|$(id)|`id`|'|-n|", 0},
		{"assignment-looking command", []string{"PATH=/nonexistent", "echo", "ran"}, "not found", 127},
		{"assignment-looking later word", []string{"echo", "A=b"}, "A=b", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command("sh", "-c", shell.QuoteArgs(tc.argv)).CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(string(out), tc.want) {
				t.Errorf("sh -c %s: exit %d, output %q; want exit %d containing %q", shell.QuoteArgs(tc.argv), code, out, tc.code, tc.want)
			}
		})
	}
}

// TestPoolLogOneLineAtATime: a Pool's dials, keepalives and sessions log
// from their own goroutines into one Options.Log, which need not be safe
// for concurrent use (a test's bytes.Buffer, a wrapper that keeps state):
// every line arrives whole and none is lost. Under -race two unserialised
// writers fail it (go test -race ./... found them in cmd/dstgen).
func TestPoolLogOneLineAtATime(t *testing.T) {
	var buf strings.Builder
	p := &Pool{opt: Options{Log: &buf}}
	const writers, lines = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				p.logf("host h%d reconnect %d of a line long enough to be written in more than one piece", w, i)
			}
		})
	}
	wg.Wait()
	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(got) != writers*lines {
		t.Fatalf("%d lines, want %d", len(got), writers*lines)
	}
	for _, l := range got {
		if !strings.HasPrefix(l, "dstgen: host h") || !strings.HasSuffix(l, "more than one piece") {
			t.Fatalf("torn line %q", l)
		}
	}
}
