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
// variables to every workload and benchmark command. A flag, when given,
// wins over its variable; an empty variable counts as unset.
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
// know. The closing summary line on stderr repeats run_id, seed and prefix.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/time/rate"

	"github.com/dstgen/dstgen/history"
)

// stats counts outcomes for the closing summary line.
type stats struct {
	ok, failed, unknown atomic.Int64
	exhausted           atomic.Int64 // clients that stopped at maxSeq
	// firstErr is the first error without a definite answer, kept so a run
	// in which nothing succeeds can say why (the history only has a code).
	firstErr atomic.Pointer[string]
}

func (s *stats) total() int64 { return s.ok.Load() + s.failed.Load() + s.unknown.Load() }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal ends the workload (the history is closed and the
	// final state dumped); a second one kills at once, as by default.
	go func() { <-ctx.Done(); stop() }()
	code := realMain(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}

// realMain is the whole command minus the process: exit code 0 ok, 1 the
// run failed, 2 bad input.
func realMain(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	cfg, err := configFrom(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "workload: %v\n", err)
		return 2
	}
	if cfg.finalOnly {
		return finalMain(ctx, cfg, stderr)
	}
	if dir := filepath.Dir(cfg.out); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintf(stderr, "workload: create history directory: %v\n", err)
			return 2
		}
	}
	f, err := os.Create(cfg.out)
	if err != nil {
		fmt.Fprintf(stderr, "workload: create history: %v\n", err)
		return 2
	}
	st, err := run(ctx, cfg, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close history %s: %w", cfg.out, cerr)
	}
	if n := st.exhausted.Load(); n > 0 {
		fmt.Fprintf(stderr, "workload: note: %d client(s) stopped after %d ops, the most whose values stay unique\n", n, maxSeq)
	}
	fmt.Fprintf(stderr, "workload: ops=%d ok=%d failed=%d unknown=%d out=%s run_id=%s seed=%d prefix=%s\n",
		st.total(), st.ok.Load(), st.failed.Load(), st.unknown.Load(), cfg.out, cfg.runID, cfg.seed, cfg.prefix)
	if err != nil {
		fmt.Fprintf(stderr, "workload: %v\n", err)
		return 1
	}
	if cfg.final != "" {
		// After the duration or a stop signal alike: the dump gets its own
		// bound (-final-timeout), not the run's spent context.
		return finalMain(context.WithoutCancel(ctx), cfg, stderr)
	}
	return 0
}

// headerWriter adds run_id and tier to the recorder's _meta header, which
// is its first Write: history.Meta has no fields for them, and readers
// ignore _meta fields they do not know. Any other first write passes
// through unchanged.
type headerWriter struct {
	w     io.Writer
	extra map[string]string
	done  bool
}

func (h *headerWriter) Write(p []byte) (int, error) {
	if h.done {
		return h.w.Write(p)
	}
	h.done = true
	var hdr map[string]map[string]json.RawMessage // raw: the seed stays exact
	if err := json.Unmarshal(p, &hdr); err != nil || hdr["_meta"] == nil {
		return h.w.Write(p)
	}
	for k, v := range h.extra {
		if v != "" {
			b, _ := json.Marshal(v) // a string always marshals
			hdr["_meta"][k] = b
		}
	}
	b, err := json.Marshal(hdr)
	if err != nil {
		return 0, fmt.Errorf("encode history header: %w", err)
	}
	if _, err := h.w.Write(append(b, '\n')); err != nil {
		return 0, err
	}
	return len(p), nil
}

// run drives the workload until the duration or op budget is spent and
// writes the history to w.
func run(ctx context.Context, cfg config, w io.Writer) (*stats, error) {
	if cfg.mix.name == "" {
		cfg.mix, _ = mixFor("mixed")
	}
	hw := &headerWriter{w: w, extra: map[string]string{"run_id": cfg.runID, "tier": cfg.tier}}
	rec := history.NewRecorder(hw, history.Meta{Scenario: cfg.scenario, Seed: cfg.seed})
	ctx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	st := &stats{}
	var issued atomic.Int64
	var lim *rate.Limiter
	if cfg.rate > 0 {
		// Burst 1: ops start no faster than the rate in total; Wait
		// refuses a wait past the run's deadline, so the limit never
		// stretches the run.
		lim = rate.NewLimiter(rate.Limit(cfg.rate), 1)
	}
	base := valueBase(cfg.runID, cfg.seed)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.clients}}
	defer hc.CloseIdleConnections()
	var wg sync.WaitGroup
	for c := 0; c < cfg.clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := &client{hc: hc, endpoint: cfg.endpoints[c%len(cfg.endpoints)], timeout: cfg.timeout,
				rng: rand.New(rand.NewPCG(uint64(cfg.seed), uint64(c))), id: c, base: base, mix: cfg.mix,
				seen: map[string]json.RawMessage{}, serializable: cfg.serializable}
			for ctx.Err() == nil {
				if lim != nil && lim.Wait(ctx) != nil {
					return
				}
				if cfg.maxOps > 0 && issued.Add(1) > cfg.maxOps {
					return
				}
				if cl.seq >= maxSeq {
					st.exhausted.Add(1)
					return
				}
				cl.step(ctx, rec, &cfg, st)
			}
		}()
	}
	wg.Wait()
	if err := rec.Err(); err != nil {
		return st, err
	}
	if st.ok.Load() == 0 {
		why := ""
		if e := st.firstErr.Load(); e != nil {
			why = "; first error: " + *e
		}
		return st, fmt.Errorf("no operation succeeded against %s%s", strings.Join(cfg.endpoints, ","), why)
	}
	return st, nil
}

// client is one logical client; gen counts its reconnects (new process ids).
type client struct {
	hc       *http.Client
	endpoint string
	timeout  time.Duration
	rng      *rand.Rand
	id, gen  int
	seq      int
	base     uint64 // the run's bits of every value
	mix      opMix
	seen     map[string]json.RawMessage // last value this client saw per key, for cas
	// serializable: reads skip the quorum check (-consistency s).
	serializable bool
}

func (c *client) process() string { return fmt.Sprintf("c%d.%d", c.id, c.gen) }

func (c *client) step(ctx context.Context, rec *history.Recorder, cfg *config, st *stats) {
	key := cfg.key(c.rng.IntN(cfg.keys))
	c.seq++
	if c.mix.fresh {
		key = cfg.freshKey(c.id, c.seq)
	}
	val := json.RawMessage(strconv.FormatUint(opValue(c.base, c.id, c.seq), 10)) // unique per op
	var p *history.Pending
	var err error
	opCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	switch r := c.rng.IntN(10); {
	case c.mix.fresh:
		p = rec.Invoke(c.process(), "write", key, val).SetNode(c.endpoint)
		if err = c.put(opCtx, key, val); err == nil {
			err = p.Ok(nil)
		}
	case r < c.mix.read:
		p = rec.Invoke(c.process(), "read", key, nil).SetNode(c.endpoint)
		var v json.RawMessage
		if v, err = c.get(opCtx, key); err == nil {
			c.seen[key] = v
			err = p.Ok(v)
		}
	case r < c.mix.read+c.mix.write || c.seen[key] == nil:
		p = rec.Invoke(c.process(), "write", key, val).SetNode(c.endpoint)
		if err = c.put(opCtx, key, val); err == nil {
			c.seen[key] = val
			err = p.Ok(nil)
		}
	default:
		expected := c.seen[key]
		p = rec.Invoke(c.process(), "cas", key, []json.RawMessage{expected, val}).SetNode(c.endpoint)
		var swapped bool
		if swapped, err = c.cas(opCtx, key, expected, val); err == nil {
			if swapped {
				c.seen[key] = val
			}
			err = p.Ok(swapped)
		}
	}
	if err == nil {
		st.ok.Add(1)
		return
	}
	var def *definiteError
	switch {
	case errors.As(err, &def):
		_ = p.Fail(def.code)
		st.failed.Add(1)
	default:
		_ = p.Timeout(errCode(err))
		st.unknown.Add(1)
		msg := err.Error()
		st.firstErr.CompareAndSwap(nil, &msg)
		c.gen++ // the op may still be in flight: continue as a new process
	}
}

// definiteError is a failure known not to have taken effect.
type definiteError struct{ code string }

func (e *definiteError) Error() string { return e.code }

func errCode(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, syscall.ECONNRESET):
		return "conn-reset"
	}
	return "indeterminate"
}

func b64(s []byte) string { return base64.StdEncoding.EncodeToString(s) }

// call posts body to the gateway path and decodes the reply into out.
func (c *client) call(ctx context.Context, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return &definiteError{"encode"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint+path, bytes.NewReader(b))
	if err != nil {
		return &definiteError{"bad-endpoint"}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return &definiteError{"conn-refused"} // never sent
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
