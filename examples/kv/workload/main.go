// Command workload drives a read/write workload against the examples/kv
// store (kvnode) and records every operation as a dst-history/1 JSON Lines
// file for `dstgen check --model kv`, following docs/driver-contract.md.
// The driver package (github.com/dstgen/dstgen/driver) does the contract:
// settings, pacing, timeouts, the history, the stop; this file holds the
// kvnode calls.
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
//	-tier       DSTGEN_TIER         tier, in the history header and the closing summary
//	-endpoints                      kvnode addresses host:port,... (required: on one machine the
//	                                nodes differ by port, so DSTGEN_SUT_HOSTS is not enough)
//	-clients                        clients (default 2 per endpoint, at most 256), client i pinned to endpoint i mod n
//	-keys                           number of keys (default 3), kv/<run id>/k<n>
//	-timeout                        per-op timeout (default 1s, at most 1m)
//	-ops                            op budget over all clients (default 0: none)
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
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/dstgen/dstgen/driver"
)

func main() { driver.Main(&config{}) }

// client is one logical client pinned to one endpoint.
type client struct {
	idx      int
	cfg      *config
	endpoint string
	rng      *rand.Rand
	writes   int
}

// Next is a read or, with the odds of -mix, a write of a value unique in
// the run; a client stops once its share of the value space (2^25 writes)
// is spent.
func (c *client) Next() (driver.Op, bool) {
	if c.writes >= 1<<seqBits-1 {
		return driver.Op{}, false
	}
	key := c.cfg.Key("k" + strconv.Itoa(c.rng.IntN(c.cfg.keys)))
	if c.rng.IntN(100) < c.cfg.mix {
		return driver.Op{Type: "read", Key: key, Node: c.endpoint}, true
	}
	c.writes++
	return driver.Op{Type: "write", Key: key, Input: opValue(c.cfg.base, c.idx, c.writes), Node: c.endpoint}, true
}

func (c *client) url(key string) string {
	return "http://" + c.endpoint + "/kv/" + (&url.URL{Path: key}).EscapedPath()
}

// Do sends op to the kvnode: a read returns the stored value, a write
// nothing.
func (c *client) Do(ctx context.Context, op driver.Op) (any, error) {
	method, body := http.MethodGet, io.Reader(nil)
	if op.Type == "write" {
		method, body = http.MethodPut, bytes.NewReader(strconv.AppendInt(nil, op.Input.(int64), 10))
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url(op.Key), body)
	if err != nil {
		return nil, driver.Fail("bad-request: " + err.Error())
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	data, status, err := c.do(req)
	if outcome, code := classify(status, data, err); outcome == "fail" {
		return nil, driver.Fail(code)
	} else if outcome != "ok" {
		return nil, driver.Unknown(code, err)
	}
	if op.Type == "write" {
		return nil, nil
	}
	var got struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		return nil, driver.Unknown("bad-answer", err)
	}
	v, err := decodeValue(got.Value)
	if err != nil {
		return nil, driver.Unknown("bad-answer", err)
	}
	return v, nil
}

// do sends req and reads the whole answer.
func (c *client) do(req *http.Request) ([]byte, int, error) {
	resp, err := c.cfg.hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return body, resp.StatusCode, err
}

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
