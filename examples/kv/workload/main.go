// Command workload drives a read/write workload against the examples/kv
// store (kvnode) and records every operation as a dst-history/1 JSON Lines
// file for `dstgen check --model kv`, following docs/driver-contract.md.
//
// # Settings: flags over the DSTGEN_* contract
//
//	flag        variable            meaning
//	-out        DSTGEN_HISTORY      history file (default history.jsonl)
//	-run-id     DSTGEN_RUN_ID       run id (default local-<UTC time>-<pid>)
//	-seed       DSTGEN_SEED         seed; 0 or unset: a stable hash of the run id
//	-duration   DSTGEN_DURATION_S   run length (flag: Go duration; variable: seconds); default 10s
//	-rate       DSTGEN_RATE         target ops/s over all clients; 0: unthrottled
//	-scenario   DSTGEN_SCENARIO     scenario id, in the history header
//	-tier       DSTGEN_TIER         tier, in the closing summary
//	-endpoints                      kvnode addresses host:port,... (required: on one machine the
//	                                nodes differ by port, so DSTGEN_SUT_HOSTS is not enough)
//	-clients                        clients (default 2 per endpoint), client i pinned to endpoint i mod n
//	-keys                           number of keys (default 3), kv/<run id>/k<n>
//	-timeout                        per-op timeout (default 1s)
//	-mix                            % of ops that are reads (default 50)
//	-prefix                         key prefix (default kv/<run id>)
//
// A bad flag or variable is one line naming it and exit 2.
//
// # Outcomes
//
// 200 is ok. 503 {"error":"unavailable"} (a follower could not reach the
// leader) and a refused connection are failures: the op never reached the
// leader. 503 {"error":"timeout"} (applied at the leader, no majority ack in
// time), a client timeout, a reset or any other server error is an unknown
// outcome, after which the client continues as a new process
// (docs/driver-contract.md §3.2). Every written value is unique in the run,
// so a read names the write it saw.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/dstgen/dstgen/history"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg, err := parseConfig(os.Args[1:], os.Getenv, time.Now(), os.Getpid())
	if err != nil {
		fmt.Fprintln(os.Stderr, "workload:", err)
		os.Exit(2)
	}
	sum, err := run(ctx, cfg)
	fmt.Fprintln(os.Stderr, sum.line(cfg))
	if err != nil {
		fmt.Fprintln(os.Stderr, "workload:", err)
		os.Exit(1)
	}
}

// summary counts the outcomes of a run.
type summary struct {
	mu                        sync.Mutex
	ops, ok, failed, timeouts int
	firstErr                  string
}

func (s *summary) add(outcome, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops++
	switch outcome {
	case "ok":
		s.ok++
	case "fail":
		s.failed++
	default:
		s.timeouts++
	}
	if outcome != "ok" && s.firstErr == "" {
		s.firstErr = code
	}
}

func (s *summary) line(cfg config) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := fmt.Sprintf("workload ops=%d ok=%d fail=%d timeout=%d run_id=%s seed=%d prefix=%s tier=%s history=%s",
		s.ops, s.ok, s.failed, s.timeouts, cfg.runID, cfg.seed, cfg.prefix, cfg.tier, cfg.out)
	if s.ok == 0 && s.firstErr != "" {
		l += " first_error=" + strconv.Quote(s.firstErr)
	}
	return l
}

// run drives cfg.clients clients for cfg.duration (or until ctx ends) and
// writes the history to cfg.out.
func run(ctx context.Context, cfg config) (*summary, error) {
	sum := &summary{}
	f, err := os.Create(cfg.out)
	if err != nil {
		return sum, fmt.Errorf("creating the history: %w", err)
	}
	rec := history.NewRecorder(f, history.Meta{Scenario: cfg.scenario, Seed: cfg.seed})
	hc := &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: cfg.timeout}).DialContext,
		MaxIdleConnsPerHost: maxClients,
		IdleConnTimeout:     30 * time.Second,
	}}
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	base := valueBase(cfg.runID, cfg.seed)
	var interval time.Duration
	if cfg.rate > 0 {
		interval = time.Duration(float64(cfg.clients) / cfg.rate * float64(time.Second))
	}
	var wg sync.WaitGroup
	for i := range cfg.clients {
		c := &client{
			idx: i, cfg: cfg, hc: hc, rec: rec, sum: sum, base: base,
			endpoint: cfg.endpoints[i%len(cfg.endpoints)],
			rng:      rand.New(rand.NewPCG(uint64(cfg.seed), uint64(i))),
			interval: interval,
		}
		wg.Go(func() { c.loop(ctx) })
	}
	wg.Wait()
	err = rec.Err()
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing the history: %w", cerr)
	}
	if err != nil {
		return sum, fmt.Errorf("writing the history %s: %w", cfg.out, err)
	}
	return sum, nil
}

// client is one logical client pinned to one endpoint.
type client struct {
	idx      int
	cfg      config
	hc       *http.Client
	rec      *history.Recorder
	sum      *summary
	base     uint64
	endpoint string
	rng      *rand.Rand
	interval time.Duration
	gen      int // bumped after an unknown outcome: a new process
	writes   int
}

func (c *client) process() string {
	if c.gen == 0 {
		return "c" + strconv.Itoa(c.idx)
	}
	return fmt.Sprintf("c%d.%d", c.idx, c.gen)
}

// loop issues ops until ctx ends; bounded by the run's duration and, for
// writes, by the value space of one client (2^25 writes).
func (c *client) loop(ctx context.Context) {
	next := time.Now()
	for ctx.Err() == nil && c.writes < 1<<seqBits-1 {
		if c.interval > 0 {
			// No burst to catch up after slow ops: the rate is a ceiling.
			next = next.Add(c.interval)
			if now := time.Now(); next.Before(now) {
				next = now
			}
			if d := time.Until(next); d > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(d):
				}
			}
		}
		key := c.cfg.prefix + "/k" + strconv.Itoa(c.rng.IntN(c.cfg.keys))
		if c.rng.IntN(100) < c.cfg.mix {
			c.read(ctx, key)
		} else {
			c.writes++
			c.write(ctx, key, opValue(c.base, c.idx, c.writes))
		}
	}
}

// opCtx bounds one op by the per-op timeout but not by the run's end: an
// op invoked before the end runs to its answer, so the last ops are not
// all recorded as timeouts.
func (c *client) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), c.cfg.timeout)
}

func (c *client) url(key string) string {
	return "http://" + c.endpoint + "/kv/" + (&url.URL{Path: key}).EscapedPath()
}

func (c *client) read(ctx context.Context, key string) {
	p := c.rec.Invoke(c.process(), "read", key, nil).SetNode(c.endpoint)
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(octx, http.MethodGet, c.url(key), nil)
	if err != nil {
		c.finish(p, "fail", "bad-request: "+err.Error(), nil)
		return
	}
	body, status, err := c.do(req)
	if outcome, code := classify(status, body, err); outcome != "ok" {
		c.finish(p, outcome, code, nil)
		return
	}
	var got struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		c.finish(p, "timeout", "bad-answer", nil)
		return
	}
	v, err := decodeValue(got.Value)
	if err != nil {
		c.finish(p, "timeout", "bad-answer", nil)
		return
	}
	c.finish(p, "ok", "", v)
}

func (c *client) write(ctx context.Context, key string, v int64) {
	p := c.rec.Invoke(c.process(), "write", key, v).SetNode(c.endpoint)
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(octx, http.MethodPut, c.url(key), bytes.NewReader(strconv.AppendInt(nil, v, 10)))
	if err != nil {
		c.finish(p, "fail", "bad-request: "+err.Error(), nil)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	body, status, err := c.do(req)
	outcome, code := classify(status, body, err)
	c.finish(p, outcome, code, nil)
}

// do sends req and reads the whole answer.
func (c *client) do(req *http.Request) ([]byte, int, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return body, resp.StatusCode, err
}

// finish records the outcome; an unknown one makes the client a new
// process.
func (c *client) finish(p *history.Pending, outcome, code string, out any) {
	switch outcome {
	case "ok":
		_ = p.Ok(out)
	case "fail":
		_ = p.Fail(code)
	default:
		_ = p.Timeout(code)
		c.gen++
	}
	c.sum.add(outcome, code)
	if outcome != "ok" {
		// A node that cannot serve answers at once; without a pause an
		// unthrottled client would fill the history with failures.
		time.Sleep(failPause)
	}
}

// failPause is how long a client waits after an op that did not succeed.
const failPause = 20 * time.Millisecond

// classify maps an answer onto ok, fail (definitely no effect) or timeout
// (unknown), with the error code recorded.
func classify(status int, body []byte, err error) (outcome, code string) {
	if err != nil {
		var op *net.OpError
		switch {
		case errors.As(err, &op) && op.Op == "dial":
			return "fail", "refused"
		case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
			return "timeout", "timeout"
		default:
			return "timeout", "reset"
		}
	}
	if status == http.StatusOK {
		return "ok", ""
	}
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	switch {
	case status == http.StatusServiceUnavailable && e.Error == "unavailable":
		return "fail", "unavailable"
	case status == http.StatusServiceUnavailable && e.Error == "timeout":
		return "timeout", "timeout"
	case status >= 400 && status < 500:
		// The node refused the request before doing anything with it.
		return "fail", "http-" + strconv.Itoa(status)
	default:
		return "timeout", "http-" + strconv.Itoa(status)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// decodeValue reads a stored value: null, or an integer this driver wrote
// (anything else is returned as JSON text, so the checker still sees a
// value no op wrote).
func decodeValue(raw json.RawMessage) (any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}
