package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/dstgen/dstgen/driver"
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

// config is the driver: the contract's settings (driver.Config) and
// etcd's own, and the Workload the driver package runs.
type config struct {
	driver.Config
	endpoints []string
	keys      int
	mix       opMix
	// serializable makes every read a serializable range, served from the
	// member's local state and so possibly stale: the negative control.
	serializable bool

	// The raw flags Setup reads.
	endpointsFlag, mixFlag, consistency string
	clientPort                          int

	hc   *http.Client
	base uint64 // the run's bits of every value
}

// Flags registers etcd's flags and the defaults it changes.
func (c *config) Flags(fs *flag.FlagSet, d *driver.Config) {
	d.Name, d.Clients, d.Mode = "workload", 4, "mixed"
	// Every request is a POST to etcd's gateway, which net/http never
	// sends twice on its own: each attempt etcd saw is an op here.
	d.HidesRetries = new(false)
	fs.StringVar(&c.endpointsFlag, "endpoints", "http://127.0.0.1:2379", "comma-separated etcd client URLs (default from DSTGEN_SUT_HOSTS when set)")
	fs.IntVar(&c.clientPort, "client-port", 2379, "etcd client port for the DSTGEN_SUT_HOSTS addresses")
	fs.IntVar(&c.keys, "keys", 5, "number of keys (DSTGEN_DATASET when an integer)")
	fs.StringVar(&c.mixFlag, "mix", "", "reads/writes/cas out of every 10 ops (e.g. 5/4/1); wins over the mode's mix")
	fs.StringVar(&c.consistency, "consistency", "l", "reads: l (linearizable) or s (serializable: local, possibly stale; the negative control)")
}

// Setup turns the flags into the run's settings; each error names the
// flag or variable at fault.
func (c *config) Setup(d *driver.Config) error {
	modeSrc := "-mode"
	if !d.Given("mode") {
		modeSrc = "DSTGEN_MODE" // the default, mixed, is always known
	}
	mix, ok := mixFor(d.Mode)
	if !ok {
		return fmt.Errorf("%s %q: unknown mode (want read, write, mixed or fresh-puts)", modeSrc, d.Mode)
	}
	c.mix = mix
	if d.Given("mix") {
		if mix.fresh {
			return fmt.Errorf("-mix %q: does not apply to %s fresh-puts (every op is a put)", c.mixFlag, modeSrc)
		}
		var err error
		if c.mix, err = parseMix(c.mixFlag); err != nil {
			return err
		}
	}
	switch strings.ToLower(strings.TrimSpace(c.consistency)) {
	case "l", "linearizable":
	case "s", "serializable":
		c.serializable = true
	default:
		return fmt.Errorf("-consistency %q: want l (linearizable) or s (serializable)", c.consistency)
	}
	if v := d.Dataset; v != "" && !d.Given("keys") {
		switch n, err := strconv.Atoi(v); {
		case err != nil:
			d.Logf("note: DSTGEN_DATASET=%q is not an integer; ignored, using %d keys", v, c.keys)
		case n < 1:
			return fmt.Errorf("DSTGEN_DATASET=%q: want a positive number of keys", v)
		default:
			c.keys = n
		}
	}
	switch {
	case d.Given("endpoints"):
		for e := range strings.SplitSeq(c.endpointsFlag, ",") {
			if e = strings.TrimSpace(e); e != "" {
				c.endpoints = append(c.endpoints, normalizeEndpoint(e))
			}
		}
	case len(d.SUTHosts) > 0:
		if c.clientPort < 1 || c.clientPort > 65535 {
			return fmt.Errorf("-client-port %d: want 1..65535", c.clientPort)
		}
		c.endpoints = endpointsFromHosts(d.SUTHosts, c.clientPort)
	default:
		c.endpoints = []string{normalizeEndpoint(c.endpointsFlag)}
	}
	if len(c.endpoints) > 0 && d.Clients < len(c.endpoints) {
		if !d.Given("clients") {
			// Each client is pinned to one endpoint: with fewer clients
			// than endpoints some member would serve nobody, and a stale
			// read there would go unseen.
			d.Clients = len(c.endpoints)
		} else {
			d.Logf("note: -clients %d < %d endpoints: %s get no client",
				d.Clients, len(c.endpoints), strings.Join(c.endpoints[d.Clients:], ","))
		}
	}
	switch {
	case len(c.endpoints) == 0:
		return errors.New("no endpoint: -endpoints lists none")
	case d.Clients < 1 || d.Clients > maxClients:
		return fmt.Errorf("-clients %d: want 1..%d", d.Clients, maxClients)
	case c.keys < 1:
		return fmt.Errorf("-keys %d: want at least 1", c.keys)
	}
	c.Config = *d
	c.prepare()
	return nil
}

// prepare makes what the clients share: the HTTP client and the run's
// value bits.
func (c *config) prepare() {
	if c.mix.name == "" {
		c.mix, _ = mixFor("mixed")
	}
	c.hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c.Clients}}
	c.base = valueBase(c.RunID, c.Seed)
}

// Client is logical client i, pinned to endpoint i mod n.
func (c *config) Client(i int) driver.Client {
	return &client{hc: c.hc, endpoint: c.endpoints[i%len(c.endpoints)], cfg: c,
		rng: rand.New(rand.NewPCG(uint64(c.Seed), uint64(i))), id: i,
		seen: map[string]json.RawMessage{}, serializable: c.serializable}
}

// Close drops the idle connections.
func (c *config) Close() error {
	if c.hc != nil {
		c.hc.CloseIdleConnections()
	}
	return nil
}

// key is the n-th key of the run, inside its prefix.
func (c *config) key(n int) string { return c.Key("k" + strconv.Itoa(n)) }

// freshKey is the key of a client's seq-th op in fresh-puts mode:
// <prefix>/s2/<client>/<seq>, never written by another op of the run.
func (c *config) freshKey(client, seq int) string {
	return c.Key("s2/" + strconv.Itoa(client) + "/" + strconv.Itoa(seq))
}

// keyRange is the etcd range [start, end) holding every key of the run:
// the whole prefix, or the whole keyspace when the prefix is empty.
func (c *config) keyRange() (start, end string) {
	if c.Prefix == "" {
		return "\x00", "\x00" // etcd: key \0 with range_end \0 is every key
	}
	// '/'+1 is '0': [prefix/, prefix0) is exactly the keys under prefix/.
	return c.Prefix + "/", c.Prefix + "0"
}

// valueBase is the run's share of every value: the top runBits of a
// SHA-256 of run id and seed (SHA rather than FNV, whose high bits barely
// move when only the seed's last digit does).
func valueBase(runID string, seed int64) uint64 {
	sum := sha256.Sum256([]byte("dstgen-value\x00" + runID + "\x00" + strconv.FormatInt(seed, 10)))
	return binary.BigEndian.Uint64(sum[:8]) >> (64 - runBits) << (clientBits + seqBits)
}

// opValue is the value a client writes with its seq-th op.
func opValue(base uint64, client, seq int) uint64 {
	return base | uint64(client)<<seqBits | uint64(seq)
}

// endpointsFromHosts turns DSTGEN_SUT_HOSTS addresses into client URLs on
// port: an address that already has a scheme is kept; a port on an address
// (an SSH port, say) is replaced by the client port.
func endpointsFromHosts(hosts []string, port int) []string {
	var eps []string
	for _, h := range hosts {
		if strings.Contains(h, "://") {
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
