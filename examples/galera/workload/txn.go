package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/driver"
	"github.com/dstgen/dstgen/history"
)

// Transaction shape: 2-4 micro-ops, each a read or an append with even
// odds, over the -keys keys of the current generation, so transactions
// meet on keys and conflicts happen.
const (
	minMicro = 2
	maxMicro = 4
)

// step is one micro-op as the client runs it: the SQL key, and the value
// an append writes.
type step struct {
	f   string // history.MicroRead or history.MicroAppend
	k   int64
	val int64
}

// appendClient is one logical client of the list-append mode.
type appendClient struct {
	*conn
	rng *rand.Rand
	id  int
	seq int64 // the client's appends so far
	cur []step
}

func newAppendClient(c *conn, i int) *appendClient {
	return &appendClient{conn: c, id: i, rng: rand.New(rand.NewPCG(uint64(c.w.cfg.Seed), uint64(i)))}
}

// key is the history's name of SQL key k: inside the run's prefix.
func (w *workload) key(k int64) string { return w.cfg.Key("k" + strconv.FormatInt(k, 10)) }

// keyBase is the first SQL key of the generation now is in: keys rotate
// every -rotate on the wall clock, which every client host shares closely
// enough that its clients meet on the same keys, so no list grows without
// bound over a long run (a read returns the whole list).
func (w *workload) keyBase(now time.Time) int64 {
	if w.rotate <= 0 {
		return 0
	}
	return now.UnixNano() / int64(w.rotate) * int64(w.keys)
}

// Next draws the client's next transaction.
func (c *appendClient) Next() (driver.Op, bool) {
	n := minMicro + c.rng.IntN(maxMicro-minMicro+1)
	if c.seq+int64(n) >= valueSpan {
		return driver.Op{}, false // the most appends whose values stay unique
	}
	c.cur = c.cur[:0]
	micro := make([]history.MicroOp, n)
	base := c.w.keyBase(time.Now())
	for i := range n {
		s := step{f: history.MicroRead, k: base + int64(c.rng.IntN(c.w.keys))}
		micro[i] = history.MicroOp{F: s.f, Key: c.w.key(s.k)}
		if c.rng.IntN(2) == 0 {
			c.seq++
			s.f, s.val = history.MicroAppend, int64(c.id)*valueSpan+c.seq
			micro[i] = history.MicroOp{F: s.f, Key: c.w.key(s.k), Value: json.RawMessage(strconv.FormatInt(s.val, 10))}
		}
		c.cur = append(c.cur, s)
	}
	return driver.Op{Type: history.OpTxn, Input: micro, Node: c.ep.name}, true
}

// SQL of the list-append mode. The tables are qualified by Do's session
// database (the DSN's).
const (
	readSQL   = "SELECT v FROM " + appendTable + " WHERE p = ? AND k = ?"
	appendSQL = "INSERT INTO " + appendTable + " (p, k, v) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE v = CONCAT(v, ',', ?)"
)

// Do runs the transaction on the client's session and returns the
// micro-ops with each read's list filled in.
func (c *appendClient) Do(ctx context.Context, op driver.Op) (any, error) {
	in, ok := op.Input.([]history.MicroOp)
	if !ok || len(in) != len(c.cur) {
		return nil, driver.Fail("bad-op") // Next and Do disagree: a driver bug, never sent
	}
	sc, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := sc.ExecContext(ctx, "START TRANSACTION"); err != nil {
		return nil, c.outcome(ctx, beforeCommit, err)
	}
	out := make([]history.MicroOp, len(in))
	copy(out, in)
	p := c.w.cfg.Prefix
	for i, s := range c.cur {
		if s.f == history.MicroAppend {
			v := strconv.FormatInt(s.val, 10)
			if _, err := sc.ExecContext(ctx, appendSQL, p, s.k, v, v); err != nil {
				return nil, c.outcome(ctx, beforeCommit, err)
			}
			continue
		}
		list, err := readList(ctx, sc, p, s.k)
		if err != nil {
			return nil, c.outcome(ctx, beforeCommit, err)
		}
		b, _ := json.Marshal(list) // []int64 always marshals
		out[i].Value = b
	}
	if _, err := sc.ExecContext(ctx, "COMMIT"); err != nil {
		return nil, c.outcome(ctx, atCommit, err)
	}
	return out, nil
}

// errBadValue is a row whose v is not what this workload writes.
var errBadValue = errors.New("bad-value")

// readList reads key k's list: [] when the row is absent.
func readList(ctx context.Context, sc *sql.Conn, prefix string, k int64) ([]int64, error) {
	var v string
	err := sc.QueryRowContext(ctx, readSQL, prefix, k).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return []int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	return parseList(v)
}

// parseList reads "1,2,3" into its elements.
func parseList(v string) ([]int64, error) {
	list := []int64{}
	if v == "" {
		return list, nil
	}
	for e := range strings.SplitSeq(v, ",") {
		n, err := strconv.ParseInt(e, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: element %q of %.80q", errBadValue, e, v)
		}
		list = append(list, n)
	}
	return list, nil
}
