package nemesis

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// nsExec runs scripts inside network namespaces with real iptables and
// tc: the transport is `ip netns exec` instead of SSH (the SSH path is
// proven end to end in cmd/dstgen), but every rule and signal is real.
// Host.Address names the namespace's address; ns maps it to the namespace.
type nsExec struct {
	ns map[string]string // host name → namespace
}

func (x nsExec) Run(ctx context.Context, h env.Host, script string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ns, ok := x.ns[h.Name]
	if !ok {
		return "", fmt.Errorf("%s: no namespace", h.Name)
	}
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "/bin/sh", "-c", script)
	cmd.Stdout, cmd.Stderr = &out, &errb
	// A killed `ip` leaves its children holding the pipes (an iptables
	// waiting on the xtables lock): stop waiting for them too.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return out.String(), fmt.Errorf("%v: %s", err, msg)
	}
	return out.String(), nil
}

// newCluster makes n namespace hosts (h1..hn, 10.77.0.10+i) with their own
// work dirs; everything is removed when the test ends.
func newCluster(t *testing.T, n int) ([]Host, nsExec) {
	t.Helper()
	nt := sshtest.NewNet(t, n)
	x := nsExec{ns: map[string]string{}}
	var hosts []Host
	for i, nh := range nt.Hosts {
		name := fmt.Sprintf("h%d", i+1)
		x.ns[name] = nh.NS
		wd := t.TempDir()
		if err := os.Chmod(wd, 0o755); err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, Host{Host: env.Host{Name: name, Address: nh.Addr}, Workdir: wd})
	}
	return hosts, x
}
