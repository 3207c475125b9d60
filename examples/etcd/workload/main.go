// Command workload drives a read/write/cas workload against etcd and
// records every operation as a dst-history/1 JSON Lines file for
// `dstgen check --model kv`.
//
// It speaks etcd v3's JSON gRPC gateway over plain HTTP (POST /v3/kv/put,
// /v3/kv/range, /v3/kv/txn with base64 keys and values), so it needs no
// etcd client library and runs against any etcd 3.4+. A cas is a txn
// comparing the key's value. Every op is recorded: a response is ok, a
// refused connection is a failure (the request never left), and anything
// else without a definite answer — timeouts, resets, server errors — is a
// timeout (may or may not have taken effect). After such an op the client
// continues as a new process, as docs/history-and-checkers.md §2 requires
// of a reconnect (docs/driver-contract.md §3.2).
//
// # Settings: flags over the DSTGEN_* contract
//
// dstgen's runner passes a language-neutral contract as environment
// variables to every workload and benchmark command; the driver package
// (github.com/dstgen/dstgen/driver) reads them, paces, times out, records
// and stops, so this file holds only etcd's client calls. A flag, when
// given, wins over its variable; an empty variable counts as unset.
//
//	flag          variable            meaning
//	-out          DSTGEN_HISTORY      history file to write (default history.jsonl)
//	-run-id       DSTGEN_RUN_ID       run id; default local-<UTC time>-<pid>
//	-seed         DSTGEN_SEED         random seed; 0 or unset: a stable hash of the run id
//	-duration     DSTGEN_DURATION_S   how long to run (flag: Go duration; variable: seconds); default 10s
//	-rate         DSTGEN_RATE         target ops/s over all clients; 0 or unset: as fast as the clients go
//	-mode         DSTGEN_MODE         read (8 reads, 1 write, 1 cas in 10), write (1/7/2), mixed (4/3/3, the default); else exit 2
//	-keys         DSTGEN_DATASET      number of keys (default 5); a non-integer dataset is ignored with a note
//	-scenario     DSTGEN_SCENARIO     scenario id, in the history header
//	-tier         DSTGEN_TIER         tier, in the history header (_meta.tier)
//	-endpoints    DSTGEN_SUT_HOSTS    client URLs; from the hosts: http://<addr>:<-client-port> each
//	-client-port                      etcd client port for DSTGEN_SUT_HOSTS (default 2379)
//	-prefix                           key prefix (default dstgen/<run id>)
//	-clients, -ops, -timeout          concurrency (1..256, at least one per endpoint unless given), op budget, per-op timeout
//	-mix          (-mode's)           reads/puts/cas out of every 10 ops, e.g. 5/4/1
//	-consistency                      reads: l linearizable (default) or s serializable (local, possibly stale)
//	-final        DSTGEN_FINAL        after the run, dump every member's range of the prefix (final.json)
//	-final-only, -final-timeout       only the dump, no ops; the dump's bound (default 20s)
//
// # Scenario modes
//
// -mode fresh-puts (DSTGEN_MODE=fresh-puts) makes every op a put of a key
// no op wrote before, <prefix>/s2/<client>/<seq>, for the no-lost-ack
// check. -consistency s is the negative control: a serializable read is
// answered from the member's own state without a quorum check, so a member
// cut off from the majority returns values the majority has overwritten,
// which the linearizability checker must catch. The final-state dump reads
// the whole prefix from every member with serializable ranges, paged at one
// revision, once the members report the same revision (or half the bound
// has passed); keys holds a key only when every member that answered has it
// with the same value, replicas each member's own range, keyed by client URL.
//
// DSTGEN_HOSTS_<ROLE> (the hosts of each role) is part of the contract but
// unused here: the SUT hosts are the etcd members.
//
// # Keys and values never collide across runs
//
// Every key is <prefix>/k<n>, so a run never reads what an earlier run left
// behind on the same cluster (a stale value would be a false
// linearizability violation). Every value is a JSON integer below 2^53:
// 20 bits from a hash of run id and seed, 8 bits of client id and a 25-bit
// per-client counter, so values are unique per op within a run and differ
// across runs even under one prefix. The header records the run id
// (_meta.run_id) next to the seed; readers ignore _meta fields they do not
// know. The closing summary line on stderr repeats run_id, seed and prefix;
// the line on stdout is the one dstgen reads (docs/driver-contract.md §3.4).
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"syscall"

	"github.com/dstgen/dstgen/driver"
)

func main() { driver.Main(&config{}) }

// client is one logical client pinned to one member.
type client struct {
	hc       *http.Client
	endpoint string
	cfg      *config
	rng      *rand.Rand
	id, seq  int
	seen     map[string]json.RawMessage // last value this client saw per key, for cas
	// serializable: reads skip the quorum check (-consistency s).
	serializable bool
}

// Next picks the client's next op from its mix. A cas needs a value this
// client saw on its key; without one it is a write.
func (c *client) Next() (driver.Op, bool) {
	if c.seq >= maxSeq {
		return driver.Op{}, false // the most ops whose values stay unique
	}
	key := c.cfg.key(c.rng.IntN(c.cfg.keys))
	c.seq++
	if c.cfg.mix.fresh {
		key = c.cfg.freshKey(c.id, c.seq)
	}
	val := json.RawMessage(strconv.FormatUint(opValue(c.cfg.base, c.id, c.seq), 10)) // unique per op
	op := driver.Op{Type: "write", Key: key, Input: val, Node: c.endpoint}
	switch r := c.rng.IntN(10); {
	case c.cfg.mix.fresh:
	case r < c.cfg.mix.read:
		op.Type, op.Input = "read", nil
	case r < c.cfg.mix.read+c.cfg.mix.write || c.seen[key] == nil:
	default:
		op.Type, op.Input = "cas", []json.RawMessage{c.seen[key], val}
	}
	return op, true
}

// Do sends op through the gateway. A refused connection is a definite
// failure (the request never left); a timeout, a reset or a server error
// is an unknown outcome.
func (c *client) Do(ctx context.Context, op driver.Op) (any, error) {
	switch op.Type {
	case "read":
		v, err := c.get(ctx, op.Key)
		if err == nil {
			c.seen[op.Key] = v
		}
		return v, err
	case "cas":
		in := op.Input.([]json.RawMessage)
		swapped, err := c.cas(ctx, op.Key, in[0], in[1])
		if err == nil && swapped {
			c.seen[op.Key] = in[1]
		}
		return swapped, err
	}
	val := op.Input.(json.RawMessage)
	err := c.put(ctx, op.Key, val)
	if err == nil && !c.cfg.mix.fresh {
		c.seen[op.Key] = val
	}
	return nil, err
}

func b64(s []byte) string { return base64.StdEncoding.EncodeToString(s) }

// call posts body to the gateway path and decodes the reply into out.
func (c *client) call(ctx context.Context, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return driver.Fail("encode")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint+path, bytes.NewReader(b))
	if err != nil {
		return driver.Fail("bad-endpoint")
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return driver.Fail("conn-refused") // never sent
		}
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		// etcd reports e.g. "request timed out" or "leader changed" this
		// way; whether a write applied is unknown.
		return fmt.Errorf("http %d: %.200s", resp.StatusCode, data)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode %s reply: %w", path, err)
	}
	return nil
}

func (c *client) put(ctx context.Context, key string, val json.RawMessage) error {
	return c.call(ctx, "/v3/kv/put", map[string]string{"key": b64([]byte(key)), "value": b64(val)}, nil)
}

// rangeBody is the gateway's RangeRequest for one key. serializable asks
// the member to answer from its local state without confirming with a
// quorum (clientv3.WithSerializable()), which is what can be stale.
func rangeBody(key string, serializable bool) map[string]any {
	body := map[string]any{"key": b64([]byte(key))}
	if serializable {
		body["serializable"] = true
	}
	return body
}

func (c *client) get(ctx context.Context, key string) (json.RawMessage, error) {
	var out struct {
		Kvs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := c.call(ctx, "/v3/kv/range", rangeBody(key, c.serializable), &out); err != nil {
		return nil, err
	}
	if len(out.Kvs) == 0 {
		return nil, nil
	}
	v, err := base64.StdEncoding.DecodeString(out.Kvs[0].Value)
	if err != nil || !json.Valid(v) {
		return nil, fmt.Errorf("range %s: value is not what this workload writes", key)
	}
	return v, nil
}

func (c *client) cas(ctx context.Context, key string, expected, val json.RawMessage) (bool, error) {
	k := b64([]byte(key))
	body := map[string]any{
		"compare": []map[string]string{{"key": k, "target": "VALUE", "result": "EQUAL", "value": b64(expected)}},
		"success": []map[string]any{{"requestPut": map[string]string{"key": k, "value": b64(val)}}},
	}
	var out struct {
		Succeeded bool `json:"succeeded"`
	}
	if err := c.call(ctx, "/v3/kv/txn", body, &out); err != nil {
		return false, err
	}
	return out.Succeeded, nil
}
