package main

import (
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/driver"
)

// config is the driver: the contract's settings (driver.Config), the
// kvnode flags, and the Workload the driver package runs.
type config struct {
	driver.Config
	endpoints []string
	keys      int
	mix       int // % reads

	endpointsFlag string
	port          int
	hc            *http.Client
	base          uint64
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

// failPause is how long a client waits after an op that did not succeed:
// a node that cannot serve answers at once, and an unthrottled client
// would fill the history with failures.
const failPause = 20 * time.Millisecond

// Flags registers the kvnode flags and the defaults kv changes.
func (c *config) Flags(fs *flag.FlagSet, d *driver.Config) {
	d.Name, d.Prefix, d.FailPause, d.Clients = "workload", "kv", failPause, 0 // 0: two per endpoint
	fs.StringVar(&c.endpointsFlag, "endpoints", "", "kvnode addresses host:port,... (default: DSTGEN_SUT_HOSTS, each on -port)")
	fs.IntVar(&c.port, "port", 17001, "kvnode client port of the DSTGEN_SUT_HOSTS addresses (without -endpoints)")
	fs.IntVar(&c.keys, "keys", 3, "number of keys")
	fs.IntVar(&c.mix, "mix", 50, "% of ops that are reads (0..100)")
}

// Setup checks the kvnode flags; each error names its flag.
func (c *config) Setup(d *driver.Config) error {
	if strings.TrimSpace(c.endpointsFlag) == "" {
		// The driver contract's SUT hosts (docs/driver-contract.md): a
		// scenario run names no address of its own.
		var eps []string
		for _, h := range d.SUTHosts {
			eps = append(eps, net.JoinHostPort(h, strconv.Itoa(c.port)))
		}
		if len(eps) == 0 {
			return fmt.Errorf("-endpoints: required (kvnode addresses host:port,...), or DSTGEN_SUT_HOSTS")
		}
		c.endpointsFlag = strings.Join(eps, ",")
	}
	for e := range strings.SplitSeq(c.endpointsFlag, ",") {
		e = strings.TrimSpace(strings.TrimPrefix(e, "http://"))
		if e == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(e); err != nil {
			return fmt.Errorf("-endpoints: %q: want host:port", e)
		}
		c.endpoints = append(c.endpoints, e)
	}
	if len(c.endpoints) == 0 {
		return fmt.Errorf("-endpoints %q: no address", c.endpointsFlag)
	}
	if !d.Given("clients") {
		d.Clients = 2 * len(c.endpoints)
	}
	switch {
	case d.Clients < 1 || d.Clients > maxClients:
		return fmt.Errorf("-clients %d: want 1..%d", d.Clients, maxClients)
	case c.keys < 1 || c.keys > 1<<20:
		return fmt.Errorf("-keys %d: want 1..%d", c.keys, 1<<20)
	case c.mix < 0 || c.mix > 100:
		return fmt.Errorf("-mix %d: want a read share in percent, 0..100", c.mix)
	}
	c.Config = *d
	c.hc = &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: d.Timeout}).DialContext,
		MaxIdleConnsPerHost: maxClients,
		IdleConnTimeout:     30 * time.Second,
	}}
	c.base = valueBase(d.RunID, d.Seed)
	return nil
}

// Client is logical client i, pinned to endpoint i mod n.
func (c *config) Client(i int) driver.Client {
	return &client{idx: i, cfg: c, endpoint: c.endpoints[i%len(c.endpoints)],
		rng: rand.New(rand.NewPCG(uint64(c.Seed), uint64(i)))}
}

// Close drops the idle connections.
func (c *config) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// valueBase is the run's share of every value.
func valueBase(runID string, seed int64) uint64 {
	sum := sha256.Sum256([]byte("kv-value\x00" + runID + "\x00" + strconv.FormatInt(seed, 10)))
	return binary.BigEndian.Uint64(sum[:8]) >> (64 - runBits) << (clientBits + seqBits)
}

// opValue is the value client writes with its seq-th write.
func opValue(base uint64, client, seq int) int64 {
	return int64(base | uint64(client)<<seqBits | uint64(seq)&(1<<seqBits-1))
}
