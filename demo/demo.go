package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dstgen/dstgen/internal/oneline"
	"github.com/dstgen/dstgen/proxy"
)

// Bug settings of --bug.
const (
	BugNone       = "none"
	BugStaleReads = "stale-reads"
	BugBoth       = "both"
)

// ErrBadInput marks an error the CLI reports as bad input (exit 2).
var ErrBadInput = errors.New("bad input")

// inputError is bad input: its message is the one-line reason alone.
type inputError struct{ msg string }

func (e *inputError) Error() string        { return e.msg }
func (e *inputError) Is(target error) bool { return target == ErrBadInput }

func badInput(format string, a ...any) error { return &inputError{fmt.Sprintf(format, a...)} }

// Config is one demo run.
type Config struct {
	// Dir is where everything goes; "" = a temp dir, removed at the end
	// unless Keep or the run failed.
	Dir string
	// Keep keeps a temp Dir.
	Keep bool
	// Bug is none, stale-reads or both.
	Bug string
	// Src is examples/kv; "" = found from the current directory upward.
	Src string
	// Plan is the plan dstgen init reads; "" = examples/kv's own.
	Plan string
	// Exe is the dstgen binary the tasks, the nemesis and the proxy
	// client call (os.Executable of the CLI).
	Exe string
	// Out receives the progress lines and the headline.
	Out io.Writer
	// Log receives the children's output (dstgen task, init, run); nil =
	// DIR/demo.log only.
	Log io.Writer
}

// nodes are the replicas; the client host runs the workload.
var nodeNames = []string{"kv1", "kv2", "kv3"}

// Run runs the demo and returns the exit code of the last analysis (0
// DONE, 1 otherwise); an error wrapping ErrBadInput is bad input, any
// other error a demo step that failed (exit 1, or 2 for bad input).
func Run(ctx context.Context, cfg Config) (int, error) {
	d, temp, code, err := open(cfg)
	if err != nil {
		return code, err
	}
	defer d.closeLog()
	code, err = d.run(ctx)
	if err != nil {
		fmt.Fprintf(d.cfg.Out, "kept %s (demo.log has every step's output)\n", d.dir)
		return code, err
	}
	if temp && !d.cfg.Keep {
		// The reports outlive the temp dir: copied next to it first.
		if err := d.keepReports(d.dir + "-reports"); err != nil {
			fmt.Fprintf(d.cfg.Out, "kept %s: %v\n", d.dir, err)
		} else {
			_ = os.RemoveAll(d.dir)
			defer fmt.Fprintf(d.cfg.Out, "removed %s; the reports were copied to %s (pass --keep or --dir to keep everything)\n", d.dir, d.dir+"-reports")
		}
	}
	d.print(d.heads)
	return code, nil
}

// Stay brings up what Run runs on — the hosts, the proxy and the
// generated, filled-in testing/ (deploy not run) — prints a ready line and
// a hint, and holds it all up until ctx ends (the CLI's ctx ends on SIGINT
// or SIGTERM); then it stops the SUT, heals and stops the hosts and the
// proxy. The directory is always kept: it holds what the user ran. Bug
// selects the bug switch env.yml starts with (stale-reads: on; otherwise
// off). An error wrapping ErrBadInput is bad input.
func Stay(ctx context.Context, cfg Config) error {
	if cfg.Bug == "" {
		cfg.Bug = BugNone
	}
	d, _, _, err := open(cfg)
	if err != nil {
		return err
	}
	defer d.closeLog()
	down, err := d.up(ctx)
	defer down()
	if err != nil {
		fmt.Fprintf(d.cfg.Out, "kept %s (demo.log has every step's output)\n", d.dir)
		return err
	}
	bin := filepath.Join(d.dir, "bin")
	fmt.Fprintf(d.cfg.Out, "demo status=ready testing=%s env=%s hosts=%s\n",
		d.testing, filepath.Join(d.testing, "env.yml"), strings.Join(d.hostNames(), ","))
	fmt.Fprintf(d.cfg.Out, "demo hint: follow %s; Ctrl-C stops the hosts\n", filepath.Join(d.testing, "README.md"))
	fmt.Fprintf(d.cfg.Out, "demo hint: in another shell: export PATH=%s:$PATH DSTGEN_NO_HOLDER=1; cd %s && dstgen task validate\n",
		shellQuote(bin), shellQuote(d.testing))
	<-ctx.Done()
	fmt.Fprintf(d.cfg.Out, "demo status=stopping reason=%q\n", context.Cause(ctx).Error())
	return nil
}

// open checks cfg and makes the demo's directory and log; temp says the
// directory is a fresh temp dir. The int is the exit code of an error.
func open(cfg Config) (*demo, bool, int, error) {
	switch cfg.Bug {
	case "":
		cfg.Bug = BugBoth
	case BugNone, BugStaleReads, BugBoth:
	default:
		return nil, false, 2, badInput("--bug %q: want stale-reads, none or both", cfg.Bug)
	}
	src, root, err := findSource(cfg.Src)
	if err != nil {
		return nil, false, 2, badInput("%v", err)
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	temp := cfg.Dir == ""
	dir := cfg.Dir
	if temp {
		if dir, err = os.MkdirTemp("", "dstgen-demo-"); err != nil {
			return nil, false, 2, fmt.Errorf("demo dir: %w", err)
		}
	} else if dir, err = filepath.Abs(dir); err != nil {
		return nil, false, 2, fmt.Errorf("demo dir: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		return nil, false, 2, fmt.Errorf("demo dir: %w", err)
	}
	logf, err := os.Create(filepath.Join(dir, "demo.log"))
	if err != nil {
		return nil, false, 2, fmt.Errorf("demo log: %w", err)
	}
	d := &demo{cfg: cfg, dir: dir, src: src, root: root, start: time.Now(), log: logf, logFile: logf}
	if cfg.Log != nil {
		d.log = io.MultiWriter(logf, cfg.Log)
	}
	return d, temp, 0, nil
}

func (d *demo) closeLog() { _ = d.logFile.Close() }

// hostNames are the simulated hosts' names, in env.yml order.
func (d *demo) hostNames() []string {
	var s []string
	for _, h := range d.hosts {
		s = append(s, h.Name)
	}
	return s
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// keepReports copies each analyzed session's findings/ to into/<run>/
// and points the headline at the copies.
func (d *demo) keepReports(into string) error {
	done := map[string]string{}
	for i, h := range d.heads {
		dst, ok := done[h.session]
		if !ok {
			dst = filepath.Join(into, h.label)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return fmt.Errorf("copy the reports: %w", err)
			}
			if err := os.CopyFS(dst, os.DirFS(filepath.Join(h.session, "findings"))); err != nil {
				return fmt.Errorf("copy the reports: %w", err)
			}
			done[h.session] = dst
		}
		rebase := func(p string) string {
			if rel, err := filepath.Rel(filepath.Join(h.session, "findings"), p); err == nil && !strings.HasPrefix(rel, "..") {
				return filepath.Join(dst, rel)
			}
			return p
		}
		d.heads[i].report, d.heads[i].html = rebase(h.report), rebase(h.html)
		for j, v := range h.viz {
			d.heads[i].viz[j] = rebase(v)
		}
	}
	return nil
}

// demo is the state of one run.
type demo struct {
	cfg             Config
	dir, src, root  string
	start           time.Time
	log             io.Writer
	logFile         *os.File
	testing         string // DIR/testing
	env             []string
	hosts           []*Host
	ports           []int          // kvnode listen ports
	ins             []int          // proxy in-<n>: in front of replica n
	outs            map[[2]int]int // proxy out-<n>-<m>: replica n's way to m
	api             string
	lastAnalyzeCode int
	health          string // sut.health command template
	heads           []headline
}

// progress prints one progress line.
func (d *demo) progress(phase string, kv ...string) {
	fmt.Fprintf(d.cfg.Out, "demo phase=%s elapsed=%.1fs", phase, time.Since(d.start).Seconds())
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(d.cfg.Out, " %s=%s", kv[i], kv[i+1])
	}
	fmt.Fprintln(d.cfg.Out)
}

// up builds examples/kv, starts the hosts and the proxy, runs dstgen init
// and fills env.yml and scenarios.yml: everything up to deploy, shared by
// Run and Stay. down, never nil, undoes what up started (the SUT stopped
// and healed first, then the proxy and the hosts), whatever the state of
// ctx; call it once, also when err is not nil.
func (d *demo) up(ctx context.Context) (down func(), err error) {
	var undo []func()
	down = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		undo = nil
	}
	d.testing = filepath.Join(d.dir, "testing")
	bin := filepath.Join(d.dir, "bin")
	d.progress("build", "src", d.src)
	if err := d.build(ctx, bin); err != nil {
		return down, err
	}

	// Hosts: one in-process SSH server each, a fresh key pair, strict
	// host key checking against the demo's own known_hosts.
	keys, err := NewKeys()
	if err != nil {
		return down, err
	}
	sshDir := filepath.Join(d.dir, "ssh")
	if err := os.MkdirAll(sshDir, 0o700); err != nil {
		return down, fmt.Errorf("ssh dir: %w", err)
	}
	if err := keys.WriteKey(filepath.Join(sshDir, "id_ed25519")); err != nil {
		return down, err
	}
	hctx, stopHosts := context.WithCancel(context.WithoutCancel(ctx))
	undo = append(undo, stopHosts)
	undo = append(undo, func() {
		for _, h := range d.hosts {
			if err := h.Close(); err != nil {
				fmt.Fprintf(d.log, "demo: %v\n", err)
			}
		}
	})
	for _, n := range append(append([]string{}, nodeNames...), "client") {
		h, err := StartHost(hctx, n, filepath.Join(d.dir, "hosts", n), keys.Signer.PublicKey(),
			"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		if err != nil {
			return down, err
		}
		d.hosts = append(d.hosts, h)
	}
	if err := WriteKnownHosts(filepath.Join(sshDir, "known_hosts"), d.hosts); err != nil {
		return down, err
	}

	// The proxies: in-<n> in front of replica n, and out-<n>-<m> by which
	// replica n reaches replica m (through in-<m>). Disabling in-3,
	// out-3-1 and out-3-2 cuts node 3 off from both peers in both
	// directions, while its own clients still reach it directly.
	n := len(nodeNames)
	ports, err := freePorts(n + n + n*(n-1) + 1)
	if err != nil {
		return down, err
	}
	d.ports, d.ins = ports[:n], ports[n:2*n]
	d.outs = map[[2]int]int{}
	next := 2 * n
	var specs []proxy.Spec
	for i := range n {
		specs = append(specs, proxy.Spec{Name: fmt.Sprintf("in-%d", i+1),
			Listen: loopback(d.ins[i]), Upstream: loopback(d.ports[i])})
	}
	for i := range n {
		for j := range n {
			if i == j {
				continue
			}
			d.outs[[2]int{i, j}] = ports[next]
			specs = append(specs, proxy.Spec{Name: fmt.Sprintf("out-%d-%d", i+1, j+1),
				Listen: loopback(ports[next]), Upstream: loopback(d.ins[j])})
			next++
		}
	}
	apiAddr := loopback(ports[next])
	pctx, stopProxy := context.WithCancel(context.WithoutCancel(ctx))
	ready := make(chan string, 1)
	perr := make(chan error, 1)
	go func() {
		perr <- proxy.Serve(pctx, apiAddr, specs, d.log, func(api string, _ *proxy.Server) { ready <- api })
	}()
	undo = append(undo, func() {
		stopProxy()
		select {
		case <-perr:
		case <-time.After(10 * time.Second):
		}
	})
	select {
	case d.api = <-ready:
	case err := <-perr:
		return down, fmt.Errorf("proxy: %w", err)
	case <-time.After(10 * time.Second):
		return down, errors.New("proxy: not listening after 10s")
	}
	d.progress("hosts", "ssh", d.hostList(), "proxy_api", d.api)

	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	d.env = append(os.Environ(), "PATH="+path, "DSTGEN_NO_HOLDER=1", "DSTGEN="+d.cfg.Exe)
	// DIR/bin/dstgen: the one binary the tasks call, for a user who puts
	// DIR/bin on PATH (go run's binary is in a temp dir of its own).
	if link := filepath.Join(bin, "dstgen"); d.cfg.Exe != "" && d.cfg.Exe != link {
		_ = os.Remove(link)
		if err := os.Symlink(d.cfg.Exe, link); err != nil {
			return down, fmt.Errorf("link %s: %w", link, err)
		}
	}

	// Whatever happens from here on, stop the SUT and heal before the
	// hosts and the proxy go away.
	undo = append(undo, d.cleanup)

	d.progress("init", "out", d.testing)
	initArgs := []string{"init", "--sut", d.src, "--out", d.testing, "--yes"}
	if d.cfg.Plan != "" {
		initArgs = append(initArgs, "--plan", d.cfg.Plan)
	}
	if _, err := d.dstgen(ctx, d.dir, initArgs...); err != nil {
		return down, fmt.Errorf("dstgen init: %w", err)
	}
	// --bug stale-reads alone deploys with the bug switched on at once.
	if err := d.writeEnv(d.cfg.Bug == BugStaleReads); err != nil {
		return down, err
	}
	if err := d.fillScenarios(); err != nil {
		return down, err
	}
	return down, nil
}

func (d *demo) run(ctx context.Context) (int, error) {
	down, err := d.up(ctx)
	defer down()
	if err != nil {
		return 1, err
	}
	for _, t := range []string{"validate", "deploy"} {
		d.progress(t)
		if _, err := d.task(ctx, t); err != nil {
			return 1, fmt.Errorf("task %s: %w", t, err)
		}
	}

	var heads []headline
	if d.cfg.Bug == BugNone || d.cfg.Bug == BugBoth {
		h, err := d.safePart(ctx)
		if err != nil {
			return 1, err
		}
		heads = append(heads, h...)
	}
	if d.cfg.Bug == BugStaleReads || d.cfg.Bug == BugBoth {
		h, err := d.bugPart(ctx, d.cfg.Bug == BugBoth)
		if err != nil {
			return 1, err
		}
		heads = append(heads, h...)
	}
	d.heads = heads
	return d.lastAnalyzeCode, nil
}

// safePart: S1 (smoke) then S2 (the partition), one session, analyzed.
func (d *demo) safePart(ctx context.Context) ([]headline, error) {
	d.progress("run", "scenario", "S1", "stale_reads", "false")
	before := d.sessions()
	if _, err := d.task(ctx, "run:scenario", "SCENARIO=S1"); err != nil {
		return nil, fmt.Errorf("task run:scenario SCENARIO=S1: %w", err)
	}
	sess, err := d.newSession(before)
	if err != nil {
		return nil, err
	}
	d.progress("ran", "scenario", "S1", "ops", d.ops(sess, "S1"))
	// S2 goes into the same session, so the session verdict judges both:
	// the task's own command line with --out.
	d.progress("run", "scenario", "S2", "stale_reads", "false")
	if _, err := d.dstgen(ctx, d.testing, "run", "S2", "--env", "env.yml", "--scenarios", "scenarios.yml", "--out", sess); err != nil && !isExit(err) {
		return nil, fmt.Errorf("dstgen run S2: %w", err)
	}
	d.progress("ran", "scenario", "S2", "ops", d.ops(sess, "S2"))
	return d.analyze(ctx, sess, "safe")
}

// bugPart: redeploy with -stale-reads (when the safe part ran first), S2, the re-run with the same seed
// and schedule into the same session, analyzed.
func (d *demo) bugPart(ctx context.Context, redeploy bool) ([]headline, error) {
	if redeploy {
		d.progress("redeploy", "stale_reads", "true")
		if _, err := d.task(ctx, "service:stop"); err != nil {
			return nil, fmt.Errorf("task service:stop: %w", err)
		}
		if err := d.writeEnv(true); err != nil {
			return nil, err
		}
		if _, err := d.task(ctx, "deploy"); err != nil {
			return nil, fmt.Errorf("task deploy (stale reads): %w", err)
		}
	}
	d.progress("run", "scenario", "S2", "stale_reads", "true")
	before := d.sessions()
	if _, err := d.task(ctx, "run:scenario", "SCENARIO=S2"); err != nil {
		return nil, fmt.Errorf("task run:scenario SCENARIO=S2: %w", err)
	}
	sess, err := d.newSession(before)
	if err != nil {
		return nil, err
	}
	d.progress("ran", "scenario", "S2", "ops", d.ops(sess, "S2"))
	// The re-run uses the run's key namespace again: restart the SUT
	// (in memory) so it starts from an empty store, as the first run did.
	if _, err := d.task(ctx, "service:restart"); err != nil {
		return nil, fmt.Errorf("task service:restart: %w", err)
	}
	d.progress("rerun", "scenario", "S2", "session", sess)
	if _, err := d.dstgen(ctx, d.testing, "run", "S2", "--rerun", "--env", "env.yml", "--scenarios", "scenarios.yml"); err != nil && !isExit(err) {
		return nil, fmt.Errorf("dstgen run S2 --rerun: %w", err)
	}
	return d.analyze(ctx, sess, "stale-reads")
}

// analyze runs `task analyze RESULTS=sess` and reads its verdicts.
func (d *demo) analyze(ctx context.Context, sess, label string) ([]headline, error) {
	d.progress("analyze", "session", sess)
	code, err := d.task(ctx, "analyze", "RESULTS="+sess)
	if err != nil && !isExit(err) {
		return nil, fmt.Errorf("task analyze: %w", err)
	}
	d.lastAnalyzeCode = code
	if code != 0 && code != 1 {
		return nil, fmt.Errorf("task analyze RESULTS=%s: exit %d (see %s)", sess, code, filepath.Join(d.dir, "demo.log"))
	}
	return readHeadlines(sess, label)
}

// cleanup stops the SUT and heals every fault, bounded, whatever the
// state of ctx (Ctrl-C included).
func (d *demo) cleanup() {
	if _, err := os.Stat(filepath.Join(d.testing, "env.yml")); err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d.progress("cleanup", "do", "sut-stop,heal")
	if _, err := d.dstgen(ctx, d.testing, "sut", "stop", "--env", "env.yml"); err != nil {
		fmt.Fprintf(d.cfg.Out, "demo: stopping the SUT: %v\n", err)
	}
	if _, err := d.dstgen(ctx, d.testing, "heal", "--all", "--env", "env.yml"); err != nil {
		fmt.Fprintf(d.cfg.Out, "demo: heal --all: %v\n", err)
	}
}

// exitErr is a child that ran and exited non-zero.
type exitErr struct{ code int }

func (e *exitErr) Error() string { return "exit status " + strconv.Itoa(e.code) }

func isExit(err error) bool {
	var ee *exitErr
	return errors.As(err, &ee)
}

// dstgen runs this dstgen binary in dir; its output goes to the log.
// The exit code is returned with an *exitErr when it is not 0.
func (d *demo) dstgen(ctx context.Context, dir string, args ...string) (int, error) {
	return d.command(ctx, dir, d.cfg.Exe, args...)
}

// task runs `dstgen task NAME VAR=val...` in DIR/testing.
func (d *demo) task(ctx context.Context, args ...string) (int, error) {
	return d.dstgen(ctx, d.testing, append([]string{"task", "--dir", d.testing}, args...)...)
}

// command runs name with args in dir, output to the log; SIGTERM on
// cancel, killed 15 s later.
func (d *demo) command(ctx context.Context, dir, name string, args ...string) (int, error) {
	fmt.Fprintf(d.log, "\n$ (cd %s && %s %s)\n", dir, name, strings.Join(args, " "))
	c := exec.CommandContext(ctx, name, args...)
	c.Dir, c.Env, c.Stdout, c.Stderr = dir, d.env, d.log, d.log
	c.Cancel = func() error { return c.Process.Signal(syscall.SIGTERM) }
	c.WaitDelay = 15 * time.Second
	err := c.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		// Interrupted: whatever the child answered, stop here.
		return -1, fmt.Errorf("%s %s: interrupted: %w", filepath.Base(name), args[0], ctx.Err())
	case err == nil:
		return 0, nil
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		return ee.ExitCode(), &exitErr{ee.ExitCode()}
	}
	return -1, fmt.Errorf("%s %s: %w", filepath.Base(name), args[0], err)
}

// build compiles kvnode and workload (and dstgen-task when no
// dstgen-task is beside dstgen or on PATH) into bin.
func (d *demo) build(ctx context.Context, bin string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return badInput("go not on PATH: the demo builds examples/kv with it")
	}
	d.env = os.Environ()
	pkgs := [][2]string{{"kvnode", "./kvnode"}, {"workload", "./workload"}}
	for _, p := range pkgs {
		if _, err := d.command(ctx, d.src, goBin, "build", "-o", filepath.Join(bin, p[0]), p[1]); err != nil {
			return fmt.Errorf("go build %s in %s: %w (see %s)", p[1], d.src, err, filepath.Join(d.dir, "demo.log"))
		}
	}
	if err := d.pickHealth(ctx, bin); err != nil {
		return err
	}
	if haveTaskRunner(d.cfg.Exe) {
		return nil
	}
	if d.root == "" {
		return badInput("no dstgen-task beside %s or on PATH, and no dstgen module above %s to build it from", d.cfg.Exe, d.src)
	}
	d.progress("build", "what", "dstgen-task")
	if _, err := d.command(ctx, d.root, goBin, "build", "-o", filepath.Join(bin, "dstgen-task"), "./cmd/dstgen-task"); err != nil {
		return fmt.Errorf("go build ./cmd/dstgen-task: %w (see %s)", err, filepath.Join(d.dir, "demo.log"))
	}
	return nil
}

// pickHealth sets sut.health to kvnode's own probe (-check ADDR): a fresh
// machine need not have curl.
func (d *demo) pickHealth(_ context.Context, bin string) error {
	d.health = filepath.Join(bin, "kvnode") + " -check 127.0.0.1:{{ .Host.Vars.port }}"
	return nil
}

// haveTaskRunner says whether `dstgen task` will find its runner.
func haveTaskRunner(exe string) bool {
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	if fi, err := os.Stat(filepath.Join(filepath.Dir(exe), "dstgen-task")); err == nil && fi.Mode().IsRegular() {
		return true
	}
	_, err := exec.LookPath("dstgen-task")
	return err == nil
}

// findSource returns examples/kv (src, or found from the working
// directory upward) and the dstgen module root above it ("" if none).
func findSource(src string) (string, string, error) {
	isKV := func(p string) bool {
		fi, err := os.Stat(filepath.Join(p, "kvnode"))
		return err == nil && fi.IsDir()
	}
	if src != "" {
		abs, err := filepath.Abs(src)
		if err != nil || !isKV(abs) {
			return "", "", fmt.Errorf("--src %s: not examples/kv (no kvnode/ in it)", src)
		}
		return abs, moduleRoot(abs), nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", "", fmt.Errorf("working directory: %w", err)
	}
	for p, i := wd, 0; i < 64; p, i = filepath.Dir(p), i+1 {
		if c := filepath.Join(p, "examples", "kv"); isKV(c) {
			return c, moduleRoot(c), nil
		}
		if filepath.Dir(p) == p {
			break
		}
	}
	return "", "", fmt.Errorf("examples/kv not found in %s or above (run from a dstgen checkout, or pass --src DIR)", wd)
}

// moduleRoot is the directory above dir whose go.mod is dstgen's.
func moduleRoot(dir string) string {
	for p, i := dir, 0; i < 64; p, i = filepath.Dir(p), i+1 {
		if b, err := os.ReadFile(filepath.Join(p, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/dstgen/dstgen\n") {
			return p
		}
		if filepath.Dir(p) == p {
			break
		}
	}
	return ""
}

func loopback(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

// cutProxies are the proxies whose disabling cuts replica n (0-based)
// off from its peers.
func (d *demo) cutProxies(n int) string {
	s := []string{fmt.Sprintf("in-%d", n+1)}
	for j := range d.ports {
		if j != n {
			s = append(s, fmt.Sprintf("out-%d-%d", n+1, j+1))
		}
	}
	return strings.Join(s, ",")
}

// freePorts reserves n distinct loopback ports (closed again before use:
// the kvnodes and the proxy listen on them a moment later).
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var ps []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ps = append(ps, l.Addr().(*net.TCPAddr).Port)
	}
	return ps, nil
}

func (d *demo) hostList() string {
	var s []string
	for _, h := range d.hosts {
		s = append(s, fmt.Sprintf("%s@127.0.0.1:%d", h.Name, h.Port()))
	}
	return strings.Join(s, ",")
}

// sessions lists the session dirs under testing/results/<slug>/.
func (d *demo) sessions() map[string]bool {
	m := map[string]bool{}
	runs, _ := filepath.Glob(filepath.Join(d.testing, "results", "*", "*", "artifacts"))
	for _, r := range runs {
		m[filepath.Dir(r)] = true
	}
	return m
}

// newSession is the session a run just made.
func (d *demo) newSession(before map[string]bool) (string, error) {
	var fresh []string
	for s := range d.sessions() {
		if !before[s] {
			fresh = append(fresh, s)
		}
	}
	sort.Strings(fresh)
	if len(fresh) == 0 {
		return "", fmt.Errorf("the run wrote no session under %s (see %s)", filepath.Join(d.testing, "results"), filepath.Join(d.dir, "demo.log"))
	}
	return fresh[len(fresh)-1], nil
}

// ops counts the ops of a unit's history in a session (the latest run).
func (d *demo) ops(sess, id string) string {
	b, err := os.ReadFile(filepath.Join(sess, "artifacts", id, "history.jsonl"))
	if err != nil {
		return "unknown"
	}
	// One line per op (dst-history/1), after the _meta line.
	return strconv.Itoa(strings.Count(string(b), "\"op_id\":"))
}

// currentUser is who the demo hosts log in as.
func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}

// headline is one scenario's result line.
type headline struct {
	label, id, verdict, evidence string
	report, html                 string
	viz                          []string
	session                      string
}

// readHeadlines reads findings/report.json of sess: each scenario's
// verdict, its landing evidence (a pass) or its first anomaly (a FAIL),
// and the checker's porcupine visualization.
func readHeadlines(sess, label string) ([]headline, error) {
	f := filepath.Join(sess, "findings", "report.json")
	b, err := os.ReadFile(f)
	if err != nil {
		return nil, fmt.Errorf("analyze wrote no report: %w", err)
	}
	var doc struct {
		Scenarios []struct {
			ID              string `json:"id"`
			Verdict         string `json:"verdict"`
			OracleEvidence  string `json:"oracle_evidence"`
			LandingEvidence string `json:"landing_evidence"`
			Checkers        []struct {
				HTML      string `json:"html"`
				Anomalies []struct {
					Message string `json:"message"`
				} `json:"anomalies"`
			} `json:"checkers"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", f, err)
	}
	var hs []headline
	for _, s := range doc.Scenarios {
		if s.Verdict == "NOT-RUN" || s.Verdict == "NOT_RUN" {
			continue
		}
		h := headline{label: label, id: s.ID, verdict: s.Verdict, evidence: s.LandingEvidence, session: sess,
			report: filepath.Join(sess, "findings", "report.md"), html: filepath.Join(sess, "findings", "report.html")}
		if strings.HasPrefix(s.Verdict, "FAIL") {
			h.evidence = s.OracleEvidence
			seen := map[string]bool{}
			for _, c := range s.Checkers {
				if len(c.Anomalies) > 0 && h.evidence == s.OracleEvidence {
					h.evidence = s.OracleEvidence + "; " + c.Anomalies[0].Message
				}
				if c.HTML != "" && !seen[c.HTML] {
					seen[c.HTML] = true
					h.viz = append(h.viz, filepath.Join(sess, c.HTML))
				}
			}
		}
		if h.evidence == "" {
			h.evidence = s.OracleEvidence
		}
		h.evidence = oneline.Cut(h.evidence, 300)
		hs = append(hs, h)
	}
	return hs, nil
}

// print writes the headline block.
func (d *demo) print(hs []headline) {
	w := d.cfg.Out
	fmt.Fprintf(w, "\n== dstgen demo: %.0fs ==\n", time.Since(d.start).Seconds())
	for _, h := range hs {
		fmt.Fprintf(w, "%-11s %-3s %-17s %s\n", h.label, h.id, h.verdict, h.evidence)
	}
	seen := map[string]bool{}
	for _, h := range hs {
		if seen[h.session] {
			continue
		}
		seen[h.session] = true
		fmt.Fprintf(w, "%s report: %s\n%s report: %s\n", h.label, h.report, h.label, h.html)
		for _, h2 := range hs {
			if h2.session == h.session {
				for _, v := range h2.viz {
					fmt.Fprintf(w, "%s porcupine: %s\n", h.label, v)
				}
			}
		}
	}
	// Peak memory: this process (the SSH hosts and the proxy live here)
	// and the largest child it waited for (Linux ru_maxrss is KiB).
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	fmt.Fprintf(w, "exit=%d (dstgen analyze of the last session) wall=%.0fs peak_rss_demo=%dMiB peak_rss_largest_child=%dMiB\n",
		d.lastAnalyzeCode, time.Since(d.start).Seconds(), self.Maxrss/1024, kids.Maxrss/1024)
}
