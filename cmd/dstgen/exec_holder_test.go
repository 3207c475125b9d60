package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// buildBinary builds the real binary once for the caller: the holder is
// that binary re-executed, which a test binary cannot stand in for.
func buildBinary(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "dstgen")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// holderDirFor is a holder directory for one test; at cleanup the holder
// serving it is killed by its recorded PID.
func holderDirFor(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "holder")
	tb.Cleanup(func() {
		b, err := os.ReadFile(filepath.Join(dir, "holder.pid"))
		if err != nil {
			return
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return dir
}

// cliCall runs the real binary bounded by 40 s: a holder that kept the
// call's stdout open would make it hang here.
func cliCall(tb testing.TB, bin string, env []string, args ...string) (string, string, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		tb.Fatalf("%v: still running after 40s (stdout held open?)", args)
	}
	return out.String(), errOut.String(), err
}

// TestExecThroughHolder: sequential dstgen calls share one SSH connection
// through the holder; --no-holder and DSTGEN_NO_HOLDER=1 connect directly.
func TestExecThroughHolder(t *testing.T) {
	envPath, srvs, _ := execEnv(t, 1)
	bin := buildBinary(t)
	cases := []struct {
		name  string
		env   []string
		flags []string
		want  int // sshd connections for two calls
	}{
		// DSTGEN_NO_HOLDER=0: the holder case must not depend on what the
		// test runner's environment says.
		{"holder", []string{"DSTGEN_NO_HOLDER=0"}, nil, 1},
		{"--no-holder", nil, []string{"--no-holder"}, 2},
		{"DSTGEN_NO_HOLDER=1", []string{"DSTGEN_NO_HOLDER=1"}, nil, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := holderDirFor(t)
			env := append([]string{"DSTGEN_HOLDER_DIR=" + dir}, tc.env...)
			before := srvs[0].Accepted()
			for i := range 2 {
				args := append([]string{"exec", "h1", "--env", envPath}, tc.flags...)
				args = append(args, "--", "echo out-"+strconv.Itoa(i)+"; echo err >&2; exit 3")
				out, errOut, err := cliCall(t, bin, env, args...)
				var ee *exec.ExitError
				if !errorsAs(err, &ee) || ee.ExitCode() != 1 || out != "out-"+strconv.Itoa(i)+"\n" || !strings.HasPrefix(errOut, "err\n") {
					t.Fatalf("call %d: %v stdout %q stderr %q", i, err, out, errOut)
				}
			}
			if got := srvs[0].Accepted() - before; got != tc.want {
				t.Fatalf("sshd accepted %d connections for two calls, want %d", got, tc.want)
			}
			socks, _ := filepath.Glob(filepath.Join(dir, "build-*", "sock")) // one holder per build
			if running := len(socks) == 1; running != (tc.want == 1) {
				t.Errorf("holder socket present = %v, want %v", running, tc.want == 1)
			}
		})
	}
}

func errorsAs(err error, target **exec.ExitError) bool {
	ee, ok := err.(*exec.ExitError)
	*target = ee
	return ok
}

// BenchmarkCLICalls30 times 30 sequential `true` calls, one process each,
// against one sshd in one run: plain ssh, ssh with ControlMaster and
// ControlPersist, dstgen exec through the holder, and dstgen exec
// --no-holder. Run with -benchtime=1x. Goal: holder ≤ ControlMaster.
func BenchmarkCLICalls30(b *testing.B) {
	sshtest.Require(b)
	k := sshtest.NewKeys(b)
	srv := sshtest.StartTrusted(b, k, 1)[0]
	envPath := k.WriteEnv(b, []*sshtest.Server{srv}, nil, "")
	bin := buildBinary(b)
	dir := holderDirFor(b)
	cm := filepath.Join(b.TempDir(), "cm")
	sshArgs := func(extra ...string) []string {
		a := []string{"-F", "/dev/null", "-i", k.Key, "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
			"-o", "UserKnownHostsFile=" + k.KnownHosts, "-o", "StrictHostKeyChecking=yes",
			"-p", strconv.Itoa(srv.Port), "-l", sshtest.User}
		return append(append(a, extra...), srv.Host, "true")
	}
	cmOpts := []string{"-o", "ControlMaster=auto", "-o", "ControlPersist=60", "-o", "ControlPath=" + cm}
	defer func() {
		a := append([]string{"-O", "exit"}, sshArgs(cmOpts...)...)
		_ = exec.Command("ssh", a[:len(a)-1]...).Run()
	}()
	variants := []struct {
		name string
		argv []string
		env  []string
	}{
		{"ssh", append([]string{"ssh"}, sshArgs()...), nil},
		{"controlmaster", append([]string{"ssh"}, sshArgs(cmOpts...)...), nil},
		{"holder", []string{bin, "exec", "h1", "--env", envPath, "--", "true"}, []string{"DSTGEN_HOLDER_DIR=" + dir, "DSTGEN_NO_HOLDER=0"}},
		{"noholder", []string{bin, "exec", "h1", "--env", envPath, "--no-holder", "--", "true"}, nil},
		// The floor: starting the binary at all.
		{"process", []string{bin, "exec", "--help"}, nil},
	}
	const calls = 30
	total := make([]time.Duration, len(variants))
	b.ResetTimer()
	for range b.N {
		for i, v := range variants {
			start := time.Now()
			for range calls {
				cmd := exec.Command(v.argv[0], v.argv[1:]...)
				cmd.Env = append(os.Environ(), v.env...)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%s: %v: %s", v.name, err, out)
				}
			}
			total[i] += time.Since(start)
		}
	}
	b.StopTimer()
	perCall := make([]float64, len(variants))
	for i, v := range variants {
		perCall[i] = float64(total[i].Microseconds()) / 1000 / float64(calls*b.N)
		b.ReportMetric(perCall[i], v.name+"-ms/call")
	}
	b.ReportMetric(perCall[2]/perCall[1], "holder/controlmaster")
	b.ReportMetric(perCall[3]/perCall[0], "noholder/ssh")
	b.ReportMetric(perCall[2]/perCall[0], "holder/ssh")
	b.ReportMetric(0, "ns/op")
	fmt.Fprintf(os.Stderr, "per call: ssh %.1f ms, controlmaster %.1f ms, dstgen holder %.1f ms, dstgen --no-holder %.1f ms, dstgen exec --help %.1f ms\n", perCall[0], perCall[1], perCall[2], perCall[3], perCall[4])
}
