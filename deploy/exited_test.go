package deploy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// A member whose process exits before its health command passes (a
// failing sut.init, a crash at start) stops deploy's wait at once, with
// the end of its log, instead of after sut.ready_timeout_s; one that keeps
// running but never answers still waits the whole bound.
func TestStartStopsWaitingForAMemberThatExited(t *testing.T) {
	sshtest.Require(t)
	k := sshtest.NewKeys(t)
	srv := sshtest.StartTrusted(t, k, 1)[0]
	for _, c := range []struct {
		name, sut string
		want      []string
		fast      bool
	}{
		{"init fails", "  init: sh -c 'echo init-broke-here >&2; exit 3'\n  command: sleep 600\n", []string{"the SUT exited before it was healthy (exited rc=1)", "init-broke-here", "sut.init failed"}, true},
		{"command exits", "  command: sh -c 'echo crashed-at-start >&2; exit 4'\n", []string{"exited rc=4", "crashed-at-start"}, true},
		{"bootstrap member exits", "  command: sleep 600\n  bootstrap: {command: \"sh -c 'echo no-cluster >&2; exit 5'\", rank: echo 1}\n", []string{"bootstrap member m1", "exited rc=5", "no-cluster"}, true},
		{"runs, never healthy", "  command: sleep 600\n", []string{"not healthy after 4s", "never-ok"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			wd := sshtest.Workdir(t)
			y := fmt.Sprintf("ssh: {user: %s, key: %s, known_hosts: %s, config: none}\nhosts:\n  - {name: m1, address: %s, port: %d, roles: [db], workdir: %s}\n"+
				"sut:\n  name: exits\n  run: job\n  roles: [db]\n  health: {db: \"sh -c 'echo never-ok; exit 1'\"}\n  ready_timeout_s: 4\n%s",
				sshtest.User, k.Key, k.KnownHosts, srv.Host, srv.Port, wd, c.sut)
			p := filepath.Join(t.TempDir(), "env.yml")
			if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
				t.Fatal(err)
			}
			e, err := env.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			if c.fast {
				e.SUT.ReadyTimeoutS = 120 // the fail-fast must not wait for it
			}
			hs, err := Prepare(e)
			if err != nil {
				t.Fatal(err)
			}
			pool := runner.NewPool(e, runner.Options{})
			defer pool.Close()
			var out bytes.Buffer
			d := &Deployer{Env: e, Pool: pool, Hosts: hs, Out: &out, PollEvery: 200 * time.Millisecond}
			defer d.Stop(context.Background())
			began := time.Now()
			err = d.Start(context.Background())
			took := time.Since(began)
			if err == nil {
				t.Fatalf("Start succeeded:\n%s", out.String())
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			if c.fast && took > 60*time.Second {
				t.Errorf("took %s: the wait did not stop when the member exited", took)
			}
		})
	}
}
