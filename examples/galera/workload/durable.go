package main

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/dstgen/dstgen/driver"
)

// durableClient is one logical client of the durability mode: every op
// inserts an id no other op of the run inserts.
type durableClient struct {
	*conn
	id  int
	seq int64
}

// idsKey is the history's key of the durability mode: one set holding
// every id, so no-lost-ack reads final.json's list as membership.
func (w *workload) idsKey() string { return w.cfg.Key("ids") }

const insertSQL = "INSERT INTO " + durableTable + " (p, id) VALUES (?, ?)"

// Next is an add of the client's next id.
func (c *durableClient) Next() (driver.Op, bool) {
	if c.seq+1 >= valueSpan {
		return driver.Op{}, false
	}
	c.seq++
	id := int64(c.id)*valueSpan + c.seq
	return driver.Op{Type: "add", Key: c.w.idsKey(), Input: json.RawMessage(strconv.FormatInt(id, 10)), Node: c.ep.name}, true
}

// Do inserts the id in autocommit: the statement is its own commit.
func (c *durableClient) Do(ctx context.Context, op driver.Op) (any, error) {
	raw, _ := op.Input.(json.RawMessage)
	id, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return nil, driver.Fail("bad-op")
	}
	sc, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := sc.ExecContext(ctx, insertSQL, c.w.cfg.Prefix, id); err != nil {
		return nil, c.outcome(ctx, atCommit, err)
	}
	return nil, nil
}
