package main

import (
	"fmt"
	"io"
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
	cmd       *cobra.Command // for stderr: pool diagnostics (accepted host keys, reconnects)
}

// register adds --env, --timeout, --json and --accept-new-host to cmd.
func (f *runnerFlags) register(cmd *cobra.Command) {
	f.cmd = cmd
	fl := cmd.Flags()
	fl.StringVar(&f.envPath, "env", "env.yml", "env.yml describing hosts and SSH settings")
	fl.DurationVar(&f.timeout, "timeout", runner.MaxTimeout, "bound of every SSH round trip (at most 30s; can only lower it)")
	fl.BoolVar(&f.json, "json", false, "print machine-readable JSON instead of key=value lines")
	fl.BoolVar(&f.acceptNew, "accept-new-host", false, "trust unknown host keys on first use and append them to known_hosts (a changed key is still refused)")
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
		log = f.cmd.ErrOrStderr()
	}
	p := runner.NewPool(e, runner.Options{Timeout: f.timeout, AcceptNewHosts: f.acceptNew, Log: log})
	return e, p, nil
}
