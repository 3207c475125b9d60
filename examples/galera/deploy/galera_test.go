// Package deploy holds the Galera example's deploy files; this test brings
// a real 3-member MariaDB Galera cluster up on a dstgen testbed through
// dstgen's deploy path, from an env.yml like a user's.
package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dstgen/dstgen/deploy"
	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/nemesis"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/testbed"
	"github.com/dstgen/dstgen/testbed/netns"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// sutYAML is the sut: block of examples/galera/README.md ("Deploy"), with
// the repository's files named by absolute path (EXAMPLE).
const sutYAML = `
sut:
  name: galera
  roles: [galera]
  run: job
  install: {binary: /usr/sbin/mariadbd, version: "/usr/sbin/mariadbd --version"}
  data_dir: "{{ .Host.Workdir }}/data/mysql"
  configs:
    - template: EXAMPLE/deploy/galera.cnf.tmpl
    - template: EXAMPLE/scripts/start.sh
    - template: EXAMPLE/scripts/rank.sh
    - template: EXAMPLE/scripts/healthy.sh
    - template: EXAMPLE/scripts/init.sh
  secrets: [dstgen_db]
  init: sh {{ .Host.Workdir }}/etc/init.sh {{ .Host.Workdir }}/etc/galera.cnf {{ .Host.Workdir }}/secrets/dstgen_db
  command: sh {{ .Host.Workdir }}/etc/start.sh {{ .Host.Workdir }}/etc/galera.cnf
  bootstrap:
    command: sh {{ .Host.Workdir }}/etc/start.sh {{ .Host.Workdir }}/etc/galera.cnf --wsrep-new-cluster
    rank: sh {{ .Host.Workdir }}/etc/rank.sh {{ .Host.Workdir }}/etc/galera.cnf
    health: sh {{ .Host.Workdir }}/etc/healthy.sh {{ .Host.Workdir }}/etc/galera.cnf 1
  health:
    galera: sh {{ .Host.Workdir }}/etc/healthy.sh {{ .Host.Workdir }}/etc/galera.cnf {{ len .SUT.Members }}
  ready_timeout_s: 90
`

func requireGalera(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces of the testbed)")
	}
	for _, f := range []string{"/usr/sbin/mariadbd", "/usr/bin/mariadb", "/usr/bin/mariadb-install-db", "/usr/lib/galera/libgalera_smm.so", "/usr/bin/rsync"} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("%s missing (apt-get install mariadb-server galera-4 rsync): %v", f, err)
		}
	}
}

// sql runs a statement on member i through its socket (namespaces share
// the filesystem, so the control node reaches it).
func sql(t *testing.T, workdirs []string, i int, q string) string {
	t.Helper()
	out, err := exec.Command("mariadb", "--defaults-file="+filepath.Join(workdirs[i], "etc", "galera.cnf"),
		"--connect-timeout=5", "-N", "-B", "-e", q).CombinedOutput()
	if err != nil {
		t.Fatalf("h%d: %s: %v: %s", i+1, q, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestGaleraOrderedDeployKillAndHeal: deploy bootstraps h1 (all ranks
// equal, fresh) and the others join: 3 Synced, cluster size 3. A member
// killed with kill-9 comes back through `dstgen heal --all`'s path
// (HealAll + RestartFailed) by joining, with IST. h1 killed, then h2 and
// h3: a bootstrap from h1 (less advanced) is refused with the ranks, and
// the heal bootstraps from h2 (the highest seqno, the first of the tie)
// with no row lost. Teardown leaves no mariadbd and no namespace.
func TestGaleraOrderedDeployKillAndHeal(t *testing.T) {
	requireGalera(t)
	example, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var hostsYAML []byte
	var seen []int // every SUT pid the test saw, checked gone at the end
	var workdirs []string
	if os.Getenv("DSTGEN_GALERA_HOSTS") == "loopback" {
		// The same test on sshds bound to 127.0.1.1-4 of the loopback
		// (every Galera listener binds its member's address), for a
		// machine whose testbed subnet is taken by another testbed.
		hostsYAML, workdirs = loopbackHosts(t)
	} else {
		hostsYAML, workdirs = testbedHosts(t, &seen)
	}
	t.Logf("hosts up: %s", time.Since(start))
	// After the hosts: the wait for the testbed lock is not the cluster's.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for i, wd := range workdirs[:3] {
			b, _ := os.ReadFile(filepath.Join(wd, "jobs", "sut-galera", "stderr"))
			t.Logf("h%d's SUT stderr, last lines:\n%s", i+1, tail(b))
		}
	})
	envPath := filepath.Join(t.TempDir(), "env.yml")
	if err := os.WriteFile(envPath, append(hostsYAML, strings.ReplaceAll(sutYAML, "EXAMPLE", example)...), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := env.Load(envPath)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := deploy.Prepare(e)
	if err != nil {
		t.Fatal(err)
	}
	pool := runner.NewPool(e, runner.Options{})
	defer pool.Close()
	var out bytes.Buffer
	d := &deploy.Deployer{Env: e, Pool: pool, Hosts: hs, Out: &out}
	for _, step := range []func(context.Context) error{d.Install, d.Configure, d.Start} {
		if err := step(ctx); err != nil {
			t.Fatalf("%v\noutput:\n%s", err, out.String())
		}
	}
	t.Logf("deploy: %s", time.Since(start))
	want := func(what string) {
		t.Helper()
		for _, r := range d.Health(ctx) {
			if !r.OK || !strings.Contains(r.Output, "wsrep_local_state_comment=Synced wsrep_cluster_size=3") {
				t.Fatalf("%s: %s health %v: %s", what, r.Host, r.OK, r.Output)
			}
		}
		sts, err := d.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sts {
			seen = append(seen, s.PID)
		}
	}
	want("after deploy")
	for _, w := range []string{"host=h1 rank='-1 (fresh: empty data dir)'", "sut_order=done bootstrap=h1", "as=bootstrap", "host=h2 sut=started mode=job job=sut-galera"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("deploy output lacks %q:\n%s", w, out.String())
		}
	}
	sql(t, workdirs, 0, "CREATE DATABASE IF NOT EXISTS dstgen; CREATE TABLE dstgen.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=InnoDB; INSERT INTO dstgen.t (v) VALUES (1),(2),(3)")

	x := runner.Shell{Pool: pool}
	nh := d.NemesisHosts(nil)
	cluster := nemesis.SUTOnly(nh)
	k9, err := nemesis.Lookup("kill-9")
	if err != nil {
		t.Fatal(err)
	}
	kill := func(epoch string, idx ...int) {
		t.Helper()
		var targets []nemesis.Host
		for _, i := range idx {
			targets = append(targets, cluster[i])
		}
		if _, err := k9.Inject(ctx, x, nemesis.Fault{Epoch: epoch, Nemesis: "kill-9", Targets: targets, Cluster: cluster}); err != nil {
			t.Fatalf("kill-9 %v: %v", idx, err)
		}
	}
	// heal is `dstgen heal --all` (cmd/dstgen/heal.go): HealAll, then
	// RestartFailed.
	heal := func() []nemesis.Removed {
		t.Helper()
		removed, err := nemesis.HealAll(ctx, x, nh)
		if err != nil {
			t.Fatalf("heal: %v", err)
		}
		if _, err := d.RestartFailed(ctx, nil); err != nil {
			t.Fatalf("restart failed: %v\n%s", err, out.String())
		}
		if err := d.WaitHealthy(ctx); err != nil {
			t.Fatalf("after heal: %v", err)
		}
		return removed
	}

	// One member: it joins the two that run, by IST.
	start = time.Now()
	kill("w1", 1)
	sql(t, workdirs, 0, "INSERT INTO dstgen.t (v) VALUES (4),(5)")
	removed := heal()
	t.Logf("kill-9 h2 + heal: %s, removed %v", time.Since(start), removed)
	if len(removed) != 1 || !strings.Contains(removed[0].What, "undo w1.restart-ordered") || !strings.Contains(removed[0].What, "h1, h3 run: nobody bootstraps") {
		t.Errorf("heal removed %+v; want h2's ordered undo, restarted by joining", removed)
	}
	want("after kill-9 h2 and heal")
	if log, err := os.ReadFile(filepath.Join(workdirs[1], "jobs", "sut-galera", "stderr")); err != nil || !strings.Contains(string(log), "IST received") {
		t.Errorf("h2 did not rejoin by IST (%v); its log:\n%s", err, tail(log))
	}

	// The whole cluster, h1 first: h2 and h3 commit more before they die.
	start = time.Now()
	kill("w2", 0)
	sql(t, workdirs, 1, "INSERT INTO dstgen.t (v) VALUES (6),(7),(8)")
	kill("w3", 1, 2)
	out.Reset()
	d.BootstrapFrom = "h1"
	_, err = d.Ordered(ctx, []string{"h1", "h2", "h3"})
	d.BootstrapFrom = ""
	if err == nil || !strings.Contains(err.Error(), "bootstrap from h1 refused: its rank") || !strings.Contains(err.Error(), "< h2's") {
		t.Fatalf("bootstrap from the less advanced h1 = %v; want a refusal naming h2's rank\n%s", err, out.String())
	}
	t.Logf("refused: %v", err)
	if sts, _ := d.Status(ctx); sts[0].State == "running" {
		t.Fatalf("the refused bootstrap started h1 anyway: %+v", sts[0])
	}
	removed = heal()
	t.Logf("kill-9 all + heal: %s, removed %v", time.Since(start), removed)
	var why string
	for _, r := range removed {
		why += r.Host + ": " + r.What + "\n"
	}
	if len(removed) != 3 || !strings.Contains(why, "h2 has the highest rank") {
		t.Errorf("heal after the whole cluster died: %s; want the bootstrap from h2", why)
	}
	want("after kill-9 of every member and heal")
	for i := range 3 {
		if n := sql(t, workdirs, i, "SELECT COUNT(*) FROM dstgen.t"); n != "8" {
			t.Errorf("h%d holds %s rows, want 8 (no commit lost)", i+1, n)
		}
	}
	sts, err := d.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		if err := syscall.Kill(s.PID, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s: pid %d still there after stop", s.Host, s.PID)
		}
	}
	if n, err := strconv.Atoi(strings.TrimSpace(pgrepCount(workdirs[0]))); err == nil && n != 0 {
		t.Errorf("%d mariadbd processes of this testbed left after stop", n)
	}
}

// testbedHosts brings up the 4-host testbed (3 galera + client) and
// returns its env.yml hosts and the members' work dirs; Down in cleanup
// must leave no SUT pid of seen and no namespace.
func testbedHosts(t *testing.T, seen *[]int) ([]byte, []string) {
	t.Helper()
	sshtest.LockNet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := testbed.CheckTools(exec.LookPath); err != nil {
		t.Skip("testbed:", err)
	}
	// Not t.TempDir (mode 0700): mariadbd runs as mysql, which must
	// reach the data dirs below it.
	dir, err := os.MkdirTemp("", "dstgen-galera-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tbDir := filepath.Join(dir, "tb")
	upped := false
	t.Cleanup(func() {
		defer os.RemoveAll(dir)
		if _, err := testbed.Down(context.Background(), tbDir); err != nil {
			t.Errorf("testbed down: %v", err)
		}
		if !upped {
			return // another testbed holds the subnet: its namespaces are not ours
		}
		for _, p := range *seen {
			// A zombie counts as gone: Down killed it, and the reaper
			// (the machine's pid 1) may not have waited for it yet.
			if !netns.Gone(context.Background(), p, 2*time.Second) {
				t.Errorf("pid %d still there after testbed down", p)
			}
		}
		if out, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(out), "dstgen-tb-") {
			t.Errorf("namespaces left after testbed down:\n%s", out)
		}
	})
	up, err := testbed.Up(ctx, testbed.Config{Dir: tbDir, N: 4, Roles: []string{"galera", "galera", "galera", "client"}, DataMiB: 256})
	if err != nil {
		t.Fatalf("testbed up: %v", err)
	}
	upped = true
	y, err := testbed.EnvYAML(up.State)
	if err != nil {
		t.Fatal(err)
	}
	var wds []string
	for _, h := range up.State.Hosts {
		wds = append(wds, h.Workdir)
	}
	return y, wds
}

// loopbackHosts starts 4 sshds on 127.0.1.1-4 (work dirs of their own)
// and returns the env.yml hosts of them, roles as testbedHosts'.
func loopbackHosts(t *testing.T) ([]byte, []string) {
	t.Helper()
	keys := sshtest.NewKeys(t)
	var srvs []*sshtest.Server
	var wds []string
	for i := range 4 {
		srvs = append(srvs, sshtest.Start(t, keys, sshtest.Options{Addr: fmt.Sprintf("127.0.1.%d", i+1)}))
		wds = append(wds, sshtest.Workdir(t))
	}
	keys.Trust(t, srvs...)
	var b strings.Builder
	fmt.Fprintf(&b, "ssh: {user: %s, key: %s, known_hosts: %s, config: none}\nhosts:\n", sshtest.User, keys.Key, keys.KnownHosts)
	for i, s := range srvs {
		role := "galera"
		if i == 3 {
			role = "client"
		}
		// The login user is not root here: mariadbd runs as it.
		fmt.Fprintf(&b, "  - {name: h%d, address: %s, port: %d, roles: [%s], workdir: %s, vars: {galera_user: %s}}\n", i+1, s.Host, s.Port, role, wds[i], sshtest.User)
	}
	return []byte(b.String()), wds
}

func pgrepCount(dir string) string {
	out, _ := exec.Command("pgrep", "-c", "-f", "mariadbd --defaults-file="+dir).Output()
	if len(out) == 0 {
		return "0"
	}
	return string(out)
}

func tail(b []byte) string {
	s := string(b)
	if len(s) > 1500 {
		s = s[len(s)-1500:]
	}
	return fmt.Sprint(s)
}
