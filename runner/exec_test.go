package runner

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// testPool starts n real sshd servers trusted by known_hosts and returns a
// pool on them.
func testPool(t *testing.T, n int, extra string, o Options) (*Pool, *env.Env, []*sshtest.Server, *sshtest.Keys) {
	t.Helper()
	sshtest.Require(t)
	k := sshtest.NewKeys(t)
	srvs := sshtest.StartTrusted(t, k, n)
	e, err := env.Load(k.WriteEnv(t, srvs, nil, extra))
	if err != nil {
		t.Fatal(err)
	}
	p := NewPool(e, o)
	t.Cleanup(func() { _ = p.Close() })
	return p, e, srvs, k
}

func TestRunStatuses(t *testing.T) {
	p, e, _, _ := testPool(t, 1, "", Options{})
	h := e.Hosts[0]
	tests := []struct {
		name, cmd, stdin string
		status           string
		exit             int
		wantOut, wantErr string
	}{
		{"ok", "echo hello", "", StatusOK, 0, "hello\n", ""},
		{"failed", "echo oops >&2; exit 3", "", StatusFailed, 3, "", "oops\n"},
		{"quoted arg", "printf '%s\\n' " + shell.Quote("a b;$(id)`x`"), "", StatusOK, 0, "a b;$(id)`x`\n", ""},
		{"stdin", "tr a-z A-Z", "abc\n", StatusOK, 0, "ABC\n", ""},
		{"signal", "kill -TERM $$", "", StatusFailed, 143, "", "*"},
		{"user", "id -un", "", StatusOK, 0, sshtest.User + "\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			var in *strings.Reader
			if tc.stdin != "" {
				in = strings.NewReader(tc.stdin)
			}
			var r Result
			var err error
			if in != nil {
				r, err = p.Run(context.Background(), h, tc.cmd, in, &out, &errb)
			} else {
				r, err = p.Run(context.Background(), h, tc.cmd, nil, &out, &errb)
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if r.Status != tc.status || r.ExitCode != tc.exit {
				t.Errorf("status=%s exit=%d, want %s %d", r.Status, r.ExitCode, tc.status, tc.exit)
			}
			if out.String() != tc.wantOut {
				t.Errorf("stdout %q, want %q", out.String(), tc.wantOut)
			}
			if tc.wantErr != "*" && errb.String() != tc.wantErr {
				t.Errorf("stderr %q, want %q", errb.String(), tc.wantErr)
			}
			if r.Host != h.Name {
				t.Errorf("host %q", r.Host)
			}
		})
	}
}

func TestRunTimeoutKillsProcessGroup(t *testing.T) {
	p, e, _, _ := testPool(t, 1, "", Options{Timeout: 2 * time.Second})
	marker := "dstgen-orphan-" + randomMarker()
	// A child in the background plus a foreground sleep: both must die.
	cmd := "sh -c " + shell.Quote("sleep 600; : "+marker) + " & sh -c " + shell.Quote("sleep 601; : "+marker) + "; wait"
	// Dial first so that the 2 s measure the command, not a handshake on a
	// loaded machine.
	if r, err := p.Run(context.Background(), e.Hosts[0], "true", nil, nil, nil); err != nil {
		t.Fatalf("warm-up: %+v %v", r, err)
	}
	start := time.Now()
	r, err := p.Run(context.Background(), e.Hosts[0], cmd, nil, nil, nil)
	el := time.Since(start)
	if err == nil || r.Status != StatusTimeout || r.ExitCode != ExitTimeout {
		t.Fatalf("got %+v err=%v, want status timeout exit 124", r, err)
	}
	if el < 2*time.Second || el > 3500*time.Millisecond {
		t.Errorf("returned after %s, want ~2s", el)
	}
	// Within 1 s, i.e. well before the remote timeout backstop (bound+2 s)
	// would fire: the client-side kill must be what ends them.
	waitNoProc(t, marker, time.Second)
	// The pool is still usable after a timeout.
	if r, err := p.Run(context.Background(), e.Hosts[0], "true", nil, nil, nil); err != nil || r.Status != StatusOK {
		t.Fatalf("run after timeout: %+v %v", r, err)
	}
}

// TestRunDefaultCeiling is the one long test: with no --timeout and no
// deadline, a remote sleep 600 comes back as a timeout within 31 s and
// leaves nothing behind.
func TestRunDefaultCeiling(t *testing.T) {
	if testing.Short() {
		t.Skip("30 s test; skipped with -short")
	}
	t.Parallel()
	p, e, _, _ := testPool(t, 1, "", Options{})
	mustRun(t, p, e.Hosts[0], "true")
	marker := "dstgen-ceiling-" + randomMarker()
	start := time.Now()
	r, err := p.Run(context.Background(), e.Hosts[0], "sh -c "+shell.Quote("sleep 600; : "+marker), nil, nil, nil)
	el := time.Since(start)
	if err == nil || r.Status != StatusTimeout || r.ExitCode != ExitTimeout {
		t.Fatalf("got %+v %v", r, err)
	}
	if el < MaxTimeout || el > MaxTimeout+time.Second {
		t.Errorf("returned after %s, want within [30s, 31s]", el)
	}
	waitNoProc(t, marker, time.Second)
}
