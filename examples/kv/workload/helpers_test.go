package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/dstgen/dstgen/driver"
)

// The tests drive the program through the driver package's own entry
// points, the way main does, with their own arguments and environment.

// parseConfig is the configuration main would run with, now and pid
// standing in for the clock and the process in a made-up run id.
func parseConfig(args []string, getenv func(string) string, now time.Time, pid int) (config, error) {
	var c config
	_, err := driver.Configure(&c, args, driver.Env{Getenv: getenv, Now: now, Pid: pid, Stderr: io.Discard})
	return c, err
}

// run is the run main makes of cfg, into cfg's history file.
func run(ctx context.Context, cfg config) (driver.Stats, error) {
	f, err := os.Create(cfg.History)
	if err != nil {
		return driver.Stats{}, err
	}
	st, err := driver.Run(ctx, &cfg.Config, &cfg, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing the history: %w", cerr)
	}
	return st, err
}
