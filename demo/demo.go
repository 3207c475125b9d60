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

// Part labels: the headline's first column, and the part= of the
// progress lines when both parts run.
const (
	labelSafe  = "safe"
	labelStale = "stale-reads"
)

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
	kept := func(err error) error {
		fmt.Fprintf(d.cfg.Out, "kept %s (demo.log has every step's output)\n", d.dir)
		return err
	}
	if err := d.prepare(ctx); err != nil {
		return kept(err)
	}
	ports, err := freePorts(portsPerStack)
	if err != nil {
		return kept(err)
	}
	d.reserved = ports
	s := d.newStack("", d.dir, ports, d.cfg.Out, d.log)
	down, err := s.up(ctx, d.cfg.Bug == BugStaleReads)
	defer down()
	if err != nil {
		return kept(err)
	}
	fmt.Fprintf(d.cfg.Out, "demo status=ready testing=%s env=%s hosts=%s\n",
		s.testing, filepath.Join(s.testing, "env.yml"), strings.Join(s.hostNames(), ","))
	fmt.Fprintf(d.cfg.Out, "demo hint: follow %s; Ctrl-C stops the hosts\n", filepath.Join(s.testing, "README.md"))
	fmt.Fprintf(d.cfg.Out, "demo hint: in another shell: export PATH=%s:$PATH DSTGEN_NO_HOLDER=1; cd %s && dstgen task validate\n",
		shellQuote(d.bin), shellQuote(s.testing))
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
	d := &demo{cfg: cfg, dir: dir, bin: filepath.Join(dir, "bin"), src: src, root: root, start: time.Now(), log: logf, logFile: logf}
	if cfg.Log != nil {
		d.log = io.MultiWriter(logf, cfg.Log)
	}
	return d, temp, 0, nil
}

func (d *demo) closeLog() { _ = d.logFile.Close() }

// hostNames are the simulated hosts' names, in env.yml order.
func (s *stack) hostNames() []string {
	var n []string
	for _, h := range s.hosts {
		n = append(n, h.Name)
	}
	return n
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
			if rel, err := filepath.Rel(filepath.Join(h.session, "findings"), p); err == nil && filepath.IsLocal(rel) {
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

// demo is the state of one run: what its parts share (the built binaries,
// demo.log, the headline), never changed while they run.
type demo struct {
	// reserved are the ports freePorts handed to the stacks, which the
	// in-process sshds must not take (listenAvoiding).
	reserved        []int
	cfg             Config
	dir, src, root  string
	bin             string // DIR/bin: kvnode, workload, the dstgen link
	start           time.Time
	log             io.Writer
	logFile         *os.File
	health          string // sut.health command template
	lastAnalyzeCode int
	heads           []headline
}

// stack is one part's own set of everything mutable: the simulated
// hosts, the proxy and its ports, the SSH credentials, testing/ (its
// Taskfile, env.yml, scenarios.yml and results/) and the SUT deployed
// there. Two stacks share no port, directory, session or socket, so
// their parts can run at the same time.
type stack struct {
	d        *demo
	label    string // part= of the progress lines; "" = none (one part)
	dir      string // hosts/, ssh/, testing/ are under it
	testing  string // dir/testing
	out, log io.Writer
	env      []string
	hosts    []*Host
	free     []int          // the ports reserved for this stack
	ports    []int          // kvnode listen ports
	ins      []int          // proxy in-<n>: in front of replica n
	outs     map[[2]int]int // proxy out-<n>-<m>: replica n's way to m
	api      string
}

// portsPerStack: a kvnode port per replica, an in- proxy per replica, an
// out- proxy per ordered pair of replicas, the proxy's API.
var portsPerStack = len(nodeNames) + len(nodeNames) + len(nodeNames)*(len(nodeNames)-1) + 1

func (d *demo) newStack(label, dir string, free []int, out, log io.Writer) *stack {
	return &stack{d: d, label: label, dir: dir, testing: filepath.Join(dir, "testing"), free: free, out: out, log: log}
}

// progress prints one progress line of the demo as a whole.
func (d *demo) progress(phase string, kv ...string) { progressLine(d.cfg.Out, d.start, "", phase, kv) }

// progress prints one progress line of the stack's part.
func (s *stack) progress(phase string, kv ...string) {
	progressLine(s.out, s.d.start, s.label, phase, kv)
}

func progressLine(w io.Writer, start time.Time, label, phase string, kv []string) {
	var b strings.Builder
	fmt.Fprintf(&b, "demo phase=%s elapsed=%.1fs", phase, time.Since(start).Seconds())
	if label != "" {
		fmt.Fprintf(&b, " part=%s", label)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, " %s=%s", kv[i], kv[i+1])
	}
	b.WriteByte('\n')
	_, _ = io.WriteString(w, b.String())
}

// prepare builds examples/kv into DIR/bin and links this dstgen there:
// what every stack runs, built once.
func (d *demo) prepare(ctx context.Context) error {
	d.progress("build", "src", d.src)
	if err := d.build(ctx); err != nil {
		return err
	}
	// DIR/bin/dstgen: the one binary the tasks call, for a user who puts
	// DIR/bin on PATH (go run's binary is in a temp dir of its own).
	if link := filepath.Join(d.bin, "dstgen"); d.cfg.Exe != "" && d.cfg.Exe != link {
		_ = os.Remove(link)
		if err := os.Symlink(d.cfg.Exe, link); err != nil {
			return fmt.Errorf("link %s: %w", link, err)
		}
	}
	return nil
}

// up starts the stack's hosts and proxy, runs dstgen init and fills
// env.yml (staleReads: the bug switch) and scenarios.yml: everything up to
// deploy, shared by Run and Stay. down, never nil, undoes what up started
// (the SUT stopped and healed first, then the proxy and the hosts),
// whatever the state of ctx; call it once, also when err is not nil.
func (s *stack) up(ctx context.Context, staleReads bool) (down func(), err error) {
	down, err = s.serve(ctx)
	if err != nil {
		return down, err
	}
	serveDown := down
	// Whatever happens from here on, stop the SUT and heal before the
	// hosts and the proxy go away.
	down = func() {
		s.cleanup()
		serveDown()
	}
	s.progress("init", "out", s.testing)
	initArgs := []string{"init", "--sut", s.d.src, "--out", s.testing, "--yes"}
	if s.d.cfg.Plan != "" {
		initArgs = append(initArgs, "--plan", s.d.cfg.Plan)
	}
	if _, err := s.dstgen(ctx, s.dir, initArgs...); err != nil {
		return down, fmt.Errorf("dstgen init: %w", err)
	}
	if err := s.writeEnv(staleReads); err != nil {
		return down, err
	}
	if err := s.fillScenarios(); err != nil {
		return down, err
	}
	return down, nil
}

// serve starts the stack's hosts (one in-process SSH server each, a fresh
// key pair, strict host key checking against the stack's own
// known_hosts) and its proxy on the stack's reserved ports. down, never
// nil, stops them.
func (s *stack) serve(ctx context.Context) (down func(), err error) {
	var undo []func()
	down = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		undo = nil
	}
	n := len(nodeNames)
	if len(s.free) != portsPerStack {
		return down, fmt.Errorf("demo: %d ports reserved for a stack, want %d", len(s.free), portsPerStack)
	}
	keys, err := NewKeys()
	if err != nil {
		return down, err
	}
	sshDir := filepath.Join(s.dir, "ssh")
	if err := os.MkdirAll(sshDir, 0o700); err != nil {
		return down, fmt.Errorf("ssh dir: %w", err)
	}
	if err := keys.WriteKey(filepath.Join(sshDir, "id_ed25519")); err != nil {
		return down, err
	}
	hctx, stopHosts := context.WithCancel(context.WithoutCancel(ctx))
	undo = append(undo, stopHosts)
	undo = append(undo, func() {
		for _, h := range s.hosts {
			if err := h.Close(); err != nil {
				fmt.Fprintf(s.log, "demo: %v\n", err)
			}
		}
	})
	path := "PATH=" + s.d.bin + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, name := range append(append([]string{}, nodeNames...), "client") {
		h, err := StartHost(hctx, name, filepath.Join(s.dir, "hosts", name), keys.Signer.PublicKey(), s.d.reserved, path)
		if err != nil {
			return down, err
		}
		s.hosts = append(s.hosts, h)
	}
	if err := WriteKnownHosts(filepath.Join(sshDir, "known_hosts"), s.hosts); err != nil {
		return down, err
	}

	// The proxies: in-<n> in front of replica n, and out-<n>-<m> by which
	// replica n reaches replica m (through in-<m>). Disabling in-3,
	// out-3-1 and out-3-2 cuts node 3 off from both peers in both
	// directions, while its own clients still reach it directly.
	ports := s.free
	s.ports, s.ins = ports[:n], ports[n:2*n]
	s.outs = map[[2]int]int{}
	next := 2 * n
	var specs []proxy.Spec
	for i := range n {
		specs = append(specs, proxy.Spec{Name: fmt.Sprintf("in-%d", i+1),
			Listen: loopback(s.ins[i]), Upstream: loopback(s.ports[i])})
	}
	for i := range n {
		for j := range n {
			if i == j {
				continue
			}
			s.outs[[2]int{i, j}] = ports[next]
			specs = append(specs, proxy.Spec{Name: fmt.Sprintf("out-%d-%d", i+1, j+1),
				Listen: loopback(ports[next]), Upstream: loopback(s.ins[j])})
			next++
		}
	}
	apiAddr := loopback(ports[next])
	pctx, stopProxy := context.WithCancel(context.WithoutCancel(ctx))
	ready := make(chan string, 1)
	perr := make(chan error, 1)
	go func() {
		perr <- proxy.Serve(pctx, apiAddr, specs, s.log, func(api string, _ *proxy.Server) { ready <- api })
	}()
	undo = append(undo, func() {
		stopProxy()
		select {
		case <-perr:
		case <-time.After(10 * time.Second):
		}
	})
	select {
	case s.api = <-ready:
	case err := <-perr:
		return down, fmt.Errorf("proxy: %w", err)
	case <-time.After(10 * time.Second):
		return down, errors.New("proxy: not listening after 10s")
	}
	s.progress("hosts", "ssh", s.hostList(), "proxy_api", s.api)
	s.env = append(os.Environ(), "PATH="+s.d.bin+string(os.PathListSeparator)+os.Getenv("PATH"), "DSTGEN_NO_HOLDER=1", "DSTGEN="+s.d.cfg.Exe)
	return down, nil
}

// run builds, then runs the parts --bug asks for, each on a stack of its
// own, at the same time: the safe part in DIR, the stale-read part in DIR
// too when it runs alone, else in DIR/stale-reads with its session moved
// into DIR/testing/results before it is analyzed (docs/demo.md §3).
func (d *demo) run(ctx context.Context) (int, error) {
	if err := d.prepare(ctx); err != nil {
		return 1, err
	}
	safe := d.cfg.Bug == BugNone || d.cfg.Bug == BugBoth
	stale := d.cfg.Bug == BugStaleReads || d.cfg.Bug == BugBoth
	both := safe && stale
	// All ports in one reservation: distinct across the stacks.
	free, err := freePorts(portsPerStack * 2)
	if err != nil {
		return 1, err
	}
	d.reserved = free
	safePorts, stalePorts := free[:portsPerStack], free[portsPerStack:]
	label := func(l string) string {
		if both {
			return l
		}
		return ""
	}
	var parts []partFunc
	if safe {
		parts = append(parts, func(ctx context.Context, out, log io.Writer, t *turn) (partResult, error) {
			s := d.newStack(label(labelSafe), d.dir, safePorts, out, log)
			return s.safePart(ctx, t)
		})
	}
	if stale {
		dir := d.dir
		if both {
			dir = filepath.Join(d.dir, labelStale)
		}
		parts = append(parts, func(ctx context.Context, out, log io.Writer, t *turn) (partResult, error) {
			s := d.newStack(label(labelStale), dir, stalePorts, out, log)
			return s.bugPart(ctx, t, filepath.Join(d.dir, "testing", "results"))
		})
	}
	res, err := runParts(ctx, d.cfg.Out, d.log, parts)
	if err != nil {
		return 1, err
	}
	for _, r := range res {
		d.heads = append(d.heads, r.heads...)
		d.lastAnalyzeCode = r.code
	}
	return d.lastAnalyzeCode, nil
}

// deploy brings a fresh stack to a deployed SUT: up, validate, deploy.
func (s *stack) deploy(ctx context.Context, staleReads bool) (down func(), err error) {
	down, err = s.up(ctx, staleReads)
	if err != nil {
		return down, err
	}
	for _, t := range []string{"validate", "deploy"} {
		s.progress(t)
		if _, err := s.task(ctx, t); err != nil {
			return down, fmt.Errorf("task %s: %w", t, err)
		}
	}
	return down, nil
}

// safePart: S1 (smoke) then S2 (the partition), one session, analyzed.
func (s *stack) safePart(ctx context.Context, t *turn) (partResult, error) {
	down, err := s.deploy(ctx, false)
	defer down()
	if err != nil {
		return partResult{}, err
	}
	name, err := t.sessionName(ctx)
	if err != nil {
		return partResult{}, err
	}
	s.progress("run", "scenario", "S1", "stale_reads", "false")
	if _, err := s.task(ctx, "run:scenario", "SCENARIO=S1", "SESSION="+name); err != nil {
		return partResult{}, fmt.Errorf("task run:scenario SCENARIO=S1: %w", err)
	}
	sess, err := s.session(name)
	if err != nil {
		return partResult{}, err
	}
	s.progress("ran", "scenario", "S1", "ops", ops(sess, "S1"))
	// S2 goes into the same session, so the session verdict judges both:
	// the task's own command line with --out.
	s.progress("run", "scenario", "S2", "stale_reads", "false")
	if _, err := s.dstgen(ctx, s.testing, "run", "S2", "--env", "env.yml", "--scenarios", "scenarios.yml", "--out", sess); err != nil && !isExit(err) {
		return partResult{}, fmt.Errorf("dstgen run S2: %w", err)
	}
	s.progress("ran", "scenario", "S2", "ops", ops(sess, "S2"))
	r, err := s.analyze(ctx, sess, labelSafe)
	t.isJudged()
	return r, err
}

// bugPart: deploy with -stale-reads, S2, the re-run with the same seed
// and schedule into the same session, then the session moved into
// results (DIR/testing/results, where the safe part's session is; a no-op
// when this stack is in DIR) and analyzed there.
func (s *stack) bugPart(ctx context.Context, t *turn, results string) (partResult, error) {
	down, err := s.deploy(ctx, true)
	defer down()
	if err != nil {
		return partResult{}, err
	}
	name, err := t.sessionName(ctx)
	if err != nil {
		return partResult{}, err
	}
	s.progress("run", "scenario", "S2", "stale_reads", "true")
	if _, err := s.task(ctx, "run:scenario", "SCENARIO=S2", "SESSION="+name); err != nil {
		return partResult{}, fmt.Errorf("task run:scenario SCENARIO=S2: %w", err)
	}
	sess, err := s.session(name)
	if err != nil {
		return partResult{}, err
	}
	s.progress("ran", "scenario", "S2", "ops", ops(sess, "S2"))
	// The re-run uses the run's key namespace again: restart the SUT
	// (in memory) so it starts from an empty store, as the first run did.
	if _, err := s.task(ctx, "service:restart"); err != nil {
		return partResult{}, fmt.Errorf("task service:restart: %w", err)
	}
	s.progress("rerun", "scenario", "S2", "session", sess)
	// The newest session of the stack's own results/ is this one.
	if _, err := s.dstgen(ctx, s.testing, "run", "S2", "--rerun", "--env", "env.yml", "--scenarios", "scenarios.yml"); err != nil && !isExit(err) {
		return partResult{}, fmt.Errorf("dstgen run S2 --rerun: %w", err)
	}
	// Analyze compares a session with the one before it in its results
	// dir: the safe part's, judged first, as when they ran one after
	// the other.
	if err := t.afterPrevJudged(ctx); err != nil {
		return partResult{}, fmt.Errorf("waiting for the safe part: %w", err)
	}
	if sess, err = moveSession(sess, results); err != nil {
		return partResult{}, err
	}
	r, err := s.analyze(ctx, sess, labelStale)
	t.isJudged()
	return r, err
}

// moveSession moves session dir sess (…/results/<slug>/<name>) to
// results/<slug>/<name> and returns its new path; sess itself when it is
// there already.
func moveSession(sess, results string) (string, error) {
	slugDir := filepath.Dir(sess)
	dst := filepath.Join(results, filepath.Base(slugDir), filepath.Base(sess))
	if filepath.Clean(dst) == filepath.Clean(sess) {
		return sess, nil
	}
	if _, err := os.Lstat(dst); err == nil {
		return "", fmt.Errorf("move the session to %s: it exists", dst)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", fmt.Errorf("move the session: %w", err)
	}
	if err := os.Rename(sess, dst); err != nil {
		return "", fmt.Errorf("move the session: %w", err)
	}
	_ = os.Remove(slugDir) // the stack's results/<slug>/, empty now
	return dst, nil
}

// analyze runs `task analyze RESULTS=sess` and reads its verdicts; the
// code is analyze's exit code.
func (s *stack) analyze(ctx context.Context, sess, label string) (partResult, error) {
	s.progress("analyze", "session", sess)
	code, err := s.task(ctx, "analyze", "RESULTS="+sess)
	if err != nil && !isExit(err) {
		return partResult{}, fmt.Errorf("task analyze: %w", err)
	}
	if code != 0 && code != 1 {
		return partResult{}, fmt.Errorf("task analyze RESULTS=%s: exit %d (see %s)", sess, code, filepath.Join(s.d.dir, "demo.log"))
	}
	hs, err := readHeadlines(sess, label)
	return partResult{heads: hs, code: code}, err
}

// cleanup stops the SUT and heals every fault, bounded, whatever the
// state of ctx (Ctrl-C included).
func (s *stack) cleanup() {
	if _, err := os.Stat(filepath.Join(s.testing, "env.yml")); err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s.progress("cleanup", "do", "sut-stop,heal")
	if _, err := s.dstgen(ctx, s.testing, "sut", "stop", "--env", "env.yml"); err != nil {
		fmt.Fprintf(s.out, "demo: stopping the SUT: %v\n", err)
	}
	if _, err := s.dstgen(ctx, s.testing, "heal", "--all", "--env", "env.yml"); err != nil {
		fmt.Fprintf(s.out, "demo: heal --all: %v\n", err)
	}
}

// exitErr is a child that ran and exited non-zero.
type exitErr struct{ code int }

func (e *exitErr) Error() string { return "exit status " + strconv.Itoa(e.code) }

func isExit(err error) bool {
	var ee *exitErr
	return errors.As(err, &ee)
}

// dstgen runs this dstgen binary in dir; its output goes to the stack's
// log. The exit code is returned with an *exitErr when it is not 0.
func (s *stack) dstgen(ctx context.Context, dir string, args ...string) (int, error) {
	return command(ctx, s.log, s.env, dir, s.d.cfg.Exe, args...)
}

// task runs `dstgen task NAME VAR=val...` in the stack's testing/.
func (s *stack) task(ctx context.Context, args ...string) (int, error) {
	return s.dstgen(ctx, s.testing, append([]string{"task", "--dir", s.testing}, args...)...)
}

// command runs name with args in dir with env, output to log; on cancel
// SIGTERM to its whole process group, the child killed 15 s later.
func command(ctx context.Context, log io.Writer, env []string, dir, name string, args ...string) (int, error) {
	fmt.Fprintf(log, "\n$ (cd %s && %s %s)\n", dir, name, strings.Join(args, " "))
	c := exec.CommandContext(ctx, name, args...)
	c.Dir, c.Env, c.Stdout, c.Stderr = dir, env, log, log
	// A group of its own, signalled as a whole: the `dstgen run` under
	// `dstgen task` and go-task hears the interrupt itself, as from a
	// terminal's Ctrl-C, and heals and stops its samplers while the hosts
	// are still up, whoever signalled the demo (SIGTERM to its pid too).
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGTERM) }
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
// dstgen-task is beside dstgen or on PATH) into DIR/bin.
func (d *demo) build(ctx context.Context) error {
	bin := d.bin
	goBin, err := exec.LookPath("go")
	if err != nil {
		return badInput("go not on PATH: the demo builds examples/kv with it")
	}
	env := os.Environ()
	d.pickHealth(bin)
	dir, pkgs := d.src, []string{"./kvnode", "./workload"}
	if !haveTaskRunner(d.cfg.Exe) {
		if d.root == "" {
			return badInput("no dstgen-task beside %s or on PATH, and no dstgen module above %s to build it from", d.cfg.Exe, d.src)
		}
		d.progress("build", "what", "dstgen-task")
		rel, ok := inModule(d.root, d.src)
		if !ok {
			if _, err := command(ctx, d.log, env, d.root, goBin, "build", "-o", filepath.Join(bin, "dstgen-task"), "./cmd/dstgen-task"); err != nil {
				return fmt.Errorf("go build ./cmd/dstgen-task: %w (see %s)", err, filepath.Join(d.dir, "demo.log"))
			}
		} else {
			// examples/kv is in dstgen's module: one go build for the
			// three, which compiles and links them in parallel.
			dir, pkgs = d.root, []string{"./" + filepath.ToSlash(filepath.Join(rel, "kvnode")), "./" + filepath.ToSlash(filepath.Join(rel, "workload")), "./cmd/dstgen-task"}
		}
	}
	// One go build for all: its packages build in parallel, each binary
	// named after its package directory.
	args := append([]string{"build", "-o", bin + string(os.PathSeparator)}, pkgs...)
	if _, err := command(ctx, d.log, env, dir, goBin, args...); err != nil {
		return fmt.Errorf("go build %s in %s: %w (see %s)", strings.Join(pkgs, " "), dir, err, filepath.Join(d.dir, "demo.log"))
	}
	return nil
}

// inModule says whether dir is in the Go module rooted at root (no other
// go.mod between them) and gives its path relative to root.
func inModule(root, dir string) (string, bool) {
	rel, err := filepath.Rel(root, dir)
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	for p := dir; p != root && p != filepath.Dir(p); p = filepath.Dir(p) {
		if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
			return "", false
		}
	}
	return rel, true
}

// pickHealth sets sut.health to kvnode's own probe (-check ADDR): a fresh
// machine need not have curl.
func (d *demo) pickHealth(bin string) {
	d.health = filepath.Join(bin, "kvnode") + " -check 127.0.0.1:{{ .Host.Vars.port }}"
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
func (s *stack) cutProxies(n int) string {
	p := []string{fmt.Sprintf("in-%d", n+1)}
	for j := range s.ports {
		if j != n {
			p = append(p, fmt.Sprintf("out-%d-%d", n+1, j+1))
		}
	}
	return strings.Join(p, ",")
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

func (s *stack) hostList() string {
	var l []string
	for _, h := range s.hosts {
		l = append(l, fmt.Sprintf("%s@127.0.0.1:%d", h.Name, h.Port()))
	}
	return strings.Join(l, ",")
}

// session is the stack's session named name: results/<plan-slug>/<name>
// of its testing/, which the run named so just made.
func (s *stack) session(name string) (string, error) {
	runs, _ := filepath.Glob(filepath.Join(s.testing, "results", "*", name, "artifacts"))
	if len(runs) != 1 {
		return "", fmt.Errorf("the run wrote no session %s under %s (see %s)", name, filepath.Join(s.testing, "results"), filepath.Join(s.d.dir, "demo.log"))
	}
	return filepath.Dir(runs[0]), nil
}

// ops counts the ops of a unit's history in a session (the latest run).
func ops(sess, id string) string {
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
// verdict, its landing evidence (a pass), its first anomaly (a FAIL) or
// what took it down (PARTIAL, INCONCLUSIVE), and the checker's porcupine
// visualization.
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
			Reasons         []struct {
				To   string `json:"to"`
				Text string `json:"text"`
			} `json:"reasons"`
			Checkers []struct {
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
		// A PARTIAL or INCONCLUSIVE line leads with what took the verdict
		// down (the last reason, docs/verdicts.md §4): landing evidence
		// alone reads like a pass.
		if !strings.HasPrefix(s.Verdict, "PASS") && !strings.HasPrefix(s.Verdict, "FAIL") && len(s.Reasons) > 0 {
			if r := s.Reasons[len(s.Reasons)-1]; r.To == s.Verdict && r.Text != "" {
				h.evidence = strings.TrimSuffix(r.Text+"; "+h.evidence, "; ")
			}
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
