package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/testsupport/sshtest"
	"golang.org/x/crypto/ssh"
)

func execRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// execEnv starts n sshd and writes an env.yml for them (hosts h1..hn;
// h1 and h2 have role db).
func execEnv(t *testing.T, n int) (string, []*sshtest.Server, *sshtest.Keys) {
	t.Helper()
	sshtest.Require(t)
	k := sshtest.NewKeys(t)
	srvs := sshtest.StartTrusted(t, k, n)
	return k.WriteEnv(t, srvs, [][]string{{"db"}, {"db"}}, ""), srvs, k
}

func TestExecExitCodes(t *testing.T) {
	envPath, _, _ := execEnv(t, 2)
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     string // exact, when not "*"
		stderrHave []string
	}{
		{"ok single host shell string", []string{"exec", "h1", "--env", envPath, "--", "echo a | tr a b"}, 0, "b\n",
			[]string{"host=h1 status=ok exit=0 elapsed="}},
		{"words are quoted", []string{"exec", "h1", "--env", envPath, "--", "printf", "%s|", "a b", "$(id)"}, 0, "a b|$(id)|",
			nil},
		{"non-zero exit", []string{"exec", "h1", "--env", envPath, "--", "exit 3"}, 1, "",
			[]string{"host=h1 status=failed exit=3"}},
		{"all hosts prefixed", []string{"exec", "all", "--env", envPath, "--", "echo x"}, 0, "*",
			[]string{"host=h1 status=ok", "host=h2 status=ok"}},
		{"timeout", []string{"exec", "h1", "--env", envPath, "--timeout", "2s", "--", "sleep 600"}, 124, "",
			[]string{"host=h1 status=timeout exit=124", `error="host h1: command still running after 2s`}},
		{"timeout above ceiling", []string{"exec", "h1", "--env", envPath, "--timeout", "31s", "--", "true"}, 2, "",
			[]string{"--timeout 31s exceeds the 30s ceiling"}},
		{"unknown target", []string{"exec", "nope", "--env", envPath, "--", "true"}, 2, "",
			[]string{`unknown target "nope"; valid: all, role:db, h1, h2`}},
		{"hostile target", []string{"exec", "h1;touch /tmp/x", "--env", envPath, "--", "true"}, 2, "",
			[]string{`unknown target "h1;touch /tmp/x"`}},
		{"no dash", []string{"exec", "h1", "--env", envPath}, 2, "", []string{"the command goes after --"}},
		{"no command", []string{"exec", "h1", "--env", envPath, "--"}, 2, "", []string{"no command after --"}},
		{"two targets", []string{"exec", "h1", "h2", "--env", envPath, "--", "true"}, 2, "", []string{"exactly one TARGET"}},
		{"missing env", []string{"exec", "h1", "--env", filepath.Join(t.TempDir(), "none.yml"), "--", "true"}, 2, "",
			[]string{"read env file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := execRun(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errOut)
			}
			if tc.stdout != "*" && out != tc.stdout {
				t.Errorf("stdout %q, want %q", out, tc.stdout)
			}
			for _, want := range tc.stderrHave {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			if code == 2 && strings.Count(strings.TrimSpace(errOut), "\n") > 0 && !strings.Contains(errOut, "host=") {
				t.Errorf("exit-2 reason is not one line: %q", errOut)
			}
		})
	}
}

func TestExecTimeoutReturnsPromptly(t *testing.T) {
	envPath, _, _ := execEnv(t, 1)
	start := time.Now()
	code, _, _ := execRun(t, "exec", "h1", "--env", envPath, "--timeout", "2s", "--", "sleep 600")
	if el := time.Since(start); code != 124 || el > 3500*time.Millisecond {
		t.Fatalf("exit %d after %s, want 124 within ~2s", code, el)
	}
}

func TestExecMixedResults(t *testing.T) {
	envPath, _, _ := execEnv(t, 2)
	// h1 fails, h2 times out: timeout (124) outranks failure (1).
	code, out, errOut := execRun(t, "exec", "role:db", "--env", envPath, "--timeout", "3s", "--parallel", "2", "--",
		`case $SSH_CONNECTION in *" `+portOf(t, envPath, 0)+`") echo one; exit 5;; esac; echo two; sleep 30`)
	if code != 124 {
		t.Fatalf("exit %d, want 124\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"[h1] one\n", "[h2] two\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{"host=h1 status=failed exit=5", "host=h2 status=timeout exit=124"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// portOf returns the port of host i in the env file written by WriteEnv.
func portOf(t *testing.T, envPath string, i int) string {
	t.Helper()
	b, err := os.ReadFile(envPath)
	if err != nil {
		t.Fatal(err)
	}
	var ports []string
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(l), "port: "); ok {
			ports = append(ports, p)
		}
	}
	return ports[i]
}

func TestExecJSON(t *testing.T) {
	envPath, _, _ := execEnv(t, 2)
	code, out, _ := execRun(t, "exec", "all", "--env", envPath, "--json", "--", "echo hi; echo warn >&2; exit 0")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var doc struct {
		Results []struct {
			Host, Status, Stdout, Stderr string
			Exit                         int
			ElapsedMS                    int64 `json:"elapsed_ms"`
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if len(doc.Results) != 2 || doc.Results[0].Host != "h1" || doc.Results[1].Host != "h2" {
		t.Fatalf("results %+v", doc.Results)
	}
	for _, r := range doc.Results {
		if r.Status != "ok" || r.Exit != 0 || r.Stdout != "hi\n" || r.Stderr != "warn\n" || r.ElapsedMS <= 0 {
			t.Errorf("result %+v", r)
		}
	}
}

func TestExecHostKeyRefusal(t *testing.T) {
	envPath, srvs, k := execEnv(t, 1)
	if err := os.Remove(k.KnownHosts); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := execRun(t, "exec", "h1", "--env", envPath, "--", "true")
	if code != 2 || !strings.Contains(errOut, "unknown host key") || !strings.Contains(errOut, srvs[0].HostKey.Type()) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = execRun(t, "exec", "h1", "--env", envPath, "--accept-new-host", "--", "true")
	if code != 0 {
		t.Fatalf("with --accept-new-host: exit %d: %s", code, errOut)
	}
	// Trust-on-first-use is never silent: the accepted fingerprint is shown.
	if fp := ssh.FingerprintSHA256(srvs[0].HostKey); !strings.Contains(errOut, "accepted new host key") || !strings.Contains(errOut, fp) {
		t.Errorf("--accept-new-host stderr %q does not name the accepted key %s", errOut, fp)
	}
	if b, _ := os.ReadFile(k.KnownHosts); !strings.Contains(string(b), srvs[0].HostKeyLine) {
		t.Fatalf("known_hosts not written: %q", b)
	}
	code, _, _ = execRun(t, "exec", "h1", "--env", envPath, "--", "true")
	if code != 0 {
		t.Fatalf("after acceptance: exit %d", code)
	}
}

func TestExecUnreachable(t *testing.T) {
	envPath, _, _ := execEnv(t, 1)
	b, _ := os.ReadFile(envPath)
	bad := strings.Replace(string(b), "port: "+portOf(t, envPath, 0), "port: 1", 1)
	if err := os.WriteFile(envPath, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := execRun(t, "exec", "h1", "--env", envPath, "--", "true")
	// The reason names the env.yml line of h1 (the 6th) and its address.
	if code != 2 || !strings.Contains(errOut, "dstgen: "+envPath+":6: host h1 (127.0.0.1:1): connect: ") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestExecFanOutFourHosts(t *testing.T) {
	envPath, srvs, _ := execEnv(t, 4)
	start := time.Now()
	code, out, errOut := execRun(t, "exec", "all", "--env", envPath, "--parallel", "2", "--", "sleep 1; echo done")
	el := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// 4 hosts, 2 at a time, 1 s each: at least 2 s, well under the 4 s of
	// one-by-one.
	if el < 2*time.Second || el > 3900*time.Millisecond {
		t.Errorf("took %s with --parallel 2", el)
	}
	for i := range srvs {
		h := "h" + string(rune('1'+i))
		if !strings.Contains(out, "["+h+"] done\n") || !strings.Contains(errOut, "host="+h+" status=ok exit=0") {
			t.Errorf("%s missing from output:\n%s\n%s", h, out, errOut)
		}
	}
}

func TestExecHostileEnv(t *testing.T) {
	tests := []struct{ name, yml, want string }{
		{"host name", "hosts:\n  - {name: 'a$(reboot)', address: b}\n", `env.yml:2: host name "a$(reboot)"`},
		{"address", "hosts:\n  - {name: a, address: '-oProxyCommand=touch /tmp/x'}\n", "env.yml:2: host a: address"},
		{"inline key", "ssh:\n  key: \"-----BEGIN OPENSSH PRIVATE KEY-----\\nAAAA\"\nhosts:\n  - {name: a, address: b}\n", "env.yml:2: ssh.key looks like inline private key material"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "env.yml")
			if err := os.WriteFile(p, []byte(tc.yml), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := execRun(t, "exec", "all", "--env", p, "--", "true")
			if code != 2 || !strings.Contains(errOut, tc.want) || out != "" {
				t.Fatalf("exit %d stdout %q stderr %q, want 2 and %q", code, out, errOut, tc.want)
			}
			if strings.Contains(errOut, "AAAA") {
				t.Errorf("stderr echoes key material: %q", errOut)
			}
		})
	}
}
