package main

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// opMix is the share of reads and writes in every 10 ops; the rest are cas.
// fresh is the fresh-puts mode: every op puts a key no op wrote before.
type opMix struct {
	name        string
	read, write int
	fresh       bool
}

// mixFor maps DSTGEN_MODE / -mode onto an op mix. Every mix keeps some
// writes and cas so reads observe values and cas exercises the compare.
func mixFor(mode string) (opMix, bool) {
	switch m := strings.ToLower(strings.TrimSpace(mode)); m {
	case "read":
		return opMix{name: m, read: 8, write: 1}, true
	case "write":
		return opMix{name: m, read: 1, write: 7}, true
	case "mixed":
		return opMix{name: m, read: 4, write: 3}, true
	case "fresh-puts":
		return opMix{name: m, write: 10, fresh: true}, true
	}
	return opMix{}, false
}

// parseMix reads -mix R/W/C: reads, writes and cas out of every 10 ops
// (S1's 50% get / 40% put / 10% cas is 5/4/1).
func parseMix(s string) (opMix, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return opMix{}, fmt.Errorf("-mix %q: want reads/writes/cas out of 10, e.g. 5/4/1", s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 0 {
			return opMix{}, fmt.Errorf("-mix %q: %q is not a count ≥ 0", s, p)
		}
		n[i] = v
	}
	if n[0]+n[1]+n[2] != 10 {
		return opMix{}, fmt.Errorf("-mix %q: the three counts sum to %d, want 10", s, n[0]+n[1]+n[2])
	}
	return opMix{name: "mix " + s, read: n[0], write: n[1]}, nil
}

// Value layout: a JSON integer below 2^53, so every JSON parser (and every
// checker) reads it exactly. The high runBits come from a hash of the run
// id and seed, then the client id, then the client's op counter, so a value
// is unique per op within a run and, with overwhelming probability, across
// runs even if two runs were pointed at the same prefix.
const (
	seqBits    = 25
	clientBits = 8
	runBits    = 53 - seqBits - clientBits
	maxClients = 1 << clientBits
	maxSeq     = 1<<seqBits - 1
)

// config is the workload's settings after flags and the DSTGEN_* contract
// are merged.
type config struct {
	endpoints []string
	clients   int
	keys      int
	duration  time.Duration
	maxOps    int64
	seed      int64
	out       string
	timeout   time.Duration
	scenario  string
	tier      string
	runID     string
	prefix    string
	rate      float64 // total ops/s across clients; 0: unlimited
	mix       opMix
	// serializable makes every read a serializable range, served from the
	// member's local state and so possibly stale: the negative control.
	serializable bool
	// final is where the final-state dump goes ("" = none); finalOnly
	// skips the workload and only dumps; finalTimeout bounds the dump,
	// the wait for the members to converge included.
	final        string
	finalOnly    bool
	finalTimeout time.Duration
}

// key is the n-th key of the run, inside its prefix.
func (c *config) key(n int) string {
	if c.prefix == "" {
		return "k" + strconv.Itoa(n)
	}
	return c.prefix + "/k" + strconv.Itoa(n)
}

// freshKey is the key of a client's seq-th op in fresh-puts mode:
// <prefix>/s2/<client>/<seq>, never written by another op of the run.
func (c *config) freshKey(client, seq int) string {
	k := "s2/" + strconv.Itoa(client) + "/" + strconv.Itoa(seq)
	if c.prefix == "" {
		return k
	}
	return c.prefix + "/" + k
}

// keyRange is the etcd range [start, end) holding every key of the run:
// the whole prefix, or the whole keyspace when the prefix is empty.
func (c *config) keyRange() (start, end string) {
	if c.prefix == "" {
		return "\x00", "\x00" // etcd: key \0 with range_end \0 is every key
	}
	// '/'+1 is '0': [prefix/, prefix0) is exactly the keys under prefix/.
	return c.prefix + "/", c.prefix + "0"
}

// hash64 is a stable 64-bit hash of s. SHA-256 rather than FNV: FNV's high
// bits barely move when only the last bytes differ (seed 1 vs 2), and
// valueBase keeps exactly the high bits.
func hash64(s string) uint64 {
	sum := sha256.Sum256([]byte(s))
	return binary.BigEndian.Uint64(sum[:8])
}

// valueBase is the run's share of every value: the top runBits of a hash of
// run id and seed.
func valueBase(runID string, seed int64) uint64 {
	return hash64("dstgen-value\x00"+runID+"\x00"+strconv.FormatInt(seed, 10)) >> (64 - runBits) << (clientBits + seqBits)
}

// opValue is the value a client writes with its seq-th op.
func opValue(base uint64, client, seq int) uint64 {
	return base | uint64(client)<<seqBits | uint64(seq)
}

// deriveSeed is the seed of a run that was given none: a stable hash of the
// run id, non-zero and below 2^53 so the history header carries it exactly.
func deriveSeed(runID string) int64 {
	s := int64(hash64("dstgen-seed\x00"+runID) & (1<<53 - 1))
	if s == 0 {
		s = 1
	}
	return s
}

// endpointsFromHosts turns DSTGEN_SUT_HOSTS addresses into client URLs on
// port: an address that already has a scheme is kept; a port on an address
// (an SSH port, say) is replaced by the client port.
func endpointsFromHosts(hosts string, port int) []string {
	var eps []string
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		switch {
		case h == "":
			continue
		case strings.Contains(h, "://"):
			eps = append(eps, strings.TrimRight(h, "/"))
			continue
		}
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		eps = append(eps, "http://"+net.JoinHostPort(h, strconv.Itoa(port)))
	}
	return eps
}

// normalizeEndpoint gives a bare host:port the http scheme the gateway
// speaks, so "-endpoints 127.0.0.1:2379" works as written.
func normalizeEndpoint(e string) string {
	if !strings.Contains(e, "://") {
		e = "http://" + e
	}
	return strings.TrimRight(e, "/")
}

// configFrom merges flags (args) over the DSTGEN_* environment (getenv)
// over the defaults. Notes about ignored input go to notes. The error is a
// one-line reason naming the flag or variable at fault.
func configFrom(args []string, getenv func(string) string, notes io.Writer) (config, error) {
	var cfg config
	var endpoints, mode, mixSpec, consistency string
	var clientPort int
	fs := flag.NewFlagSet("workload", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // a bad flag is one line from realMain, not the usage
	fs.StringVar(&endpoints, "endpoints", "http://127.0.0.1:2379", "comma-separated etcd client URLs (default from DSTGEN_SUT_HOSTS when set)")
	fs.IntVar(&clientPort, "client-port", 2379, "etcd client port for the DSTGEN_SUT_HOSTS addresses")
	fs.IntVar(&cfg.clients, "clients", 4, fmt.Sprintf("concurrent clients (1..%d)", maxClients))
	fs.IntVar(&cfg.keys, "keys", 5, "number of keys (env DSTGEN_DATASET when an integer)")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long to run (env DSTGEN_DURATION_S, in seconds)")
	fs.Int64Var(&cfg.maxOps, "ops", 0, "stop after this many ops (0: no limit)")
	fs.Int64Var(&cfg.seed, "seed", 0, "random seed; 0: derived from the run id (env DSTGEN_SEED)")
	fs.StringVar(&cfg.out, "out", "history.jsonl", "history file to write (env DSTGEN_HISTORY)")
	fs.DurationVar(&cfg.timeout, "timeout", time.Second, "per-op timeout; an op that outlives it is recorded as timed out")
	fs.StringVar(&cfg.scenario, "scenario", "", "scenario id for the history header (env DSTGEN_SCENARIO)")
	fs.StringVar(&cfg.tier, "tier", "", "tier for the history header (env DSTGEN_TIER)")
	fs.StringVar(&cfg.runID, "run-id", "", "run id (env DSTGEN_RUN_ID; default local-<UTC time>-<pid>)")
	fs.StringVar(&cfg.prefix, "prefix", "", "key prefix; keys are <prefix>/k<n> (default dstgen/<run id>; empty when given: bare k<n>)")
	fs.Float64Var(&cfg.rate, "rate", 0, "target ops/s across all clients; 0: as fast as the clients go (env DSTGEN_RATE)")
	fs.StringVar(&mode, "mode", "mixed", "op mix: read (mostly reads), write (mostly writes), mixed, or fresh-puts (every op puts a new key; env DSTGEN_MODE)")
	fs.StringVar(&mixSpec, "mix", "", "reads/writes/cas out of every 10 ops (e.g. 5/4/1); wins over the mode's mix")
	fs.StringVar(&consistency, "consistency", "l", "reads: l (linearizable) or s (serializable: local, possibly stale; the negative control)")
	fs.StringVar(&cfg.final, "final", "", "write the final-state dump (every member's range of the prefix) here when the run ends (env DSTGEN_FINAL)")
	fs.BoolVar(&cfg.finalOnly, "final-only", false, "run no workload: only write the final-state dump of the run's prefix")
	fs.DurationVar(&cfg.finalTimeout, "final-timeout", 20*time.Second, "bound on the final-state dump, the wait for the members to converge included")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(notes)
			fmt.Fprintln(notes, "usage: workload [flags]; every flag not given falls back to its DSTGEN_* variable")
			fs.PrintDefaults()
		}
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q (the workload takes flags only)", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	// env returns the variable's value when the flag was not given.
	env := func(flagName, name string) (string, bool) {
		if given[flagName] {
			return "", false
		}
		v := strings.TrimSpace(getenv(name))
		return v, v != ""
	}

	if v, ok := env("out", "DSTGEN_HISTORY"); ok {
		cfg.out = v
	}
	if v, ok := env("run-id", "DSTGEN_RUN_ID"); ok {
		cfg.runID = v
	}
	if v, ok := env("scenario", "DSTGEN_SCENARIO"); ok {
		cfg.scenario = v
	}
	if v, ok := env("tier", "DSTGEN_TIER"); ok {
		cfg.tier = v
	}
	if v, ok := env("seed", "DSTGEN_SEED"); ok {
		s, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return cfg, fmt.Errorf("DSTGEN_SEED=%q: not an integer", v)
		}
		cfg.seed = s
	}
	if v, ok := env("duration", "DSTGEN_DURATION_S"); ok {
		d, err := strconv.ParseFloat(v, 64)
		if err != nil || !(d > 0) || d > float64(math.MaxInt64/time.Second) {
			return cfg, fmt.Errorf("DSTGEN_DURATION_S=%q: want a positive number of seconds", v)
		}
		cfg.duration = time.Duration(d * float64(time.Second))
	}
	if v, ok := env("rate", "DSTGEN_RATE"); ok {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r < 0 || math.IsInf(r, 0) || math.IsNaN(r) {
			return cfg, fmt.Errorf("DSTGEN_RATE=%q: want ops/s ≥ 0 (0: unlimited)", v)
		}
		cfg.rate = r
	}
	modeSrc := "-mode"
	if v, ok := env("mode", "DSTGEN_MODE"); ok {
		mode, modeSrc = v, "DSTGEN_MODE"
	}
	mix, ok := mixFor(mode)
	if !ok {
		return cfg, fmt.Errorf("%s %q: unknown mode (want read, write, mixed or fresh-puts)", modeSrc, mode)
	}
	var err error
	cfg.mix = mix
	if given["mix"] {
		if mix.fresh {
			return cfg, fmt.Errorf("-mix %q: does not apply to %s fresh-puts (every op is a put)", mixSpec, modeSrc)
		}
		if cfg.mix, err = parseMix(mixSpec); err != nil {
			return cfg, err
		}
	}
	switch strings.ToLower(strings.TrimSpace(consistency)) {
	case "l", "linearizable":
	case "s", "serializable":
		cfg.serializable = true
	default:
		return cfg, fmt.Errorf("-consistency %q: want l (linearizable) or s (serializable)", consistency)
	}
	if v, ok := env("final", "DSTGEN_FINAL"); ok {
		cfg.final = v
	}
	if v, ok := env("keys", "DSTGEN_DATASET"); ok {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			fmt.Fprintf(notes, "workload: note: DSTGEN_DATASET=%q is not an integer; ignored, using %d keys\n", v, cfg.keys)
		case n < 1:
			return cfg, fmt.Errorf("DSTGEN_DATASET=%q: want a positive number of keys", v)
		default:
			cfg.keys = n
		}
	}
	if given["endpoints"] {
		for _, e := range strings.Split(endpoints, ",") {
			if e = strings.TrimSpace(e); e != "" {
				cfg.endpoints = append(cfg.endpoints, normalizeEndpoint(e))
			}
		}
	} else if v, ok := env("endpoints", "DSTGEN_SUT_HOSTS"); ok {
		if clientPort < 1 || clientPort > 65535 {
			return cfg, fmt.Errorf("-client-port %d: want 1..65535", clientPort)
		}
		cfg.endpoints = endpointsFromHosts(v, clientPort)
	} else {
		cfg.endpoints = []string{normalizeEndpoint(endpoints)}
	}

	if len(cfg.endpoints) > 0 && cfg.clients < len(cfg.endpoints) {
		if !given["clients"] {
			// Each client is pinned to one endpoint: with fewer clients
			// than endpoints some member would serve nobody, and a stale
			// read there would go unseen.
			cfg.clients = len(cfg.endpoints)
		} else {
			fmt.Fprintf(notes, "workload: note: -clients %d < %d endpoints: %s get no client\n",
				cfg.clients, len(cfg.endpoints), strings.Join(cfg.endpoints[cfg.clients:], ","))
		}
	}

	switch {
	case len(cfg.endpoints) == 0:
		return cfg, errors.New("no endpoint: -endpoints or DSTGEN_SUT_HOSTS lists none")
	case cfg.finalOnly && cfg.final == "":
		return cfg, errors.New("-final-only: no dump path (-final or DSTGEN_FINAL)")
	case cfg.finalTimeout <= 0:
		return cfg, fmt.Errorf("-final-timeout %v: want a positive duration", cfg.finalTimeout)
	case cfg.clients < 1 || cfg.clients > maxClients:
		return cfg, fmt.Errorf("-clients %d: want 1..%d", cfg.clients, maxClients)
	case cfg.keys < 1:
		return cfg, fmt.Errorf("-keys %d: want at least 1", cfg.keys)
	case cfg.duration <= 0:
		return cfg, fmt.Errorf("-duration %v: want a positive duration", cfg.duration)
	case cfg.timeout <= 0:
		return cfg, fmt.Errorf("-timeout %v: want a positive duration", cfg.timeout)
	case cfg.rate < 0 || math.IsInf(cfg.rate, 0) || math.IsNaN(cfg.rate):
		return cfg, fmt.Errorf("-rate %v: want ops/s ≥ 0 (0: unlimited)", cfg.rate)
	case cfg.maxOps < 0:
		return cfg, fmt.Errorf("-ops %d: want ≥ 0 (0: no limit)", cfg.maxOps)
	case cfg.out == "":
		return cfg, errors.New("-out is empty: need a history file path")
	}

	if cfg.runID == "" {
		// Not run by dstgen: still never share a run id (and so a key
		// prefix and a seed) with an earlier run.
		cfg.runID = fmt.Sprintf("local-%s-%d", time.Now().UTC().Format("20060102_150405"), os.Getpid())
		fmt.Fprintf(notes, "workload: note: no DSTGEN_RUN_ID or -run-id; using run id %s\n", cfg.runID)
	}
	if cfg.seed == 0 {
		cfg.seed = deriveSeed(cfg.runID)
	}
	if given["prefix"] {
		cfg.prefix = strings.TrimRight(cfg.prefix, "/")
	} else {
		cfg.prefix = "dstgen/" + cfg.runID
	}
	return cfg, nil
}
