// Package node is the replicated key-value store behind examples/kv/kvnode:
// a static leader that orders every write, followers that receive the
// leader's log in order, and one switch (Config.StaleReads) that turns a
// correct store into one with a real stale-read bug.
//
// # Why it is linearizable without the bug
//
// The leader is the only node that applies client writes, and it never
// changes (no election), so its state is the one history of the store.
// Every client op is linearized at the instant it holds the leader's lock:
// a write at the moment the leader applies it (after its invocation, before
// its answer, whatever the answer is), a read at the moment the leader reads
// its map. A read that sees a write not yet acknowledged by a majority is
// fine: that write was invoked before it was applied, so the two overlap and
// the write may be ordered first. A write that gets 503 timeout was applied
// at the leader and may be seen later — the driver records it as
// indeterminate, never as failed. A forward that could not connect to the
// leader never reached it, so 503 unavailable is definitely not applied.
// Followers forward reads and writes to the leader, so no client op is ever
// answered from a follower's copy.
//
// # The bug
//
// With StaleReads a follower answers GET from its own copy. The copy is a
// prefix of the leader's log, so it is merely late — and a late read is a
// stale read once a write to the key completed before the read began: a
// follower cut off from the leader keeps answering with the value it had
// when the cut began, which a linearizability checker rejects.
//
// # Limits
//
// State lives in memory and the leader keeps its whole log (a follower that
// restarts empty gets everything again), which is fine for runs of minutes.
// A leader restart loses every write: the store is for testing the checker
// chain, not a database.
package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Answer codes in the "error" field of a 503.
const (
	// ErrTimeout: the write was applied at the leader but no majority
	// acknowledged it within the timeout — indeterminate.
	ErrTimeout = "timeout"
	// ErrUnavailable: the leader could not be reached at all — the op
	// definitely did not take effect.
	ErrUnavailable = "unavailable"
)

// forwardedHeader marks a request a follower forwarded, so that a node
// that is not the leader never forwards it again (a -peers mistake would
// otherwise loop).
const forwardedHeader = "X-Kv-Forwarded-By"

// maxBatch bounds the entries of one replication request.
const maxBatch = 512

// maxBody bounds a client value or a replication request.
const maxBody = 8 << 20

// Config is one node's settings (the kvnode flags).
type Config struct {
	ID     int
	Leader int
	// Peers is how this node reaches each node by id; its own entry, if
	// any, is ignored.
	Peers      map[int]string
	StaleReads bool
	// Timeout bounds waiting for a majority and each replication request;
	// a forward to the leader gets one and a half times it, so that the
	// leader's own answer (and its reason) comes through.
	Timeout time.Duration
}

// Size is the number of nodes: the ids of Peers plus this node.
func (c Config) Size() int {
	n := len(c.Peers)
	if _, ok := c.Peers[c.ID]; !ok {
		n++
	}
	return n
}

// Validate says what is wrong with c, in terms of the kvnode flags.
func (c Config) Validate() error {
	if c.ID < 1 {
		return fmt.Errorf("-id %d: want an id ≥ 1", c.ID)
	}
	if c.Leader < 1 {
		return fmt.Errorf("-leader %d: want an id ≥ 1", c.Leader)
	}
	if c.Timeout <= 0 {
		return fmt.Errorf("-timeout %s: want a duration > 0", c.Timeout)
	}
	if _, ok := c.Peers[c.Leader]; !ok && c.Leader != c.ID {
		return fmt.Errorf("-leader %d: -peers names no address for it", c.Leader)
	}
	for id, addr := range c.Peers {
		if id < 1 {
			return fmt.Errorf("-peers: id %d: want an id ≥ 1", id)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("-peers: %d=%s: want host:port", id, addr)
		}
	}
	return nil
}

// ParsePeers reads -peers: ID=ADDR pairs separated by commas.
func ParsePeers(s string) (map[int]string, error) {
	peers := map[int]string{}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		ids, addr, ok := strings.Cut(part, "=")
		id, err := strconv.Atoi(strings.TrimSpace(ids))
		if !ok || err != nil || id < 1 {
			return nil, fmt.Errorf("-peers: %q: want ID=HOST:PORT with an id ≥ 1", part)
		}
		addr = strings.TrimSpace(addr)
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("-peers: %q: want ID=HOST:PORT", part)
		}
		if _, dup := peers[id]; dup {
			return nil, fmt.Errorf("-peers: id %d named twice", id)
		}
		peers[id] = addr
	}
	return peers, nil
}

// entry is one write in the leader's log; seq starts at 1.
type entry struct {
	Seq   uint64          `json:"seq"`
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// replicateReq is the body of POST /internal/replicate.
type replicateReq struct {
	Leader  int     `json:"leader"`
	Entries []entry `json:"entries"`
}

// replicateResp tells the leader how far the follower has applied, so the
// leader resends from there (a follower that restarted says 0).
type replicateResp struct {
	Applied uint64 `json:"applied"`
}

// follower is the leader's view of one follower.
type follower struct {
	id    int
	addr  string
	match uint64        // highest seq the follower has applied; under node.mu
	wake  chan struct{} // cap 1: there is something new to send
}

// Node is one replica. Use New, then Serve.
type Node struct {
	cfg Config

	mu      sync.Mutex
	data    map[string]json.RawMessage
	applied uint64
	log     []entry // the leader's log: log[i].Seq == i+1
	// acked is closed and replaced whenever a follower's match moves, so
	// writes waiting for a majority wake up.
	acked     chan struct{}
	followers []*follower

	peer    *http.Client // replication
	forward *http.Client // follower → leader
}

// New makes a node; cfg must be valid.
func New(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Node{
		cfg:   cfg,
		data:  map[string]json.RawMessage{},
		acked: make(chan struct{}),
		peer:  &http.Client{Timeout: cfg.Timeout, Transport: newTransport()},
		forward: &http.Client{
			Timeout:   cfg.Timeout * 3 / 2,
			Transport: newTransport(),
		},
	}
	if n.leader() {
		ids := make([]int, 0, len(cfg.Peers))
		for id := range cfg.Peers {
			if id != cfg.ID {
				ids = append(ids, id)
			}
		}
		sort.Ints(ids)
		for _, id := range ids {
			n.followers = append(n.followers, &follower{id: id, addr: cfg.Peers[id], wake: make(chan struct{}, 1)})
		}
	}
	return n, nil
}

// newTransport is a keep-alive transport of its own per purpose, so a slow
// replication connection never holds up a forward. Keep-alive matters: a
// fresh connection per op would leave thousands of sockets in TIME_WAIT.
func newTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
	}
}

func (n *Node) leader() bool { return n.cfg.ID == n.cfg.Leader }

// Status is GET /status.
type Status struct {
	ID         int    `json:"id"`
	Leader     int    `json:"leader"`
	Applied    uint64 `json:"applied"`
	StaleReads bool   `json:"stale_reads"`
}

// Status reports the node's id, leader and highest applied seq.
func (n *Node) Status() Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	return Status{ID: n.cfg.ID, Leader: n.cfg.Leader, Applied: n.applied, StaleReads: n.cfg.StaleReads}
}

// Handler is the node's HTTP API.
func (n *Node) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /kv/{key...}", n.handleGet)
	mux.HandleFunc("PUT /kv/{key...}", n.handlePut)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, n.Status())
	})
	mux.HandleFunc("POST /internal/replicate", n.handleReplicate)
	return mux
}

// Serve answers on ln until ctx ends, with the leader's replication loops
// running alongside; then it shuts the listener down (bounded) and returns
// once every loop has stopped.
func (n *Node) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: n.Handler(), ReadHeaderTimeout: 5 * time.Second}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, f := range n.followers {
		wg.Go(func() { n.replicate(ctx, f) })
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		err = fmt.Errorf("serving %s: %w", ln.Addr(), err)
	}
	cancel()
	shut, stop := context.WithTimeout(context.Background(), 2*time.Second)
	defer stop()
	_ = srv.Shutdown(shut)
	wg.Wait()
	n.peer.CloseIdleConnections()
	n.forward.CloseIdleConnections()
	return err
}

func (n *Node) handleGet(w http.ResponseWriter, r *http.Request) {
	if !n.leader() && !n.cfg.StaleReads {
		n.forwardToLeader(w, r, nil)
		return
	}
	// The leader's state is the linearization; a follower gets here only
	// with the bug switched on.
	n.mu.Lock()
	v, ok := n.data[r.PathValue("key")]
	n.mu.Unlock()
	if !ok {
		v = json.RawMessage("null")
	}
	writeJSON(w, http.StatusOK, map[string]json.RawMessage{"value": v})
}

func (n *Node) handlePut(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	if len(body) > maxBody {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("value over %d bytes", maxBody))
		return
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, body); err != nil {
		writeError(w, http.StatusBadRequest, "the body is not a JSON value: "+err.Error())
		return
	}
	if !n.leader() {
		n.forwardToLeader(w, r, compact.Bytes())
		return
	}
	ok := n.write(r.Context(), r.PathValue("key"), compact.Bytes())
	if !ok {
		writeError(w, http.StatusServiceUnavailable, ErrTimeout)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// write applies a write at the leader, hands it to every follower's loop
// and waits for a majority: itself and ⌊n/2⌋ followers. False means no
// majority within the timeout (or the client went away); the write stays
// applied either way.
func (n *Node) write(ctx context.Context, key string, value []byte) bool {
	n.mu.Lock()
	seq := n.applied + 1
	n.log = append(n.log, entry{Seq: seq, Key: key, Value: value})
	n.data[key] = value
	n.applied = seq
	n.mu.Unlock()
	for _, f := range n.followers {
		select {
		case f.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
	need := n.cfg.Size() / 2
	timer := time.NewTimer(n.cfg.Timeout)
	defer timer.Stop()
	for {
		n.mu.Lock()
		got := 0
		for _, f := range n.followers {
			if f.match >= seq {
				got++
			}
		}
		ch := n.acked
		n.mu.Unlock()
		if got >= need {
			return true
		}
		select {
		case <-ch:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// replicate sends f what it misses, in order, until ctx ends: a batch per
// request, each bounded by the timeout; after a failure it backs off (50 ms
// doubling to the timeout) and tries again, so a healed follower catches up.
func (n *Node) replicate(ctx context.Context, f *follower) {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		n.mu.Lock()
		var batch []entry
		if f.match < n.applied {
			end := min(len(n.log), int(f.match)+maxBatch)
			batch = n.log[f.match:end]
		}
		n.mu.Unlock()
		if len(batch) == 0 {
			select {
			case <-ctx.Done():
			case <-f.wake:
			}
			continue
		}
		applied, err := n.send(ctx, f, batch)
		if err != nil {
			backoff = min(max(2*backoff, 50*time.Millisecond), n.cfg.Timeout)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		n.mu.Lock()
		// The follower's word is the truth: lower after its restart,
		// never beyond what the leader has.
		f.match = min(applied, n.applied)
		close(n.acked)
		n.acked = make(chan struct{})
		n.mu.Unlock()
	}
}

// send posts one batch and returns how far the follower has applied.
func (n *Node) send(ctx context.Context, f *follower, batch []entry) (uint64, error) {
	body, err := json.Marshal(replicateReq{Leader: n.cfg.ID, Entries: batch})
	if err != nil {
		return 0, fmt.Errorf("encoding entries for node %d: %w", f.id, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+f.addr+"/internal/replicate", bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("replicating to node %d: %w", f.id, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.peer.Do(req)
	if err != nil {
		return 0, fmt.Errorf("replicating to node %d: %w", f.id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("replicating to node %d: %s", f.id, resp.Status)
	}
	var out replicateResp
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&out); err != nil {
		return 0, fmt.Errorf("replicating to node %d: reading the answer: %w", f.id, err)
	}
	return out.Applied, nil
}

// handleReplicate applies the leader's entries that come next in order;
// ones it has already are skipped, a gap stops it (the leader resends from
// the answer's applied).
func (n *Node) handleReplicate(w http.ResponseWriter, r *http.Request) {
	var req replicateReq
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody*2)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "replicate: "+err.Error())
		return
	}
	if req.Leader != n.cfg.Leader || n.leader() {
		writeError(w, http.StatusConflict, fmt.Sprintf("replicate from node %d: the leader is %d", req.Leader, n.cfg.Leader))
		return
	}
	n.mu.Lock()
	for _, e := range req.Entries {
		if e.Seq <= n.applied {
			continue
		}
		if e.Seq != n.applied+1 {
			break
		}
		n.data[e.Key] = e.Value
		n.applied = e.Seq
	}
	applied := n.applied
	n.mu.Unlock()
	writeJSON(w, http.StatusOK, replicateResp{Applied: applied})
}

// forwardToLeader sends a client request on to the leader and passes its
// answer back. A forward that could not connect never reached the leader:
// 503 unavailable (definitely not applied). Any other failure may have
// reached it: 503 timeout for a write (indeterminate); a read has no
// effect, so it is unavailable either way.
func (n *Node) forwardToLeader(w http.ResponseWriter, r *http.Request, body []byte) {
	if by := r.Header.Get(forwardedHeader); by != "" {
		writeError(w, http.StatusMisdirectedRequest, fmt.Sprintf("node %d is not the leader (forwarded by node %s; check -peers)", n.cfg.ID, by))
		return
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+n.cfg.Peers[n.cfg.Leader]+r.URL.EscapedPath(), rd)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "forwarding: "+err.Error())
		return
	}
	req.Header.Set(forwardedHeader, strconv.Itoa(n.cfg.ID))
	resp, err := n.forward.Do(req)
	if err != nil {
		code := ErrTimeout
		if r.Method == http.MethodGet || IsDialError(err) {
			code = ErrUnavailable
		}
		writeError(w, http.StatusServiceUnavailable, code)
		return
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1024))
	if err != nil {
		code := ErrTimeout
		if r.Method == http.MethodGet {
			code = ErrUnavailable
		}
		writeError(w, http.StatusServiceUnavailable, code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}

// IsDialError says whether err is a failure to open a connection, after
// which the request was certainly never sent.
func IsDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
