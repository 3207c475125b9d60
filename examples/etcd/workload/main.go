// Command workload drives a read/write/cas workload against etcd and
// records every operation as a dst-history/1 JSON Lines file for
// `dstgen check --model kv`.
//
// It speaks etcd v3's JSON gRPC gateway over plain HTTP (POST /v3/kv/put,
// /v3/kv/range, /v3/kv/txn with base64 keys and values), so it needs no
// etcd client library and runs against any etcd 3.4+. Values are unique
// JSON integers; a cas is a txn comparing the key's value. Every op is
// recorded: a response is ok, a refused connection is a failure (the
// request never left), and anything else without a definite answer —
// timeouts, resets, server errors — is a timeout (may or may not have
// taken effect). After such an op the client continues as a new process,
// as the history spec requires for a reconnect.
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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dstgen/dstgen/history"
)

// config is the workload's flags.
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
}

// stats counts outcomes for the closing summary line.
type stats struct {
	ok, failed, unknown atomic.Int64
}

func main() {
	var cfg config
	var endpoints string
	flag.StringVar(&endpoints, "endpoints", "http://127.0.0.1:2379", "comma-separated etcd client URLs")
	flag.IntVar(&cfg.clients, "clients", 4, "concurrent clients")
	flag.IntVar(&cfg.keys, "keys", 5, "number of keys")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long to run")
	flag.Int64Var(&cfg.maxOps, "ops", 0, "stop after this many ops (0: no limit)")
	flag.Int64Var(&cfg.seed, "seed", 1, "random seed")
	flag.StringVar(&cfg.out, "out", "history.jsonl", "history file to write")
	flag.DurationVar(&cfg.timeout, "timeout", time.Second, "per-op timeout; an op that outlives it is recorded as timed out")
	flag.StringVar(&cfg.scenario, "scenario", "", "scenario id for the history header")
	flag.Parse()
	for _, e := range strings.Split(endpoints, ",") {
		if e = strings.TrimSpace(e); e != "" {
			cfg.endpoints = append(cfg.endpoints, strings.TrimRight(e, "/"))
		}
	}
	if len(cfg.endpoints) == 0 || cfg.clients < 1 || cfg.keys < 1 || cfg.duration <= 0 || cfg.timeout <= 0 {
		fmt.Fprintln(os.Stderr, "workload: need -endpoints, and positive -clients, -keys, -duration, -timeout")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f, err := os.Create(cfg.out)
	if err != nil {
		fmt.Fprintf(os.Stderr, "workload: create history: %v\n", err)
		os.Exit(2)
	}
	st, err := run(ctx, cfg, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close history: %w", cerr)
	}
	fmt.Fprintf(os.Stderr, "workload: ops=%d ok=%d failed=%d unknown=%d out=%s\n",
		st.ok.Load()+st.failed.Load()+st.unknown.Load(), st.ok.Load(), st.failed.Load(), st.unknown.Load(), cfg.out)
	if err != nil {
		fmt.Fprintf(os.Stderr, "workload: %v\n", err)
		os.Exit(1)
	}
}

// run drives the workload until the duration or op budget is spent and
// writes the history to w.
func run(ctx context.Context, cfg config, w io.Writer) (*stats, error) {
	rec := history.NewRecorder(w, history.Meta{Scenario: cfg.scenario, Seed: cfg.seed})
	ctx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	st := &stats{}
	var issued atomic.Int64
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.clients}}
	defer hc.CloseIdleConnections()
	var wg sync.WaitGroup
	for c := 0; c < cfg.clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := &client{hc: hc, endpoint: cfg.endpoints[c%len(cfg.endpoints)], timeout: cfg.timeout,
				rng: rand.New(rand.NewPCG(uint64(cfg.seed), uint64(c))), id: c, seen: map[string]json.RawMessage{}}
			for ctx.Err() == nil {
				if cfg.maxOps > 0 && issued.Add(1) > cfg.maxOps {
					return
				}
				cl.step(ctx, rec, cfg.keys, st)
			}
		}()
	}
	wg.Wait()
	if err := rec.Err(); err != nil {
		return st, err
	}
	if st.ok.Load() == 0 {
		return st, fmt.Errorf("no operation succeeded against %s", strings.Join(cfg.endpoints, ","))
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
	seen     map[string]json.RawMessage // last value this client saw per key, for cas
}

func (c *client) process() string { return fmt.Sprintf("c%d.%d", c.id, c.gen) }

func (c *client) step(ctx context.Context, rec *history.Recorder, keys int, st *stats) {
	key := "k" + strconv.Itoa(c.rng.IntN(keys))
	c.seq++
	val := json.RawMessage(strconv.Itoa(c.id*100_000_000 + c.seq)) // unique per op
	var p *history.Pending
	var err error
	opCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	switch r := c.rng.IntN(10); {
	case r < 4:
		p = rec.Invoke(c.process(), "read", key, nil).SetNode(c.endpoint)
		var v json.RawMessage
		if v, err = c.get(opCtx, key); err == nil {
			c.seen[key] = v
			err = p.Ok(v)
		}
	case r < 7 || c.seen[key] == nil:
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

func (c *client) get(ctx context.Context, key string) (json.RawMessage, error) {
	var out struct {
		Kvs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := c.call(ctx, "/v3/kv/range", map[string]string{"key": b64([]byte(key))}, &out); err != nil {
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
