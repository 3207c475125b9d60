package driver

// Stage 1: the run's settings. The contract's DSTGEN_* variables
// (docs/driver-contract.md §2) under flags that win over them, the
// driver's own flags beside them, then the driver's Setup.

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// MaxClients bounds Config.Clients: each client is a goroutine and a
// process of the history, and more than this many is a typo, not a load.
const MaxClients = 1024

// maxTimeout bounds the per-op timeout: an op that may stay in flight
// longer would hold a client through most of a fault window.
const maxTimeout = time.Minute

// Config is one run's settings: the contract's inputs, each under a flag
// that wins over its variable (an empty variable counts as unset), and the
// knobs of the engine. A Workload may change a field's default in its Flags
// method, before the flags are registered with them.
type Config struct {
	// Name is the program's name, the prefix of its stderr lines
	// (default: the base name of os.Args[0]).
	Name string

	History  string        // -out, DSTGEN_HISTORY: the history file (default history.jsonl)
	RunID    string        // -run-id, DSTGEN_RUN_ID (default local-<UTC time>-<pid>)
	Seed     int64         // -seed, DSTGEN_SEED; 0 or unset: DeriveSeed(RunID)
	Duration time.Duration // -duration (a Go duration), DSTGEN_DURATION_S (seconds); default 10s
	Rate     float64       // -rate, DSTGEN_RATE: target ops/s over all clients; 0: as fast as they go
	Mode     string        // -mode, DSTGEN_MODE: free text the driver interprets
	Scenario string        // -scenario, DSTGEN_SCENARIO: into the history header
	Tier     string        // -tier, DSTGEN_TIER: into the history header
	Dataset  string        // DSTGEN_DATASET: free text the driver interprets
	Arm      string        // DSTGEN_ARM: the §7.M.S arm id of a scenario run
	Workdir  string        // DSTGEN_WORKDIR: the host's work dir
	// SUTHosts are the addresses of DSTGEN_SUT_HOSTS, in order; RoleHosts
	// reads DSTGEN_HOSTS_<ROLE>.
	SUTHosts []string
	// Prefix namespaces every key with the run id (-prefix; Key builds
	// keys under it): by default <root>/<run id>, where root is the
	// default's Prefix ("dstgen"); a -prefix given is used as it is.
	Prefix string

	Final        string        // -final, DSTGEN_FINAL: where a Finaler dumps the final state
	FinalOnly    bool          // -final-only: no ops, only the dump (a scenario's final_state command)
	FinalTimeout time.Duration // -final-timeout: bound on the dump (default 20s)

	Clients int // -clients: logical clients (default 1; 1..MaxClients)
	// Share and Shares are DSTGEN_SHARE ("<i>/<n>", default 0/1): this
	// driver is the i-th of n client hosts running the workload at once.
	// Its clients are numbered from FirstClient, so client ids, process
	// ids and whatever a workload derives from them (fresh keys, unique
	// values) never meet another host's.
	Share, Shares int
	Timeout       time.Duration // -timeout: per-op timeout (default 1s, at most 1m)
	MaxOps        int64         // -ops: op budget over all clients; 0: no limit
	// FailPause is how long a client waits after an op that did not
	// succeed (no flag; default 0), so an unthrottled client against a
	// node that refuses at once does not fill the history with failures.
	FailPause time.Duration

	// Stderr receives Logf's lines; nil discards them.
	Stderr io.Writer

	given    map[string]bool
	getenv   func(string) string
	localRun bool // RunID was made up: neither -run-id nor DSTGEN_RUN_ID
}

// Env is where a driver reads its inputs and writes its lines. A zero
// field is the running process's own (os.Getenv, time.Now, os.Getpid,
// os.Stdout, os.Stderr).
type Env struct {
	Getenv         func(string) string
	Now            time.Time // the time in a made-up run id
	Pid            int       // the pid in a made-up run id
	Stdout, Stderr io.Writer
}

func (e Env) filled() Env {
	if e.Getenv == nil {
		e.Getenv = os.Getenv
	}
	if e.Now.IsZero() {
		e.Now = time.Now()
	}
	if e.Pid == 0 {
		e.Pid = os.Getpid()
	}
	if e.Stdout == nil {
		e.Stdout = os.Stdout
	}
	if e.Stderr == nil {
		e.Stderr = os.Stderr
	}
	return e
}

// Given reports whether the flag name was set on the command line, so a
// driver's own flag can fall back to a variable the way the contract's do.
func (c *Config) Given(name string) bool { return c.given[name] }

// RoleHosts returns the addresses of DSTGEN_HOSTS_<ROLE> for role, in
// env.yml order: the role upper-cased with "-" and "." as "_".
func (c *Config) RoleHosts(role string) []string {
	if c.getenv == nil {
		return nil
	}
	name := "DSTGEN_HOSTS_" + strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToUpper(role))
	return splitHosts(c.getenv(name))
}

// Key is name inside the run's key namespace: <Prefix>/<name>, or name
// when Prefix is empty.
func (c *Config) Key(name string) string {
	if c.Prefix == "" {
		return name
	}
	return c.Prefix + "/" + name
}

// Logf writes one line "<Name>: <message>" to Stderr.
func (c *Config) Logf(format string, args ...any) {
	if c.Stderr != nil {
		fmt.Fprintf(c.Stderr, "%s: %s\n", c.Name, fmt.Sprintf(format, args...))
	}
}

// DeriveSeed is the seed of a run given none (docs/driver-contract.md §4):
// a stable hash of the run id, non-zero and below 2^53 so every JSON
// reader reads it exactly from the history header.
func DeriveSeed(runID string) int64 {
	s := int64(hash64("dstgen-seed\x00"+runID) & (1<<53 - 1))
	if s == 0 {
		s = 1
	}
	return s
}

// hash64 is the first 8 bytes of SHA-256: FNV's high bits barely move
// when only the last byte differs (run 1 vs run 2).
func hash64(s string) uint64 {
	sum := sha256.Sum256([]byte(s))
	return binary.BigEndian.Uint64(sum[:8])
}

// Configure reads a run's settings for w: the driver's flags (w.Flags)
// and the contract's on one flag set, parsed from args, each contract
// flag not given taken from its DSTGEN_* variable, every value checked,
// then w.Setup. The error is one line naming the flag or variable at
// fault; flag.ErrHelp after -h (the usage went to env.Stderr). The Config
// is never nil, so its Name can prefix the error.
func Configure(w Workload, args []string, env Env) (*Config, error) {
	env = env.filled()
	cfg := &Config{
		Name: filepath.Base(os.Args[0]), History: "history.jsonl", Duration: 10 * time.Second,
		Prefix: "dstgen", FinalTimeout: 20 * time.Second, Clients: 1, Timeout: time.Second,
		Stderr: env.Stderr, getenv: env.Getenv,
	}
	fs := flag.NewFlagSet(cfg.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // a bad flag is one line from the caller, not the usage
	w.Flags(fs, cfg)
	root := cfg.Prefix
	cfg.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(env.Stderr)
			fmt.Fprintf(env.Stderr, "usage: %s [flags]; every contract flag not given falls back to its DSTGEN_* variable\n", cfg.Name)
			fs.PrintDefaults()
		}
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q (the driver takes flags only)", fs.Arg(0))
	}
	cfg.given = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { cfg.given[f.Name] = true })
	if err := cfg.fromEnv(); err != nil {
		return cfg, err
	}
	if err := cfg.check(); err != nil {
		return cfg, err
	}
	if cfg.RunID == "" {
		// Not run by dstgen: still never share a run id (and so a key
		// prefix and a seed) with an earlier run.
		cfg.RunID = fmt.Sprintf("local-%s-%d", env.Now.UTC().Format("20060102_150405"), env.Pid)
		cfg.localRun = true
	}
	if cfg.Seed == 0 {
		cfg.Seed = DeriveSeed(cfg.RunID)
	}
	if cfg.given["prefix"] {
		cfg.Prefix = strings.TrimRight(cfg.Prefix, "/")
	} else {
		cfg.Prefix = strings.TrimLeft(root+"/"+cfg.RunID, "/")
	}
	_, finaler := w.(Finaler)
	switch {
	case cfg.FinalOnly && !finaler:
		return cfg, errors.New("-final-only: this driver writes no final state")
	case cfg.Final != "" && !finaler:
		cfg.Logf("note: %s has no final state to write; %q ignored", cfg.Name, cfg.Final)
		cfg.Final = ""
	}
	if err := w.Setup(cfg); err != nil {
		return cfg, err
	}
	// Setup may set Clients (one per endpoint, say): checked after it.
	if cfg.Clients < 1 || cfg.Clients > MaxClients {
		return cfg, fmt.Errorf("-clients %d: want 1..%d", cfg.Clients, MaxClients)
	}
	if cfg.localRun {
		cfg.Logf("note: no DSTGEN_RUN_ID or -run-id; using run id %s", cfg.RunID)
	}
	return cfg, nil
}

// register binds the contract's flags to cfg's fields, their current
// values as defaults.
func (c *Config) register(fs *flag.FlagSet) {
	fs.StringVar(&c.History, "out", c.History, "history file to write (DSTGEN_HISTORY)")
	fs.StringVar(&c.RunID, "run-id", c.RunID, "run id (DSTGEN_RUN_ID; default local-<UTC time>-<pid>)")
	fs.Int64Var(&c.Seed, "seed", c.Seed, "seed; 0: a stable hash of the run id (DSTGEN_SEED)")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "how long to run (DSTGEN_DURATION_S, in seconds)")
	fs.Float64Var(&c.Rate, "rate", c.Rate, "target ops/s over all clients; 0: as fast as the clients go (DSTGEN_RATE)")
	fs.StringVar(&c.Mode, "mode", c.Mode, "workload mode (DSTGEN_MODE)")
	fs.StringVar(&c.Scenario, "scenario", c.Scenario, "scenario id for the history header (DSTGEN_SCENARIO)")
	fs.StringVar(&c.Tier, "tier", c.Tier, "tier for the history header (DSTGEN_TIER)")
	fs.StringVar(&c.Prefix, "prefix", c.Prefix, "key prefix (default <prefix>/<run id>; given: as it is, empty for bare keys)")
	fs.StringVar(&c.Final, "final", c.Final, "write the final-state dump here after the run (DSTGEN_FINAL)")
	fs.BoolVar(&c.FinalOnly, "final-only", c.FinalOnly, "issue no op: only write the final-state dump")
	fs.DurationVar(&c.FinalTimeout, "final-timeout", c.FinalTimeout, "bound on the final-state dump")
	fs.IntVar(&c.Clients, "clients", c.Clients, fmt.Sprintf("concurrent clients (1..%d)", MaxClients))
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "per-op timeout; an op that outlives it is recorded with an unknown outcome")
	fs.Int64Var(&c.MaxOps, "ops", c.MaxOps, "stop after this many ops over all clients (0: no limit)")
}

// env returns variable name's value, trimmed, when flagName was not
// given; ok is false when it was, or the variable is empty.
func (c *Config) env(flagName, name string) (string, bool) {
	if flagName != "" && c.given[flagName] {
		return "", false
	}
	v := strings.TrimSpace(c.getenv(name))
	return v, v != ""
}

// fromEnv fills every contract field whose flag was not given from its
// variable (docs/driver-contract.md §2).
func (c *Config) fromEnv() error {
	for _, s := range []struct {
		flag, name string
		dst        *string
	}{
		{"out", "DSTGEN_HISTORY", &c.History}, {"run-id", "DSTGEN_RUN_ID", &c.RunID},
		{"mode", "DSTGEN_MODE", &c.Mode}, {"scenario", "DSTGEN_SCENARIO", &c.Scenario},
		{"tier", "DSTGEN_TIER", &c.Tier}, {"final", "DSTGEN_FINAL", &c.Final},
		{"", "DSTGEN_DATASET", &c.Dataset}, {"", "DSTGEN_ARM", &c.Arm}, {"", "DSTGEN_WORKDIR", &c.Workdir},
	} {
		if v, ok := c.env(s.flag, s.name); ok {
			*s.dst = v
		}
	}
	if v, ok := c.env("seed", "DSTGEN_SEED"); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("DSTGEN_SEED=%q: want an integer", v)
		}
		c.Seed = n
	}
	if v, ok := c.env("duration", "DSTGEN_DURATION_S"); ok {
		s, err := strconv.ParseFloat(v, 64)
		if err != nil || !(s > 0) || s > float64(math.MaxInt64/time.Second) {
			return fmt.Errorf("DSTGEN_DURATION_S=%q: want a positive number of seconds", v)
		}
		c.Duration = time.Duration(s * float64(time.Second))
	}
	if v, ok := c.env("rate", "DSTGEN_RATE"); ok {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || !validRate(r) {
			return fmt.Errorf("DSTGEN_RATE=%q: want ops/s ≥ 0 (0: unthrottled)", v)
		}
		c.Rate = r
	}
	c.Shares = 1
	if v, ok := c.env("", "DSTGEN_SHARE"); ok {
		i, n, err := parseShare(v)
		if err != nil {
			return err
		}
		c.Share, c.Shares = i, n
	}
	if v, ok := c.env("", "DSTGEN_SUT_HOSTS"); ok {
		if c.SUTHosts = splitHosts(v); len(c.SUTHosts) == 0 {
			return fmt.Errorf("DSTGEN_SUT_HOSTS=%q: no endpoint in it (want comma-separated addresses)", v)
		}
	}
	return nil
}

// parseShare reads DSTGEN_SHARE: "<i>/<n>", 0 ≤ i < n ≤ 64.
func parseShare(v string) (int, int, error) {
	a, b, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || n > 64 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("DSTGEN_SHARE=%q: want <i>/<n> with 0 ≤ i < n ≤ 64", v)
	}
	return i, n, nil
}

// FirstClient is the id of this driver's first client: Share × Clients,
// so the clients of every share have ids of their own.
func (c *Config) FirstClient() int { return c.Share * c.Clients }

func validRate(r float64) bool { return r >= 0 && !math.IsInf(r, 0) && !math.IsNaN(r) }

// check refuses the values no run can have; each error names the flag.
func (c *Config) check() error {
	switch {
	case c.History == "":
		return errors.New("-out is empty: need a history file path")
	case c.Duration <= 0:
		return fmt.Errorf("-duration %v: want a positive duration", c.Duration)
	case !validRate(c.Rate):
		return fmt.Errorf("-rate %v: want ops/s ≥ 0 (0: unthrottled)", c.Rate)
	case c.Timeout <= 0 || c.Timeout > maxTimeout:
		return fmt.Errorf("-timeout %v: want a positive duration up to %v", c.Timeout, maxTimeout)
	case c.MaxOps < 0:
		return fmt.Errorf("-ops %d: want ≥ 0 (0: no limit)", c.MaxOps)
	case c.FinalTimeout <= 0:
		return fmt.Errorf("-final-timeout %v: want a positive duration", c.FinalTimeout)
	case c.FinalOnly && c.Final == "":
		return errors.New("-final-only: no dump path (-final or DSTGEN_FINAL)")
	case c.given["clients"] && (c.Clients < 1 || c.Clients > MaxClients):
		return fmt.Errorf("-clients %d: want 1..%d", c.Clients, MaxClients)
	}
	return nil
}

// splitHosts splits a comma-separated address list, dropping blanks.
func splitHosts(s string) []string {
	var out []string
	for h := range strings.SplitSeq(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}
