package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dstgen/dstgen/internal/atomicfile"
)

// finalState is the final-state dump in the file format the no-lost-ack
// and reconciliation checkers read (docs/history-and-checkers.md §5,
// checker.FinalState): keys are the converged values, replicas each
// member's own range, keyed by its client URL (the node_seen of its ops).
type finalState struct {
	Keys     map[string]json.RawMessage            `json:"keys"`
	Replicas map[string]map[string]json.RawMessage `json:"replicas"`
}

// dumpReport says how far the dump got, for the summary line.
type dumpReport struct {
	members   int
	reached   int
	keys      int
	diverged  int   // keys not identical on every member that answered
	revision  int64 // the revision the members converged on (0: they did not)
	converged bool
	// unreachable lists the members that gave no range, with the reason.
	unreachable []string
}

// Bounds of the dump: keys per page, pages per member, and the pause
// between two convergence polls.
const (
	dumpPage      = 1000
	dumpMaxPages  = 100000
	convergePause = 200 * time.Millisecond
)

// revNum is an int64 the gateway writes as a JSON string ("12") — proto3
// JSON's int64 — or, from other encoders, a number.
type revNum int64

func (r *revNum) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*r = 0
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("not an int64: %s", b)
	}
	*r = revNum(n)
	return nil
}

// rangeReply is the part of the gateway's RangeResponse the dump reads.
type rangeReply struct {
	Header struct {
		Revision revNum `json:"revision"`
	} `json:"header"`
	Kvs []struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	} `json:"kvs"`
	More bool `json:"more"`
}

// memberRevision is the member's own applied revision (a serializable
// count-only range: it never waits for a quorum).
func (c *client) memberRevision(ctx context.Context, start, end string) (int64, error) {
	var out rangeReply
	body := map[string]any{"key": b64([]byte(start)), "range_end": b64([]byte(end)), "serializable": true, "count_only": true}
	if err := c.call(ctx, "/v3/kv/range", body, &out); err != nil {
		return 0, err
	}
	return int64(out.Header.Revision), nil
}

// memberRange reads [start, end) from the member's local state, page by
// page at one revision, so the pages form one snapshot.
func (c *client) memberRange(ctx context.Context, start, end string) (map[string]json.RawMessage, error) {
	got := map[string]json.RawMessage{}
	var rev int64
	from := start
	for page := 0; page < dumpMaxPages; page++ {
		body := map[string]any{"key": b64([]byte(from)), "range_end": b64([]byte(end)), "limit": dumpPage, "serializable": true}
		if rev != 0 {
			body["revision"] = rev
		}
		var out rangeReply
		if err := c.call(ctx, "/v3/kv/range", body, &out); err != nil {
			return nil, fmt.Errorf("range page %d: %w", page+1, err)
		}
		if rev == 0 {
			rev = int64(out.Header.Revision)
		}
		last := ""
		for _, kv := range out.Kvs {
			k, err := base64.StdEncoding.DecodeString(kv.Key)
			if err != nil {
				return nil, fmt.Errorf("range page %d: key %q is not base64", page+1, kv.Key)
			}
			v, err := base64.StdEncoding.DecodeString(kv.Value)
			if err != nil {
				return nil, fmt.Errorf("range page %d: value of %q is not base64", page+1, k)
			}
			if !json.Valid(v) {
				// Not a value this workload writes: kept, as a string, so
				// the dump still shows it.
				v, _ = json.Marshal(string(v)) // a string always marshals
			}
			got[string(k)] = json.RawMessage(v)
			last = string(k)
		}
		if !out.More || last == "" {
			return got, nil
		}
		from = last + "\x00" // the next key after last
	}
	return nil, fmt.Errorf("range: more than %d pages of %d keys", dumpMaxPages, dumpPage)
}

// dumpFinal reads the run's whole prefix from every member with a
// serializable read, after waiting (at most half of cfg.finalTimeout)
// for the members to report one revision, so a member still catching up
// is not mistaken for a diverged one. keys holds a key only when every
// member that answered has it with the same value: an acked put missing
// on any member is then a lost ack for the no-lost-ack checker, and the
// replicas show which member lacks it.
func dumpFinal(ctx context.Context, cfg *config) (finalState, dumpReport, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.FinalTimeout)
	defer cancel()
	rep := dumpReport{members: len(cfg.endpoints)}
	start, end := cfg.keyRange()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	defer hc.CloseIdleConnections()
	reqTimeout := max(cfg.Timeout, 5*time.Second)
	members := make([]*client, len(cfg.endpoints))
	for i, ep := range cfg.endpoints {
		members[i] = &client{hc: hc, endpoint: ep}
	}

	// each runs f on every member at once and waits for all of them.
	each := func(f func(i int, c *client)) {
		var wg sync.WaitGroup
		for i, c := range members {
			wg.Add(1)
			go func() { defer wg.Done(); f(i, c) }()
		}
		wg.Wait()
	}

	convergeBy := time.Now().Add(cfg.FinalTimeout / 2)
	var prev []int64
	for poll := 0; poll < int(cfg.FinalTimeout/convergePause)+1 && time.Now().Before(convergeBy); poll++ {
		revs := make([]int64, len(members))
		each(func(i int, c *client) {
			rctx, rcancel := context.WithTimeout(ctx, min(reqTimeout, time.Until(convergeBy)))
			defer rcancel()
			if r, err := c.memberRevision(rctx, start, end); err == nil {
				revs[i] = r
			}
		})
		same := !slices.Contains(revs, 0)
		for _, r := range revs {
			same = same && r == revs[0]
		}
		if same && slices.Equal(revs, prev) {
			rep.converged, rep.revision = true, revs[0]
			break
		}
		prev = revs
		select {
		case <-ctx.Done():
		case <-time.After(convergePause):
		}
	}

	ranges := make([]map[string]json.RawMessage, len(members))
	errs := make([]error, len(members))
	each(func(i int, c *client) { ranges[i], errs[i] = c.memberRange(ctx, start, end) })

	fs := finalState{Keys: map[string]json.RawMessage{}, Replicas: map[string]map[string]json.RawMessage{}}
	var reached []map[string]json.RawMessage
	for i, c := range members {
		if errs[i] != nil {
			rep.unreachable = append(rep.unreachable, fmt.Sprintf("%s (%v)", c.endpoint, errs[i]))
			continue
		}
		fs.Replicas[c.endpoint] = ranges[i]
		reached = append(reached, ranges[i])
	}
	rep.reached = len(reached)
	if len(reached) == 0 {
		return fs, rep, fmt.Errorf("final state: no member answered the range of %q: %s", start, strings.Join(rep.unreachable, "; "))
	}
	union := map[string]bool{}
	for _, r := range reached {
		for k := range r {
			union[k] = true
		}
	}
	for k := range union {
		v, agreed := reached[0][k]
		for _, r := range reached[1:] {
			w, has := r[k]
			agreed = agreed && has && bytes.Equal(v, w)
		}
		if agreed {
			fs.Keys[k] = v
		} else {
			rep.diverged++
		}
	}
	rep.keys = len(fs.Keys)
	return fs, rep, nil
}

// writeFinal writes the dump to path atomically (internal/atomicfile),
// so a run killed mid-write leaves no half dump.
func writeFinal(path string, fs finalState) error {
	b, err := json.MarshalIndent(fs, "", " ")
	if err != nil {
		return fmt.Errorf("encode final state: %w", err)
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create final-state directory: %w", err)
		}
	}
	if err := atomicfile.Write(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write final state: %w", err)
	}
	return nil
}

// WriteFinal dumps the final state to -final / DSTGEN_FINAL and logs its
// summary line; an error (no member answered, the file not written) makes
// the driver exit 1.
func (c *config) WriteFinal(ctx context.Context) error {
	fs, rep, err := dumpFinal(ctx, c)
	if err == nil {
		err = writeFinal(c.Final, fs)
	}
	c.Logf("final=%s members=%d/%d keys=%d diverged=%d converged=%t revision=%d prefix=%s",
		c.Final, rep.reached, rep.members, rep.keys, rep.diverged, rep.converged, rep.revision, c.Prefix)
	for _, u := range rep.unreachable {
		c.Logf("note: final state without member %s", u)
	}
	return err
}
