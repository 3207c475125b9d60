package main

import (
	"context"
	"io"
	"strings"

	"github.com/dstgen/dstgen/driver"
)

// The tests drive the program through the driver package's own entry
// points, the way main does, with their own arguments and environment.

// realMain is main on args and getenv: the exit code, stderr's lines.
func realMain(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	return driver.Exec(ctx, &config{}, args, driver.Env{Getenv: getenv, Stdout: io.Discard, Stderr: stderr})
}

// configFrom is the configuration main would run with; notes gets its
// notes.
func configFrom(args []string, getenv func(string) string, notes io.Writer) (config, error) {
	var c config
	_, err := driver.Configure(&c, args, driver.Env{Getenv: getenv, Stderr: notes})
	return c, err
}

// run drives a configuration built in the test (no flags) into w.
func run(ctx context.Context, cfg config, w io.Writer) (driver.Stats, error) {
	cfg.prepare()
	return driver.Run(ctx, &cfg.Config, &cfg, w)
}

// finalMain is `workload -final-only` with cfg's endpoints, prefix and
// bounds.
func finalMain(ctx context.Context, cfg config, stderr io.Writer) int {
	args := []string{"-final-only", "-final", cfg.Final, "-endpoints", strings.Join(cfg.endpoints, ","), "-prefix", cfg.Prefix,
		"-timeout", cfg.Timeout.String(), "-final-timeout", cfg.FinalTimeout.String()}
	return realMain(ctx, args, envOf(map[string]string{"DSTGEN_RUN_ID": "r"}), stderr)
}
