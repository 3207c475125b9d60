package deploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/bootorder"
	"github.com/dstgen/dstgen/internal/oneline"
	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/internal/wait"
	"github.com/dstgen/dstgen/runner"
	"golang.org/x/sync/errgroup"
)

// Deployer runs the deploy actions on prepared hosts. Every action prints
// one key=value line per host to Out and returns an error naming each host
// that failed; hosts run in parallel, at most Parallel at once.
type Deployer struct {
	Env      *env.Env
	Pool     *runner.Pool
	Hosts    []Host
	Out      io.Writer
	Parallel int // 0 = 8
	// PollEvery is the interval of the bounded waits (package install,
	// readiness); 0 = 1 s.
	PollEvery time.Duration
	// BootstrapFrom names the member that must bootstrap when Start finds
	// no member running (sut.bootstrap; "" = the highest rank). It is
	// refused, with the reason, unless its rank is the highest.
	BootstrapFrom string

	mu sync.Mutex
}

// Status of the SUT on one host, as Status reports it.
type Status struct {
	Host   string
	Mode   string // systemd | job
	State  string // running | stopped | failed
	PID    int
	Detail string
}

// installTimeout bounds a package installation (a job polled over SSH).
const installTimeout = 10 * time.Minute

func (d *Deployer) printf(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.Out, format+"\n", args...)
}

func (d *Deployer) every() time.Duration {
	if d.PollEvery > 0 {
		return d.PollEvery
	}
	return time.Second
}

// each runs fn on every host of hs in parallel and joins the failures.
func (d *Deployer) each(ctx context.Context, hs []Host, fn func(context.Context, Host) error) error {
	n := d.Parallel
	if n <= 0 {
		n = 8
	}
	var g errgroup.Group
	g.SetLimit(n)
	errs := make([]error, len(hs))
	for i, h := range hs {
		g.Go(func() error {
			if err := fn(ctx, h); err != nil {
				errs[i] = fmt.Errorf("host %s: %w", h.Name, err)
			}
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}

// Run runs script on h (runner.Script): its stdout, or "exit N: why".
func (d *Deployer) Run(ctx context.Context, h Host, script string) (string, error) {
	return runner.Script(ctx, d.Pool, h.Host, script)
}

// asRoot is the shell prologue that defines SUDO: empty for root, sudo -n
// otherwise (never a password prompt: that would hang the round trip).
const asRoot = `if [ "$(id -u)" -eq 0 ] || ! command -v sudo >/dev/null 2>&1; then SUDO=; else SUDO="sudo -n"; fi
`

// binary is what Install verifies: sut.install.binary, else the uploaded
// artifact's name in <workdir>/bin.
func (d *Deployer) binary(h Host) string {
	if h.Binary != "" {
		return h.Binary
	}
	if a := d.Env.SUT.Install.Artifact; a != "" {
		return path.Join(h.Workdir, "bin", filepath.Base(a))
	}
	return ""
}

// BinaryPresent reports the binary Install verifies on h ("" when
// sut.install names none) and whether h has it; err is a host that did
// not answer, never "missing".
func (d *Deployer) BinaryPresent(ctx context.Context, h Host) (bin string, ok bool, err error) {
	if bin = d.binary(h); bin == "" {
		return "", false, nil
	}
	ok, err = d.present(ctx, h, bin)
	return bin, ok, err
}

// Install puts the SUT on every SUT host and verifies it: the artifact is
// uploaded to <workdir>/bin (a Go main package directory is built for each
// host's OS/arch first); a missing binary is installed from
// sut.install.package (apt-get, dnf or yum, as a job polled within
// installTimeout); then the binary must be present and its version
// command must answer. A host without any of these is reported, not
// guessed at.
func (d *Deployer) Install(ctx context.Context) error {
	in := d.Env.SUT.Install
	hs := SUTHosts(d.Hosts)
	switch {
	case in.Artifact != "" && goPackageDir(in.Artifact):
		// A Go main package: built for each host's OS/arch, as the driver.
		if err := d.buildAndPush(ctx, in.Artifact, "artifact", hs); err != nil {
			return err
		}
	case in.Artifact != "":
		if err := d.push(ctx, hs, func(h Host) string { return path.Join(h.Workdir, "bin") }, in.Artifact); err != nil {
			return err
		}
	}
	return d.each(ctx, hs, func(ctx context.Context, h Host) error {
		bin := d.binary(h)
		if bin == "" {
			d.printf("host=%s install=skipped reason=%s", h.Name, shell.Quote("sut.install names no binary, package or artifact"))
			return nil
		}
		present, err := d.present(ctx, h, bin)
		if err != nil {
			return err
		}
		if !present && in.Package != "" {
			if err := d.installPackage(ctx, h, in.Package); err != nil {
				return err
			}
			if present, err = d.present(ctx, h, bin); err != nil {
				return err
			}
		}
		if !present {
			hint := "set sut.install.package or sut.install.artifact in " + d.Env.Path
			if in.Package != "" {
				hint = "package " + in.Package + " installed but provides no " + bin
			}
			return fmt.Errorf("binary %s not found (%s)", bin, hint)
		}
		version := ""
		if h.Version != "" {
			out, err := d.Run(ctx, h, "sh -c "+shell.Quote(h.Version)+" 2>&1 | head -n 1")
			if err != nil {
				return fmt.Errorf("version command %q: %w", h.Version, err)
			}
			if version = strings.TrimSpace(out); version == "" {
				return fmt.Errorf("version command %q printed nothing", h.Version)
			}
		}
		d.printf("host=%s binary=%s present=yes version=%s", h.Name, shell.Quote(bin), shell.Quote(version))
		return nil
	})
}

func (d *Deployer) present(ctx context.Context, h Host, bin string) (bool, error) {
	out, err := d.Run(ctx, h, "if command -v "+shell.Quote(bin)+" >/dev/null 2>&1; then echo yes; else echo no; fi")
	if err != nil {
		return false, fmt.Errorf("look for %s: %w", bin, err)
	}
	return strings.TrimSpace(out) == "yes", nil
}

// installPackage runs the package manager as a job: an installation can
// take minutes, far beyond one 30 s round trip. Parallel installs on hosts
// that share one dpkg (network namespaces) wait for its lock.
func (d *Deployer) installPackage(ctx context.Context, h Host, pkgs string) error {
	words := strings.Fields(pkgs)
	for _, w := range words {
		if strings.HasPrefix(w, "-") {
			return fmt.Errorf("sut.install.package %q: a package name may not start with '-'", w)
		}
	}
	q := shell.QuoteArgs(words)
	script := asRoot + `export DEBIAN_FRONTEND=noninteractive
if command -v apt-get >/dev/null 2>&1; then
  $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends ` + q + ` || { $SUDO apt-get -o DPkg::Lock::Timeout=300 update -q && $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends ` + q + `; }
elif command -v dnf >/dev/null 2>&1; then $SUDO dnf install -y ` + q + `
elif command -v yum >/dev/null 2>&1; then $SUDO yum install -y ` + q + `
else echo "no apt-get, dnf or yum on this host: install "` + shell.Quote(pkgs) + `" by hand" >&2; exit 3
fi`
	id := "install-" + d.name()
	d.printf("host=%s install=package packages=%s job=%s", h.Name, shell.Quote(pkgs), id)
	if _, err := runner.StartJob(ctx, d.Pool, h.Host, h.Workdir, id, []string{"sh", "-c", script}); err != nil {
		return fmt.Errorf("start package install: %w", err)
	}
	deadline := time.Now().Add(installTimeout)
	for {
		st, err := runner.JobStatusOf(ctx, d.Pool, h.Host, h.Workdir, id)
		if err == nil && st.Status == runner.StatusFinished {
			if st.RC != nil && *st.RC == 0 {
				return nil
			}
			tail, _ := runner.JobLogs(ctx, d.Pool, h.Host, h.Workdir, id, 3, true)
			return fmt.Errorf("package install exited %s: %s", rcString(st.RC), oneline.Fold(string(tail)))
		}
		if err == nil && (st.Status == runner.StatusLost || st.Status == runner.StatusAbsent) {
			return fmt.Errorf("package install job %s is %s", id, st.Status)
		}
		if time.Now().After(deadline) {
			_, _ = runner.StopJob(ctx, d.Pool, h.Host, h.Workdir, id, 5*time.Second)
			return fmt.Errorf("package install still running after %s; stopped", installTimeout)
		}
		if err := wait.Sleep(ctx, 2*d.every()); err != nil {
			return err
		}
	}
}

func rcString(rc *int) string {
	if rc == nil {
		return "?"
	}
	return strconv.Itoa(*rc)
}

// push uploads local files to a per-host directory. runner.Push takes one
// remote dir for all hosts, so hosts with different dirs go one by one.
func (d *Deployer) push(ctx context.Context, hs []Host, dir func(Host) string, locals ...string) error {
	return d.each(ctx, hs, func(ctx context.Context, h Host) error {
		if _, err := d.Run(ctx, h, "mkdir -p "+shell.Quote(dir(h))); err != nil {
			return fmt.Errorf("create %s: %w", dir(h), err)
		}
		res, err := runner.Push(ctx, d.Pool, []env.Host{h.Host}, locals, dir(h), 1, nil)
		if err != nil {
			return err
		}
		for _, r := range res {
			if r.Status != runner.FileOK {
				return fmt.Errorf("upload %s: %s %s", r.Source, r.Status, r.Reason)
			}
			d.printf("host=%s uploaded=%s sha256=%s", h.Name, shell.Quote(r.File), r.SHA256)
		}
		return nil
	})
}

// Configure installs sut.secrets on every host (InstallSecrets), then
// creates the SUT's dirs on every SUT host and installs its rendered
// configs (uploaded over SFTP, atomically, sha256-checked).
func (d *Deployer) Configure(ctx context.Context) error {
	if err := d.InstallSecrets(ctx); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "dstgen-deploy-")
	if err != nil {
		return fmt.Errorf("configure: %w", err)
	}
	defer os.RemoveAll(tmp)
	return d.each(ctx, SUTHosts(d.Hosts), func(ctx context.Context, h Host) error {
		dirs := []string{path.Join(h.Workdir, "etc"), h.Facts.DataDir, path.Join(h.Workdir, "logs")}
		for _, c := range h.Configs {
			dirs = append(dirs, path.Dir(c.Dest))
		}
		if _, err := d.Run(ctx, h, "mkdir -p "+shell.QuoteArgs(dirs)); err != nil {
			return fmt.Errorf("create dirs: %w", err)
		}
		for i, c := range h.Configs {
			local := filepath.Join(tmp, h.Name, strconv.Itoa(i), path.Base(c.Dest))
			if err := os.MkdirAll(filepath.Dir(local), 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(local, c.Data, 0o600); err != nil {
				return err
			}
			res, err := runner.Push(ctx, d.Pool, []env.Host{h.Host}, []string{local}, path.Dir(c.Dest), 1, nil)
			if err != nil {
				return fmt.Errorf("install %s: %w", c.Dest, err)
			}
			for _, r := range res {
				if r.Status != runner.FileOK {
					return fmt.Errorf("install %s: %s %s", c.Dest, r.Status, r.Reason)
				}
				d.printf("host=%s config=%s from=%s sha256=%s", h.Name, shell.Quote(c.Dest), shell.Quote(c.Template), r.SHA256)
			}
		}
		d.printf("host=%s data_dir=%s", h.Name, shell.Quote(h.Facts.DataDir))
		return nil
	})
}

func (d *Deployer) name() string {
	if d.Env.SUT.Name != "" {
		return d.Env.SUT.Name
	}
	return "sut"
}

func (d *Deployer) unit() string  { return "dstgen-" + d.name() + ".service" }
func (d *Deployer) jobID() string { return "sut-" + d.name() }

// mode resolves sut.run for h: auto is systemd when the host booted with it
// (sd_booted's test: /run/systemd/system exists), PID 1 is systemd in this
// same network namespace (a namespace on a systemd machine shares /run but
// a unit started there would run outside it), and systemd-run is there.
func (d *Deployer) mode(ctx context.Context, h Host) (string, error) {
	switch m := d.Env.SUT.Run; m {
	case RunSystemd, RunJob:
		return m, nil
	}
	out, err := d.Run(ctx, h, `if [ -d /run/systemd/system ] && [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ] &&
  [ -n "$(readlink /proc/1/ns/net 2>/dev/null)" ] && [ "$(readlink /proc/1/ns/net)" = "$(readlink /proc/self/ns/net)" ] &&
  command -v systemd-run >/dev/null 2>&1; then echo systemd; else echo job; fi`)
	if err != nil {
		return "", fmt.Errorf("detect systemd: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// Start starts the SUT on every SUT host where it is not running, then
// waits, bounded by sut.ready_timeout_s, until every health command
// answers. With sut.bootstrap the start is ordered (Ordered): the
// bootstrap member first, the others once it is healthy.
func (d *Deployer) Start(ctx context.Context) error {
	if d.Env.SUT.Bootstrap != nil {
		var all []string
		for _, h := range SUTHosts(d.Hosts) {
			all = append(all, h.Name)
		}
		if _, err := d.Ordered(ctx, all); err != nil {
			return err
		}
		return d.WaitHealthy(ctx)
	}
	if err := d.each(ctx, SUTHosts(d.Hosts), func(ctx context.Context, h Host) error { return d.startHost(ctx, h, false) }); err != nil {
		return err
	}
	return d.WaitHealthy(ctx)
}

// Ordered brings up the SUT members named in want that do not run, by
// the rule of sut.bootstrap (internal/bootorder, docs/env-yml.md §7.1):
// nobody bootstraps while a member runs; when none runs, the highest
// ranked member (or Deployer.BootstrapFrom, checked against the ranks)
// starts with sut.bootstrap.command, and the others start with
// sut.command once its health commands pass. It prints the choice and
// every rank read, and returns what it did.
func (d *Deployer) Ordered(ctx context.Context, want []string) (bootorder.Result, error) {
	hs := SUTHosts(d.Hosts)
	ms := make([]bootorder.Member, len(hs))
	for i, h := range hs {
		ms[i] = bootorder.Member{Name: h.Name, Want: slices.Contains(want, h.Name)}
	}
	res, err := bootorder.Start(ctx, ms, d.BootstrapFrom, bootorder.Ops{
		Running: func(ctx context.Context, i int) (bool, error) {
			st, err := d.hostStatus(ctx, hs[i])
			return st.State == "running", err
		},
		Healthy: func(ctx context.Context, i int) bool {
			ok, _ := d.healthOnce(ctx, hs[i])
			return ok
		},
		Rank: func(ctx context.Context, i int) bootorder.Rank {
			out, err := d.Run(ctx, hs[i], bootorder.RankScript(hs[i].Rank))
			r := bootorder.ParseScript(hs[i].Name, out, err)
			d.printf("host=%s rank=%s", hs[i].Name, shell.Quote(r.String()))
			return r
		},
		Start: func(ctx context.Context, i int, bootstrap bool) error { return d.startHost(ctx, hs[i], bootstrap) },
		WaitHealthy: func(ctx context.Context, i int) error {
			h := hs[i]
			if h.BootstrapHealth != "" {
				h.Health = []Health{{Role: "bootstrap", Command: h.BootstrapHealth}}
			}
			return d.waitHostHealthy(ctx, h)
		},
	})
	boot := res.Bootstrapped
	if boot == "" {
		boot = "none"
	}
	if res.Why != "" || err == nil {
		d.printf("sut_order=%s bootstrap=%s why=%s joined=%s", orderWord(err), boot, shell.Quote(res.Why), strings.Join(res.Joined, ","))
	}
	return res, err
}

func orderWord(err error) string {
	if err != nil {
		return "failed"
	}
	return "done"
}

// startHost starts the SUT on h with sut.command, or, for the bootstrap
// member, sut.bootstrap.command; the same job or unit either way.
func (d *Deployer) startHost(ctx context.Context, h Host, bootstrap bool) error {
	if h.Command == "" {
		return fmt.Errorf("sut.command is empty in %s: nothing to start", d.Env.Path)
	}
	mode, err := d.mode(ctx, h)
	if err != nil {
		return err
	}
	role := ""
	if bootstrap {
		role = " as=bootstrap"
	} else if d.Env.SUT.Bootstrap != nil {
		role = " as=join"
	}
	switch mode {
	case RunSystemd:
		out, err := d.Run(ctx, h, d.startScript(h, mode, bootstrap))
		if err != nil {
			return fmt.Errorf("start %s: %w", d.unit(), err)
		}
		kv := keyValues(out)
		state := "started"
		if kv["already"] == "1" {
			state = "already-running"
		}
		d.printf("host=%s sut=%s mode=systemd unit=%s pid=%s%s", h.Name, state, d.unit(), kv["pid"], role)
	default:
		st, err := runner.StartJob(ctx, d.Pool, h.Host, h.Workdir, d.jobID(), d.jobArgv(h, bootstrap))
		if err != nil {
			return fmt.Errorf("start job %s: %w", d.jobID(), err)
		}
		state := "started"
		if st.Already {
			state = "already-running"
		}
		d.printf("host=%s sut=%s mode=job job=%s pid=%d%s", h.Name, state, d.jobID(), st.PID, role)
	}
	return nil
}

// jobArgv is the SUT's process on h: sut.command (or, as the bootstrap
// member, sut.bootstrap.command), after sut.init when the data dir is
// empty. The init runs inside the supervised process, so it is bounded
// by the health wait rather than one 30 s round trip, and every way the
// SUT is started — deploy, heal, a nemesis's undo — runs it.
func (d *Deployer) jobArgv(h Host, bootstrap bool) []string {
	return []string{"sh", "-c", d.shellCommand(h, bootstrap)}
}

func (d *Deployer) shellCommand(h Host, bootstrap bool) string {
	cmd := h.Command
	if bootstrap && h.BootstrapCommand != "" {
		cmd = h.BootstrapCommand
	}
	if h.Init == "" {
		return cmd
	}
	dd := shell.Quote(h.Facts.DataDir)
	return `if [ -z "$(ls -A ` + dd + ` 2>/dev/null)" ]; then echo "dstgen: data dir "` + dd + `" is empty: running sut.init" >&2; sh -c ` + shell.Quote(h.Init) + ` || { echo "dstgen: sut.init failed (exit $?)" >&2; exit 1; }; fi; ` + cmd
}

// startScript is the shell text that starts the SUT on h in mode, the one
// way deploy starts it: a transient systemd unit (after stopping the units
// sut.stop_units names), or dstgen job sut-<name>; as the bootstrap member
// when bootstrap is set. A kill's undo script holds it, so `dstgen heal`
// restarts a SUT dstgen killed the same way. With sut.bootstrap the unit
// does not restart itself (Restart=no): an automatic restart cannot follow
// the ordering rule, and a bootstrap member restarted with its bootstrap
// command while the others run would start a second cluster.
func (d *Deployer) startScript(h Host, mode string, bootstrap bool) string {
	if mode != RunSystemd {
		return runner.JobStartScript(h.Workdir, d.jobID(), d.jobArgv(h, bootstrap))
	}
	var stops strings.Builder
	for _, u := range d.Env.SUT.StopUnits {
		fmt.Fprintf(&stops, "if systemctl is-active --quiet %[1]s; then $SUDO systemctl stop %[1]s && echo stopped_unit=%[1]s; fi\n", shell.Quote(u))
	}
	restart := "--property=Restart=on-failure --property=RestartSec=2"
	if d.Env.SUT.Bootstrap != nil {
		restart = "--property=Restart=no"
	}
	u := shell.Quote(d.unit())
	return asRoot + stops.String() + `if systemctl is-active --quiet ` + u + `; then echo already=1; else
$SUDO systemctl reset-failed ` + u + ` 2>/dev/null
$SUDO systemd-run --quiet --unit=` + u + ` ` + restart + ` --working-directory=` + shell.Quote(h.Workdir) + ` sh -c ` + shell.Quote(d.shellCommand(h, bootstrap)) + ` || exit $?
fi
echo pid=$(systemctl show -p MainPID --value ` + u + `)`
}

func keyValues(out string) map[string]string {
	kv := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok {
			kv[k] = v
		}
	}
	return kv
}

// Stop stops the SUT on every SUT host. A SUT that is not running is not
// an error; a stop that fails is, so a caller never reports "stopped"
// for a process that is still there.
func (d *Deployer) Stop(ctx context.Context) error {
	return d.each(ctx, SUTHosts(d.Hosts), func(ctx context.Context, h Host) error {
		mode, err := d.mode(ctx, h)
		if err != nil {
			return err
		}
		if mode == RunSystemd {
			u := shell.Quote(d.unit())
			out, err := d.Run(ctx, h, asRoot+`if systemctl is-active --quiet `+u+`; then $SUDO systemctl stop `+u+` || exit $?; echo was=running; else echo was=stopped; fi
$SUDO systemctl reset-failed `+u+` 2>/dev/null; true`)
			if err != nil {
				return fmt.Errorf("stop %s: %w", d.unit(), err)
			}
			d.printf("host=%s sut=stopped mode=systemd unit=%s was=%s", h.Name, d.unit(), keyValues(out)["was"])
			return nil
		}
		before, err := runner.JobStatusOf(ctx, d.Pool, h.Host, h.Workdir, d.jobID())
		if err != nil {
			return fmt.Errorf("status of job %s: %w", d.jobID(), err)
		}
		st, err := runner.StopJob(ctx, d.Pool, h.Host, h.Workdir, d.jobID(), 10*time.Second)
		if err != nil {
			return fmt.Errorf("stop job %s: %w", d.jobID(), err)
		}
		if st.Status == runner.StatusRunning {
			return fmt.Errorf("job %s still running after stop", d.jobID())
		}
		d.printf("host=%s sut=stopped mode=job job=%s was=%s", h.Name, d.jobID(), before.Status)
		return nil
	})
}

// Status reports the SUT's supervisor state on every SUT host.
func (d *Deployer) Status(ctx context.Context) ([]Status, error) {
	hs := SUTHosts(d.Hosts)
	out := make([]Status, len(hs))
	err := d.each(ctx, hs, func(ctx context.Context, h Host) error {
		s, err := d.hostStatus(ctx, h)
		if err != nil {
			return err
		}
		out[indexOf(hs, h.Name)] = s
		return nil
	})
	return out, err
}

// hostStatus is Status of one SUT host.
func (d *Deployer) hostStatus(ctx context.Context, h Host) (Status, error) {
	mode, err := d.mode(ctx, h)
	if err != nil {
		return Status{}, err
	}
	s := Status{Host: h.Name, Mode: mode}
	if mode == RunSystemd {
		u := shell.Quote(d.unit())
		o, err := d.Run(ctx, h, `echo state=$(systemctl is-active `+u+` 2>/dev/null); echo pid=$(systemctl show -p MainPID --value `+u+` 2>/dev/null)`)
		if err != nil {
			return Status{}, err
		}
		kv := keyValues(o)
		s.PID, _ = strconv.Atoi(kv["pid"])
		switch kv["state"] {
		case "active", "activating", "reloading":
			s.State = "running"
		case "failed":
			s.State = "failed"
		default:
			s.State = "stopped"
		}
		s.Detail = kv["state"]
		return s, nil
	}
	st, err := runner.JobStatusOf(ctx, d.Pool, h.Host, h.Workdir, d.jobID())
	if err != nil {
		return Status{}, err
	}
	s.PID, s.Detail = st.PID, st.Status
	switch st.Status {
	case runner.StatusRunning:
		s.State = "running"
	case runner.StatusAbsent:
		s.State = "stopped"
	case runner.StatusFinished:
		// Ended by a stop (ours, or a job stop): stopped, not a
		// crash; ended on its own: failed, with its exit code.
		s.State = "failed"
		if st.Stopped != "" {
			s.State, s.Detail = "stopped", "stopped by "+st.Stopped
		} else if st.RC != nil {
			s.Detail = "exited rc=" + strconv.Itoa(*st.RC)
		}
	default: // lost: started and gone without an exit code
		s.State = "failed"
	}
	return s, nil
}

// RestartFailed starts the SUT again on every SUT host of only (all
// when empty) where it died on its own (Status "failed": it exited or
// vanished, nobody stopped it) — a member a fault brought down, such as
// one that exited on a full disk — the way deploy starts it, and returns
// the statuses it found there. A member someone stopped stays stopped.
// The heal after a killed run uses it (docs/dst-run.md §6).
func (d *Deployer) RestartFailed(ctx context.Context, only []string) ([]Status, error) {
	if len(SUTHosts(d.Hosts)) == 0 || d.Env.SUT.Command == "" {
		return nil, nil
	}
	sts, err := d.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("sut status: %w", err)
	}
	var restarted []Status
	var errs []error
	if d.Env.SUT.Bootstrap != nil {
		// The same rule as deploy's start: join while a member runs,
		// bootstrap from the highest rank when none does.
		var want []string
		byHost := map[string]Status{}
		for _, st := range sts {
			if st.State == "failed" && (len(only) == 0 || slices.Contains(only, st.Host)) {
				want = append(want, st.Host)
				byHost[st.Host] = st
			}
		}
		if len(want) == 0 {
			return nil, nil
		}
		res, err := d.Ordered(ctx, want)
		for _, n := range append([]string{res.Bootstrapped}, res.Joined...) {
			if st, ok := byHost[n]; ok {
				restarted = append(restarted, st)
			}
		}
		if err != nil {
			return restarted, fmt.Errorf("restart the SUT in order: %w", err)
		}
		return restarted, nil
	}
	for _, st := range sts {
		if st.State != "failed" || len(only) > 0 && !slices.Contains(only, st.Host) {
			continue
		}
		h := d.Hosts[indexOf(d.Hosts, st.Host)]
		if err := d.startHost(ctx, h, false); err != nil {
			errs = append(errs, fmt.Errorf("%s: restart the SUT: %w", st.Host, err))
			continue
		}
		restarted = append(restarted, st)
	}
	return restarted, errors.Join(errs...)
}

func indexOf(hs []Host, name string) int {
	for i, h := range hs {
		if h.Name == name {
			return i
		}
	}
	return -1
}

// HealthResult is one health command's outcome.
type HealthResult struct {
	Host, Role string
	OK         bool
	Output     string // first line of what it printed
}

// Health runs every host's health commands once.
func (d *Deployer) Health(ctx context.Context) []HealthResult {
	var mu sync.Mutex
	var res []HealthResult
	_ = d.each(ctx, d.Hosts, func(ctx context.Context, h Host) error {
		for _, hc := range h.Health {
			out, err := d.Run(ctx, h, "sh -c "+shell.Quote(hc.Command)+" 2>&1")
			r := HealthResult{Host: h.Name, Role: hc.Role, OK: err == nil, Output: oneline.Fold(oneline.First(out))}
			if err != nil && r.Output == "" {
				r.Output = oneline.Fold(err.Error())
			}
			mu.Lock()
			res = append(res, r)
			mu.Unlock()
		}
		return nil
	})
	return res
}

// WaitHealthy polls the health commands until all answer, bounded by
// sut.ready_timeout_s (default 60 s), and prints each host's last result.
func (d *Deployer) WaitHealthy(ctx context.Context) error {
	limit := time.Duration(d.Env.SUT.ReadyTimeoutS) * time.Second
	if limit <= 0 {
		limit = 60 * time.Second
	}
	deadline := time.Now().Add(limit)
	for {
		res := d.Health(ctx)
		if len(res) == 0 {
			// Nothing can say the SUT answers: say so, and at least
			// require that its process still runs.
			return d.stillRunning(ctx)
		}
		bad := failing(res)
		if len(bad) > 0 {
			// A member whose process exited will not answer later:
			// nothing restarts it while deploy waits.
			if err := d.anyExited(ctx, res); err != nil {
				for _, r := range res {
					d.printf("host=%s role=%s health=%s output=%s", r.Host, r.Role, okWord(r.OK), shell.Quote(r.Output))
				}
				return err
			}
		}
		if len(bad) == 0 || time.Now().After(deadline) {
			for _, r := range res {
				d.printf("host=%s role=%s health=%s output=%s", r.Host, r.Role, okWord(r.OK), shell.Quote(r.Output))
			}
			if len(bad) > 0 {
				return fmt.Errorf("not healthy after %s: %s", limit, strings.Join(bad, "; "))
			}
			return nil
		}
		if err := wait.Sleep(ctx, d.every()); err != nil {
			return err
		}
	}
}

// healthOnce runs h's health commands once: all passed, and the first
// failure (its role and what it printed) otherwise.
func (d *Deployer) healthOnce(ctx context.Context, h Host) (bool, HealthResult) {
	for _, hc := range h.Health {
		out, err := d.Run(ctx, h, "sh -c "+shell.Quote(hc.Command)+" 2>&1")
		r := HealthResult{Host: h.Name, Role: hc.Role, OK: err == nil, Output: oneline.Fold(oneline.First(out))}
		if err != nil {
			if r.Output == "" {
				r.Output = oneline.Fold(err.Error())
			}
			return false, r
		}
	}
	return true, HealthResult{Host: h.Name, OK: true}
}

// waitHostHealthy polls h's health commands until they pass, bounded by
// sut.ready_timeout_s; the error names the member and what its health
// command printed last.
func (d *Deployer) waitHostHealthy(ctx context.Context, h Host) error {
	limit := time.Duration(d.Env.SUT.ReadyTimeoutS) * time.Second
	if limit <= 0 {
		limit = 60 * time.Second
	}
	deadline := time.Now().Add(limit)
	for {
		ok, r := d.healthOnce(ctx, h)
		if ok {
			d.printf("host=%s health=ok", h.Name)
			return nil
		}
		if err := d.exited(ctx, h); err != nil {
			return fmt.Errorf("%w; the health command of role %s printed last: %s", err, r.Role, shell.Quote(r.Output))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not healthy after %s: the health command of role %s printed last: %s", limit, r.Role, shell.Quote(r.Output))
		}
		if err := wait.Sleep(ctx, d.every()); err != nil {
			return fmt.Errorf("wait for health: %w (the health command of role %s printed last: %s)", err, r.Role, shell.Quote(r.Output))
		}
	}
}

// exited reports a SUT process on h that ended on its own (a failing
// sut.init, a crash at start): it will never answer its health command,
// so the wait stops at once, with the end of its log. nil while it runs,
// and when its state cannot be read (the wait goes on).
func (d *Deployer) exited(ctx context.Context, h Host) error {
	if !h.RunsSUT {
		return nil
	}
	st, err := d.hostStatus(ctx, h)
	if err != nil || st.State != "failed" {
		return nil
	}
	var tail string
	if st.Mode == RunSystemd {
		tail, _ = d.Run(ctx, h, "journalctl -q -u "+shell.Quote(d.unit())+" -n 3 --no-pager -o cat 2>/dev/null")
	} else {
		tail, _ = d.Run(ctx, h, "tail -n 3 "+shell.Quote(d.JobLogs(h)[1])+" 2>/dev/null")
	}
	var lines []string
	for _, l := range strings.Split(tail, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	msg := fmt.Sprintf("the SUT exited before it was healthy (%s)", st.Detail)
	if len(lines) > 0 {
		msg += "; its log ends: " + shell.Quote(oneline.Fold(strings.Join(lines, " | ")))
	}
	return errors.New(msg)
}

// anyExited is exited over the hosts whose health failed in res, the
// first one named.
func (d *Deployer) anyExited(ctx context.Context, res []HealthResult) error {
	seen := map[string]bool{}
	for _, r := range res {
		if r.OK || seen[r.Host] {
			continue
		}
		seen[r.Host] = true
		for _, h := range d.Hosts {
			if h.Name == r.Host {
				if err := d.exited(ctx, h); err != nil {
					return fmt.Errorf("%s: %w; the health command of role %s printed last: %s", h.Name, err, r.Role, shell.Quote(r.Output))
				}
			}
		}
	}
	return nil
}

// stillRunning is the readiness check of a SUT without health commands:
// every SUT host's process is running a moment after the start.
func (d *Deployer) stillRunning(ctx context.Context) error {
	if err := wait.Sleep(ctx, 2*d.every()); err != nil {
		return err
	}
	st, err := d.Status(ctx)
	if err != nil {
		return err
	}
	var down []string
	for _, s := range st {
		if s.State != "running" {
			down = append(down, s.Host+" ("+s.State+" "+s.Detail+")")
		}
	}
	d.printf("health=none reason=%s", shell.Quote("no sut.health command in "+d.Env.Path+": only the process is checked"))
	if len(down) > 0 {
		return fmt.Errorf("not running after start: %s", strings.Join(down, ", "))
	}
	return nil
}

func failing(res []HealthResult) []string {
	var bad []string
	for _, r := range res {
		if !r.OK {
			bad = append(bad, r.Host+" (the health command of role "+r.Role+" printed last: "+shell.Quote(r.Output)+")")
		}
	}
	return bad
}

func okWord(ok bool) string {
	if ok {
		return "ok"
	}
	return "fail"
}

// CleanData wipes the SUT's real data dir (sut.data_dir rendered per host)
// on every SUT host. It refuses while the SUT runs there, and refuses
// paths whose removal would wreck the host.
func (d *Deployer) CleanData(ctx context.Context) error {
	st, err := d.Status(ctx)
	if err != nil {
		return err
	}
	running := map[string]bool{}
	for _, s := range st {
		running[s.Host] = s.State == "running"
	}
	return d.each(ctx, SUTHosts(d.Hosts), func(ctx context.Context, h Host) error {
		dd := h.Facts.DataDir
		if running[h.Name] {
			return fmt.Errorf("the SUT is running; stop it first (task service:stop) before wiping %s", dd)
		}
		if unsafeDataDir(dd) {
			return fmt.Errorf("refusing to wipe data dir %s: too close to the root of the filesystem (set sut.data_dir)", dd)
		}
		q := shell.Quote(dd)
		// The contents, not the dir: a data dir may be a mount point (the
		// testbed's tmpfs, a dedicated disk), which rm cannot remove.
		wipe := "find " + q + " -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +"
		if _, err := d.Run(ctx, h, asRoot+"mkdir -p "+q+" && { "+wipe+" 2>/dev/null || $SUDO "+wipe+"; }"); err != nil {
			return fmt.Errorf("wipe %s: %w", dd, err)
		}
		d.printf("host=%s wiped=%s", h.Name, q)
		return nil
	})
}

// RotateData renames the SUT's data dir on every SUT host to
// <data_dir>.bak.<stamp> and creates a fresh one, keeping the old data for
// a post-mortem. Like CleanData it refuses while the SUT runs.
func (d *Deployer) RotateData(ctx context.Context, stamp string) error {
	if stamp == "" || strings.ContainsAny(stamp, "/\x00\n") {
		return fmt.Errorf("rotate: stamp %q is not a plain name", stamp)
	}
	st, err := d.Status(ctx)
	if err != nil {
		return err
	}
	return d.each(ctx, SUTHosts(d.Hosts), func(ctx context.Context, h Host) error {
		for _, s := range st {
			if s.Host == h.Name && s.State == "running" {
				return fmt.Errorf("the SUT is running; stop it first (task service:stop) before rotating %s", h.Facts.DataDir)
			}
		}
		if unsafeDataDir(h.Facts.DataDir) {
			return fmt.Errorf("refusing to rotate data dir %s: too close to the root of the filesystem", h.Facts.DataDir)
		}
		q, bak := shell.Quote(h.Facts.DataDir), shell.Quote(h.Facts.DataDir+".bak."+stamp)
		out, err := d.Run(ctx, h, "if [ -d "+q+" ]; then mv -- "+q+" "+bak+" && echo rotated=1; fi; mkdir -p "+q)
		if err != nil {
			return fmt.Errorf("rotate %s: %w", h.Facts.DataDir, err)
		}
		if keyValues(out)["rotated"] == "1" {
			d.printf("host=%s rotated=%s to=%s", h.Name, q, bak)
		} else {
			d.printf("host=%s rotated=none data_dir=%s", h.Name, q)
		}
		return nil
	})
}
