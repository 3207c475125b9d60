package main

import (
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// config is the driver's settings after flags and DSTGEN_* variables.
type config struct {
	out       string
	runID     string
	seed      int64
	duration  time.Duration
	rate      float64
	scenario  string
	tier      string
	endpoints []string
	clients   int
	keys      int
	timeout   time.Duration
	mix       int // % reads
	prefix    string
}

// Value layout: every written value is an integer below 2^53 (exact in
// every JSON reader): runBits from a hash of run id and seed, clientBits of
// client index, seqBits of per-client counter — unique per op in a run.
const (
	runBits    = 20
	clientBits = 8
	seqBits    = 25
	maxClients = 1 << clientBits
)

// parseConfig reads flags over the driver contract's variables
// (docs/driver-contract.md §2): a flag given wins, an empty variable is
// unset, a bad value is an error naming the flag or variable.
func parseConfig(args []string, getenv func(string) string, now time.Time, pid int) (config, error) {
	fs := flag.NewFlagSet("workload", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("out", "", "history file (DSTGEN_HISTORY; default history.jsonl)")
	runID := fs.String("run-id", "", "run id (DSTGEN_RUN_ID; default local-<UTC time>-<pid>)")
	seed := fs.Int64("seed", 0, "seed (DSTGEN_SEED; 0: a stable hash of the run id)")
	duration := fs.Duration("duration", 0, "run length (DSTGEN_DURATION_S in seconds; default 10s)")
	rate := fs.Float64("rate", -1, "target ops/s over all clients (DSTGEN_RATE; 0: unthrottled)")
	scenario := fs.String("scenario", "", "scenario id for the header (DSTGEN_SCENARIO)")
	tier := fs.String("tier", "", "tier (DSTGEN_TIER), noted in the summary")
	endpoints := fs.String("endpoints", "", "kvnode addresses host:port,... (required)")
	clients := fs.Int("clients", 0, "clients, each pinned to one endpoint (default 2 per endpoint)")
	keys := fs.Int("keys", 3, "number of keys")
	timeout := fs.Duration("timeout", time.Second, "per-op timeout")
	mix := fs.Int("mix", 50, "% of ops that are reads (0..100)")
	prefix := fs.String("prefix", "", "key prefix (default kv/<run id>)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	c := config{out: *out, runID: *runID, seed: *seed, duration: *duration, rate: *rate,
		scenario: *scenario, tier: *tier, clients: *clients, keys: *keys, timeout: *timeout, mix: *mix, prefix: *prefix}
	if !set["out"] {
		c.out = getenv("DSTGEN_HISTORY")
	}
	if c.out == "" {
		c.out = "history.jsonl"
	}
	if !set["run-id"] {
		c.runID = getenv("DSTGEN_RUN_ID")
	}
	if c.runID == "" {
		c.runID = fmt.Sprintf("local-%s-%d", now.UTC().Format("20060102_150405"), pid)
	}
	if !set["seed"] {
		if v := getenv("DSTGEN_SEED"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return config{}, fmt.Errorf("DSTGEN_SEED=%q: want an integer", v)
			}
			c.seed = n
		}
	}
	if c.seed == 0 {
		c.seed = int64(hash64("dstgen-seed\x00"+c.runID) >> 1)
	}
	if !set["duration"] {
		c.duration = 10 * time.Second
		if v := getenv("DSTGEN_DURATION_S"); v != "" {
			s, err := strconv.ParseFloat(v, 64)
			if err != nil || s <= 0 || s > 86400 {
				return config{}, fmt.Errorf("DSTGEN_DURATION_S=%q: want seconds > 0 (at most a day)", v)
			}
			c.duration = time.Duration(s * float64(time.Second))
		}
	} else if c.duration <= 0 || c.duration > 24*time.Hour {
		return config{}, fmt.Errorf("-duration %s: want > 0 and at most 24h", c.duration)
	}
	if !set["rate"] {
		c.rate = 0
		if v := getenv("DSTGEN_RATE"); v != "" {
			r, err := strconv.ParseFloat(v, 64)
			if err != nil || r < 0 {
				return config{}, fmt.Errorf("DSTGEN_RATE=%q: want ops/s ≥ 0", v)
			}
			c.rate = r
		}
	} else if c.rate < 0 {
		return config{}, fmt.Errorf("-rate %g: want ops/s ≥ 0", c.rate)
	}
	if !set["scenario"] {
		c.scenario = getenv("DSTGEN_SCENARIO")
	}
	if !set["tier"] {
		c.tier = getenv("DSTGEN_TIER")
	}
	if strings.TrimSpace(*endpoints) == "" {
		return config{}, fmt.Errorf("-endpoints: required (kvnode addresses host:port,...)")
	}
	for e := range strings.SplitSeq(*endpoints, ",") {
		e = strings.TrimSpace(strings.TrimPrefix(e, "http://"))
		if e == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(e); err != nil {
			return config{}, fmt.Errorf("-endpoints: %q: want host:port", e)
		}
		c.endpoints = append(c.endpoints, e)
	}
	if len(c.endpoints) == 0 {
		return config{}, fmt.Errorf("-endpoints %q: no address", *endpoints)
	}
	if !set["clients"] {
		c.clients = 2 * len(c.endpoints)
	}
	if c.clients < 1 || c.clients > maxClients {
		return config{}, fmt.Errorf("-clients %d: want 1..%d", c.clients, maxClients)
	}
	if c.keys < 1 || c.keys > 1<<20 {
		return config{}, fmt.Errorf("-keys %d: want 1..%d", c.keys, 1<<20)
	}
	if c.timeout <= 0 || c.timeout > time.Minute {
		return config{}, fmt.Errorf("-timeout %s: want > 0 and at most 1m", c.timeout)
	}
	if c.mix < 0 || c.mix > 100 {
		return config{}, fmt.Errorf("-mix %d: want a read share in percent, 0..100", c.mix)
	}
	if c.prefix == "" {
		c.prefix = "kv/" + c.runID
	}
	return c, nil
}

func hash64(s string) uint64 {
	sum := sha256.Sum256([]byte(s))
	return binary.BigEndian.Uint64(sum[:8])
}

// valueBase is the run's share of every value.
func valueBase(runID string, seed int64) uint64 {
	return hash64("kv-value\x00"+runID+"\x00"+strconv.FormatInt(seed, 10)) >> (64 - runBits) << (clientBits + seqBits)
}

// opValue is the value client writes with its seq-th write.
func opValue(base uint64, client, seq int) int64 {
	return int64(base | uint64(client)<<seqBits | uint64(seq)&(1<<seqBits-1))
}
