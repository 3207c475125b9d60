package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParse(t *testing.T) {
	ok := []string{"-id", "2", "-listen", "127.0.0.1:0", "-peers", "1=127.0.0.1:1,2=127.0.0.1:2,3=127.0.0.1:3"}
	tests := []struct {
		name      string
		args      []string
		env       map[string]string
		wantStale bool
		wantErr   string
	}{
		{"ok", ok, nil, false, ""},
		{"flag", append(ok, "-stale-reads"), nil, true, ""},
		{"env", ok, map[string]string{"KV_STALE_READS": "1"}, true, ""},
		{"flag wins over env", append(ok, "-stale-reads=false"), map[string]string{"KV_STALE_READS": "1"}, false, ""},
		{"bad env", ok, map[string]string{"KV_STALE_READS": "yes"}, false, "KV_STALE_READS=\"yes\""},
		{"no listen", []string{"-id", "1"}, nil, false, "-listen \"\""},
		{"bad peers", []string{"-id", "1", "-listen", "127.0.0.1:0", "-peers", "2=x"}, nil, false, "-peers"},
		{"leader not in peers", []string{"-id", "2", "-listen", "127.0.0.1:0", "-peers", "3=h:3"}, nil, false, "-leader 1"},
		{"no id", []string{"-listen", "127.0.0.1:0"}, nil, false, "-id 0"},
		{"bad timeout", append(ok, "-timeout", "0s"), nil, false, "-timeout"},
		{"unknown flag", append(ok, "-x"), nil, false, "-x"},
		{"stray argument", append(ok, "extra"), nil, false, "unexpected argument"},
	}
	for _, tt := range tests {
		cfg, _, err := parse(tt.args, env(tt.env))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: error %v, want one line containing %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || cfg.StaleReads != tt.wantStale {
			t.Errorf("%s: stale %t err %v, want stale %t", tt.name, cfg.StaleReads, err, tt.wantStale)
		}
	}
}

func TestRunBadFlagExit2(t *testing.T) {
	var out, errb strings.Builder
	if code := run(context.Background(), []string{"-id", "0", "-listen", "127.0.0.1:0"}, env(nil), &out, &errb); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if lines := strings.Count(errb.String(), "\n"); lines != 1 || !strings.HasPrefix(errb.String(), "kvnode: -id 0") {
		t.Errorf("stderr %q, want one line naming -id", errb.String())
	}
}

// TestBinaryStartLineAndSIGTERM: the built binary prints its start line,
// serves /health, and exits 0 on SIGTERM.
func TestBinaryStartLineAndSIGTERM(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "kvnode")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(ctx, bin, "-id", "1", "-listen", "127.0.0.1:0", "-leader", "1", "-stale-reads")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }() // by PID; a no-op once it exited
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatalf("no start line: %v", sc.Err())
	}
	line := sc.Text()
	var addr string
	for f := range strings.FieldsSeq(line) {
		if a, ok := strings.CutPrefix(f, "listen="); ok {
			addr = a
		}
	}
	if !strings.HasPrefix(line, "kvnode id=1 listen=127.0.0.1:") || !strings.HasSuffix(line, " leader=1 stale_reads=true") || addr == "" {
		t.Fatalf("start line %q", line)
	}
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", resp, err)
	}
	resp.Body.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("after SIGTERM: %v, want exit 0", err)
	}
}

// -config reads the same flags from a file (what deploy renders per
// host); the command line wins; a line that is no flag names its line.
func TestParseConfigFile(t *testing.T) {
	dir := t.TempDir()
	file := func(text string) string {
		p := filepath.Join(dir, fmt.Sprintf("c%d.conf", len(text)))
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := file("# node 2 of 3\nid = 2\nlisten = 127.0.0.1:0\npeers = 1=127.0.0.1:1,2=127.0.0.1:2,3=127.0.0.1:3\nleader = 1\n\ntimeout = 700ms\n")
	cfg, listen, err := parse([]string{"-config", good}, env(nil))
	if err != nil || cfg.ID != 2 || listen != "127.0.0.1:0" || cfg.Timeout != 700*time.Millisecond || len(cfg.Peers) != 3 {
		t.Fatalf("config file: %+v %q %v", cfg, listen, err)
	}
	if cfg, _, err := parse([]string{"-config", good, "-id", "3"}, env(nil)); err != nil || cfg.ID != 3 {
		t.Errorf("the command line does not win: %+v %v", cfg, err)
	}
	for _, tc := range []struct{ text, want string }{
		{"id 2\n", ":1: \"id 2\": want name = value"},
		{"bogus = 1\n", ":1: \"bogus = 1\""},
		{"id = 1\ntimeout = soon\n", ":2: timeout"},
	} {
		if _, _, err := parse([]string{"-config", file(tc.text)}, env(nil)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.text, err, tc.want)
		}
	}
	if _, _, err := parse([]string{"-config", filepath.Join(dir, "missing")}, env(nil)); err == nil || !strings.Contains(err.Error(), "-config") {
		t.Errorf("missing file: %v", err)
	}
}
