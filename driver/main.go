package driver

// Stage 3: the program. Signals, the history file, the summary lines and
// the exit code: 0 ok, 1 the run failed, 2 bad input.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
)

// SummaryPrefix starts the line a driver prints on stdout when its run
// ends (docs/driver-contract.md §3.4): the driver's own op count, which
// run.json's workload.ops_produced holds.
//
//	dstgen-driver: ops_produced=1234 ok=1200 fail=30 unknown=4
const SummaryPrefix = "dstgen-driver:"

// Main runs w as the program: Exec with the process's arguments,
// environment and streams, and a context that the first SIGTERM or SIGINT
// ends (a second one kills at once, as by default). It exits with Exec's
// code.
func Main(w Workload) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()
	code := Exec(ctx, w, os.Args[1:], Env{})
	stop()
	os.Exit(code)
}

// Exec is Main without the process: Configure, then -final-only's dump,
// or Run into the history file, the summary lines, and the final-state
// dump when Config.Final is set. It returns the exit code: 0 ok (-h
// included), 1 the run or the dump failed, 2 bad input or a history file
// that cannot be created. ctx ending stops the run, not the dump after it.
func Exec(ctx context.Context, w Workload, args []string, env Env) int {
	env = env.filled()
	cfg, err := Configure(w, args, env)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		cfg.Logf("%v", err)
		return 2
	}
	if c, ok := w.(io.Closer); ok {
		defer c.Close()
	}
	fin, _ := w.(Finaler)
	if cfg.FinalOnly {
		return final(ctx, cfg, fin)
	}
	if dir := filepath.Dir(cfg.History); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			cfg.Logf("create the history directory: %v", err)
			return 2
		}
	}
	f, err := os.Create(cfg.History)
	if err != nil {
		cfg.Logf("create the history: %v", err)
		return 2
	}
	st, err := Run(ctx, cfg, w, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close the history %s: %w", cfg.History, cerr)
	}
	if st.Exhausted > 0 {
		cfg.Logf("note: %d client(s) had no more ops to issue and stopped early", st.Exhausted)
	}
	if st.Abandoned > 0 {
		cfg.Logf("note: %d client(s) stopped: Do outlived its context by more than %v", st.Abandoned, abandonGrace)
	}
	cfg.Logf("%s", humanSummary(cfg, st))
	fmt.Fprintf(env.Stdout, "%s ops_produced=%d ok=%d fail=%d unknown=%d\n", SummaryPrefix, st.Ops, st.OK, st.Failed, st.Unknown)
	if err != nil {
		cfg.Logf("%v", err)
		return 1
	}
	if cfg.Final != "" && fin != nil {
		// After the duration or a stop signal alike: the dump gets its own
		// bound, not the run's spent context.
		return final(context.WithoutCancel(ctx), cfg, fin)
	}
	return 0
}

// humanSummary is the closing stderr line: the counts and what a person
// needs to find the run again.
func humanSummary(cfg *Config, st Stats) string {
	s := fmt.Sprintf("ops=%d ok=%d failed=%d unknown=%d out=%s run_id=%s seed=%d prefix=%s tier=%s",
		st.Ops, st.OK, st.Failed, st.Unknown, cfg.History, cfg.RunID, cfg.Seed, cfg.Prefix, cfg.Tier)
	if st.OK == 0 && st.FirstCode != "" {
		s += " first_error=" + strconv.Quote(st.FirstCode)
	}
	return s
}

// final runs the dump under Config.FinalTimeout: exit 0 written, 1 not.
func final(ctx context.Context, cfg *Config, fin Finaler) int {
	ctx, cancel := context.WithTimeout(ctx, cfg.FinalTimeout)
	defer cancel()
	if err := fin.WriteFinal(ctx); err != nil {
		cfg.Logf("%v", err)
		return 1
	}
	return 0
}
