// Command workload is a dstgen workload driver (`dstgen help
// driver-contract` §8). The driver package reads the DSTGEN_* variables
// dstgen sets (each also a flag: -out, -rate, -duration, -clients,
// -timeout, …), paces ops at DSTGEN_RATE, bounds each by -timeout, records
// the history to DSTGEN_HISTORY, continues a client as a new process after
// an unknown outcome, and stops on the duration or SIGTERM. What is left
// is yours: the calls to the system under test, marked TODO (until they
// are filled in, every op fails as not-implemented).
//
// Try it by hand against one host:
//
//	go build -o workload . && DSTGEN_SUT_HOSTS=127.0.0.1 ./workload -port PORT -duration 5s -out history.jsonl
//	dstgen check --model kv history.jsonl
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"syscall"

	"github.com/dstgen/dstgen/driver"
	"github.com/redis/go-redis/v9"
)

func main() { driver.Main(&workload{}) }

// workload is the driver: its own flags beside the contract's, and its
// clients.
type workload struct {
	cfg       *driver.Config
	port      int
	keys      int
	endpoints []string
	readFrom  string                   // primary | replica
	conns     map[string]*redis.Client // one per endpoint
}

// Flags registers the driver's own flags.
func (w *workload) Flags(fs *flag.FlagSet, cfg *driver.Config) {
	cfg.Name = "workload"
	fs.IntVar(&w.port, "port", 6379, "the SUT's client port on the DSTGEN_SUT_HOSTS addresses")
	fs.IntVar(&w.keys, "keys", 5, "number of keys")
	fs.StringVar(&w.readFrom, "read-from", "primary", "primary (the first SUT host) or replica (the others) serves reads; writes go to the primary")
	f := false
	cfg.HidesRetries = &f // MaxRetries -1: go-redis never resends
}

// Setup checks the flags and makes what the clients share: one endpoint
// per SUT host.
func (w *workload) Setup(cfg *driver.Config) error {
	switch {
	case w.port < 1 || w.port > 65535:
		return fmt.Errorf("-port %d: want the SUT's client port, 1..65535", w.port)
	case w.keys < 1:
		return fmt.Errorf("-keys %d: want at least 1", w.keys)
	case len(cfg.SUTHosts) == 0:
		return errors.New("DSTGEN_SUT_HOSTS is empty: no SUT host to talk to")
	case w.readFrom != "primary" && (w.readFrom != "replica" || len(cfg.SUTHosts) < 2):
		return fmt.Errorf("-read-from %q: want primary, or replica with 2+ SUT hosts", w.readFrom)
	}
	for _, h := range cfg.SUTHosts {
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host // an address with a port (SSH's, say): the SUT's port instead
		}
		w.endpoints = append(w.endpoints, net.JoinHostPort(h, strconv.Itoa(w.port)))
	}
	w.cfg = cfg
	w.conns = map[string]*redis.Client{}
	for _, e := range w.endpoints {
		w.conns[e] = redis.NewClient(&redis.Options{Addr: e, MaxRetries: -1, ContextTimeoutEnabled: true, PoolSize: 64})
	}
	return nil
}

// Client is logical client i, pinned to one endpoint so that node_seen
// names the node each op went to.
func (w *workload) Client(i int) driver.Client {
	read := w.endpoints[0]
	if w.readFrom == "replica" {
		read = w.endpoints[1+i%(len(w.endpoints)-1)]
	}
	return &client{w: w, id: i, endpoint: w.endpoints[0], readAt: read,
		rng: rand.New(rand.NewPCG(uint64(w.cfg.Seed), uint64(i)))}
}

// client is one logical client.
type client struct {
	w        *workload
	id, seq  int
	endpoint string // writes: the primary
	readAt   string // reads: the primary or one replica
	rng      *rand.Rand
}

// Next picks the client's next op: reads and writes of the run's keys
// (Key namespaces them with the run id), each write a value no other op
// of the run writes, so a read names the write it saw.
func (c *client) Next() (driver.Op, bool) {
	key := c.w.cfg.Key("k" + strconv.Itoa(c.rng.IntN(c.w.keys)))
	if c.w.cfg.Mode == "fresh-puts" {
		c.seq++
		key = c.w.cfg.Key(fmt.Sprintf("f%d-%d", c.id, c.seq))
		return driver.Op{Type: "write", Key: key, Input: c.id<<32 | c.seq, Node: c.endpoint}, true
	}
	if c.rng.IntN(2) == 0 {
		return driver.Op{Type: "read", Key: key, Node: c.readAt}, true
	}
	c.seq++
	return driver.Op{Type: "write", Key: key, Input: c.id<<32 | c.seq, Node: c.endpoint}, true
}

// Do sends op to c.endpoint within ctx (the per-op timeout) and returns
// the value of a read (nil for a missing key, or for a write). Return
// driver.Fail("code") when the op surely did not take effect (the
// connection was refused); any other error is an unknown outcome (a
// timeout, a reset: it may have taken effect), after which the client
// goes on as a new process.
func (c *client) Do(ctx context.Context, op driver.Op) (any, error) {
	switch op.Type {
	case "read":
		v, err := c.w.conns[op.Node].Get(ctx, op.Key).Int64()
		if errors.Is(err, redis.Nil) {
			return nil, nil
		}
		return v, classify(err)
	case "write":
		return nil, classify(c.w.conns[op.Node].Set(ctx, op.Key, op.Input, 0).Err())
	}
	return nil, driver.Fail("unknown-op")
}

// classify: a refused connection or an error reply never took effect;
// anything else (a timeout, a reset) may have.
func classify(err error) error {
	var rerr redis.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ECONNREFUSED):
		return driver.Fail("conn-refused")
	case errors.As(err, &rerr):
		return driver.Fail("redis-error")
	}
	return err
}

// WriteFinal dumps every key of the run from every SUT host:
// {"keys": the primary's, "replicas": {endpoint: its keys}}.
func (w *workload) WriteFinal(ctx context.Context) error {
	f := map[string]any{"replicas": map[string]any{}}
	for i, e := range w.endpoints {
		keys, err := w.conns[e].Keys(ctx, w.cfg.Prefix+"/*").Result()
		if err != nil {
			return fmt.Errorf("%s: %w", e, err)
		}
		m := map[string]int64{}
		for _, k := range keys {
			if m[k], err = w.conns[e].Get(ctx, k).Int64(); err != nil {
				return fmt.Errorf("%s %s: %w", e, k, err)
			}
		}
		if i == 0 {
			f["keys"] = m
		}
		f["replicas"].(map[string]any)[e] = m
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return os.WriteFile(w.cfg.Final, b, 0o644)
}
