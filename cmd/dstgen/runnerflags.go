package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/runner"
	"github.com/spf13/cobra"
)

// runnerFlags are the flags every runner command (exec, job, push, collect,
// probe) shares, and the one place that turns them into an Env and a Pool.
type runnerFlags struct {
	envPath   string
	timeout   time.Duration
	json      bool
	acceptNew bool
	noHolder  bool
	idle      time.Duration
	cmd       *cobra.Command // for stderr: pool diagnostics (accepted host keys, reconnects)
}

// Environment of the connection holder.
const (
	envNoHolder   = "DSTGEN_NO_HOLDER"   // 1/true: connect directly, like --no-holder
	envHolderDir  = "DSTGEN_HOLDER_DIR"  // overrides the socket directory
	envHolderIdle = "DSTGEN_HOLDER_IDLE" // idle exit of a holder this call starts
)

// register adds --env, --timeout, --json, --accept-new-host, --no-holder
// and --holder-idle to cmd.
func (f *runnerFlags) register(cmd *cobra.Command) {
	f.cmd = cmd
	fl := cmd.Flags()
	fl.StringVar(&f.envPath, "env", "env.yml", "env.yml describing hosts and SSH settings")
	fl.DurationVar(&f.timeout, "timeout", runner.MaxTimeout, "bound of every SSH round trip (at most 30s; can only lower it)")
	fl.BoolVar(&f.json, "json", false, "print machine-readable JSON instead of key=value lines")
	fl.BoolVar(&f.acceptNew, "accept-new-host", false, "trust unknown host keys on first use and append them to known_hosts (a changed key is still refused)")
	fl.BoolVar(&f.noHolder, "no-holder", false, "connect directly, not through the per-user connection holder (also "+envNoHolder+"=1)")
	fl.DurationVar(&f.idle, "holder-idle", runner.DefaultHolderIdle, "idle time after which a connection holder started by this call exits (also "+envHolderIdle+")")
}

// holder is the connection holder every runner command goes through, or
// nil for direct connections: --no-holder, DSTGEN_NO_HOLDER, or a test
// binary (re-executing it would run the tests, not dstgen).
func (f *runnerFlags) holder() (*runner.Holder, error) {
	if f.noHolder || testing.Testing() {
		return nil, nil
	}
	if v := os.Getenv(envNoHolder); v != "" {
		off, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: want 1 or 0", envNoHolder, v)
		}
		if off {
			return nil, nil
		}
	}
	idle := f.idle
	if v := os.Getenv(envHolderIdle); v != "" && (f.cmd == nil || !f.cmd.Flags().Changed("holder-idle")) {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: %v", envHolderIdle, v, err)
		}
		idle = d
	}
	if idle <= 0 {
		return nil, fmt.Errorf("--holder-idle %s: must be positive", idle)
	}
	dir := os.Getenv(envHolderDir)
	if dir == "" {
		dir = runner.DefaultHolderDir()
	}
	h := &runner.Holder{Dir: dir}
	// Without our own binary we can still use a running holder.
	if exe, err := os.Executable(); err == nil {
		h.Start = []string{exe, "exec", "--" + holderServeFlag, dir, "--holder-idle", idle.String()}
	}
	return h, nil
}

// open loads the env file and returns a Pool on it. Every error is exit-2
// material (bad input or environment); callers wrap it with badInput and
// must Close the pool.
func (f *runnerFlags) open() (*env.Env, *runner.Pool, error) {
	if f.timeout <= 0 {
		return nil, nil, fmt.Errorf("--timeout %s: must be positive", f.timeout)
	}
	if f.timeout > runner.MaxTimeout {
		return nil, nil, fmt.Errorf("--timeout %s exceeds the %s ceiling of every SSH round trip; long work belongs in `dstgen job start`", f.timeout, runner.MaxTimeout)
	}
	e, err := env.Load(f.envPath)
	if err != nil {
		return nil, nil, err
	}
	// Diagnostics go to stderr so that trust-on-first-use is never silent:
	// the user sees which fingerprint was written to known_hosts.
	var log io.Writer
	if f.cmd != nil {
		log = newHolderWarnOnce(f.cmd.ErrOrStderr())
	}
	h, err := f.holder()
	if err != nil {
		return nil, nil, err
	}
	p := runner.NewPool(e, runner.Options{Timeout: f.timeout, AcceptNewHosts: f.acceptNew, Log: log, Holder: h})
	return e, p, nil
}

// openTarget is open plus the hosts TARGET selects (a host, role:R, all, a
// comma list): the preamble of every command that takes a TARGET. Errors
// are exit-2 errors prefixed with what ("push: "); on success the caller
// closes the pool.
func (f *runnerFlags) openTarget(what, target string) (*env.Env, *runner.Pool, []env.Host, error) {
	e, pool, err := f.open()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s%w", what, err)
	}
	hosts, err := e.Select(target)
	if err != nil {
		pool.Close()
		return nil, nil, nil, fmt.Errorf("%s%s: %w", what, e.Path, err)
	}
	return e, pool, hosts, nil
}

// holderUnavailable starts the pool's warning that the connection holder
// could not be used (runner/transport.go): true of every dstgen call of a
// `task` run alike, so it is said once per call chain, not per command —
// the 20 stderr lines an error report quotes are for the failure.
const holderUnavailable = "dstgen: connection holder unavailable"

// holderWarnOnce passes the pool's diagnostics through, except that the
// holder-unavailable warning is dropped when this process group (one
// `task` invocation and every dstgen it runs) already said it: a marker in
// the user's cache dir holds the group id of the last one that did.
type holderWarnOnce struct {
	w      io.Writer
	marker string // "" = no marker: said once by this process
	pgid   int
	// A pool dials its hosts in parallel, and each may hit the holder
	// before the first failure turns it off: one process says it once.
	mu   sync.Mutex
	done bool
}

func newHolderWarnOnce(w io.Writer) *holderWarnOnce {
	o := &holderWarnOnce{w: w, pgid: syscall.Getpgrp()}
	if dir, err := os.UserCacheDir(); err == nil {
		o.marker = filepath.Join(dir, "dstgen", "holder-warned")
	}
	return o
}

func (o *holderWarnOnce) Write(b []byte) (int, error) {
	if !bytes.HasPrefix(b, []byte(holderUnavailable)) {
		return o.w.Write(b)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return len(b), nil
	}
	o.done = true
	if o.marker == "" {
		return o.w.Write(b)
	}
	mine := strconv.Itoa(o.pgid)
	if last, err := os.ReadFile(o.marker); err == nil && strings.TrimSpace(string(last)) == mine {
		return len(b), nil
	}
	if err := os.MkdirAll(filepath.Dir(o.marker), 0o700); err == nil {
		// O_NOFOLLOW: the marker is never written through a symlink.
		if fh, err := os.OpenFile(o.marker, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600); err == nil {
			_, _ = fh.WriteString(mine + "\n")
			_ = fh.Close()
		}
	}
	return o.w.Write(b)
}
