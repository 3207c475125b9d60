package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dstgen/dstgen/internal/atomicfile"
)

// finalState is the final-state dump in the format the no-lost-ack and
// reconciliation checkers read (docs/history-and-checkers.md §5,
// checker.FinalState): keys holds what every member that answered agrees
// on, replicas each member's own rows keyed by its endpoint (the
// node_seen of its ops).
type finalState struct {
	Keys     map[string]json.RawMessage            `json:"keys"`
	Replicas map[string]map[string]json.RawMessage `json:"replicas"`
}

// dumpReport says how far the dump got, for the summary line.
type dumpReport struct {
	members, reached, keys, diverged int
	converged                        bool
	unreachable                      []string
}

// convergePause is the wait between two rounds of reads while the
// members catch up.
const convergePause = 200 * time.Millisecond

// memberRows reads the run's rows from one member as history keys and
// their JSON values: in durability mode one key, the sorted list of ids;
// in append mode each key's list. wsrep_sync_wait=1 makes a Galera member
// apply every write set committed before the read first (a server without
// wsrep ignores it).
func (w *workload) memberRows(ctx context.Context, e endpoint) (map[string]json.RawMessage, error) {
	db, err := w.connector(e, w.database)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	sc, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer sc.Close()
	_, _ = sc.ExecContext(ctx, "SET SESSION wsrep_sync_wait = 1") // best effort: older servers lack it
	got := map[string]json.RawMessage{}
	if w.mode == modeDurability {
		ids, err := queryInts(ctx, sc, "SELECT id FROM "+durableTable+" WHERE p = ? ORDER BY id", w.cfg.Prefix)
		if err != nil {
			return nil, err
		}
		if len(ids) > 0 {
			b, _ := json.Marshal(ids) // []int64 always marshals
			got[w.idsKey()] = b
		}
		return got, nil
	}
	rows, err := sc.QueryContext(ctx, "SELECT k, v FROM "+appendTable+" WHERE p = ? ORDER BY k", w.cfg.Prefix)
	if noTable(err) {
		return got, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", appendTable, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k int64
		var v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("read %s: %w", appendTable, err)
		}
		var b []byte
		if list, err := parseList(v); err == nil {
			b, _ = json.Marshal(list)
		} else {
			b, _ = json.Marshal(v) // kept as text, so the dump still shows it
		}
		got[w.key(k)] = b
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", appendTable, err)
	}
	return got, nil
}

// queryInts reads one integer column; a missing table is no rows.
func queryInts(ctx context.Context, sc *sql.Conn, q string, args ...any) ([]int64, error) {
	rows, err := sc.QueryContext(ctx, q, args...)
	if noTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", durableTable, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("read %s: %w", durableTable, err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

func noTable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == erNoSuchTable
}

// dumpFinal reads the run's rows from every member, round after round
// until two rounds in a row find every member answering with the same
// rows (or half the bound has passed), so a member still applying is not
// mistaken for a diverged one. keys holds a key only when every member
// that answered has it with the same value: an acked id missing on any
// member is then a lost ack for no-lost-ack, and replicas show which.
func dumpFinal(ctx context.Context, w *workload) (finalState, dumpReport, error) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.FinalTimeout)
	defer cancel()
	rep := dumpReport{members: len(w.endpoints)}
	reqTimeout := max(w.cfg.Timeout, 5*time.Second)
	ranges := make([]map[string]json.RawMessage, len(w.endpoints))
	errs := make([]error, len(w.endpoints))
	round := func() {
		var wg sync.WaitGroup
		for i, e := range w.endpoints {
			wg.Go(func() {
				rctx, rcancel := context.WithTimeout(ctx, reqTimeout)
				defer rcancel()
				ranges[i], errs[i] = w.memberRows(rctx, e)
			})
		}
		wg.Wait()
	}
	convergeBy := time.Now().Add(w.cfg.FinalTimeout / 2)
	var prev []map[string]json.RawMessage
	for r := 0; r < int(w.cfg.FinalTimeout/convergePause)+1; r++ {
		round()
		same := !slices.ContainsFunc(errs, func(e error) bool { return e != nil })
		for _, m := range ranges[1:] {
			same = same && equalRows(m, ranges[0])
		}
		if same && prev != nil && equalRows(prev[0], ranges[0]) {
			rep.converged = true
			break
		}
		if !time.Now().Before(convergeBy) || ctx.Err() != nil {
			break
		}
		prev = slices.Clone(ranges)
		select {
		case <-ctx.Done():
		case <-time.After(convergePause):
		}
	}
	fs := finalState{Keys: map[string]json.RawMessage{}, Replicas: map[string]map[string]json.RawMessage{}}
	var reached []map[string]json.RawMessage
	for i, e := range w.endpoints {
		if errs[i] != nil {
			rep.unreachable = append(rep.unreachable, fmt.Sprintf("%s (%v)", e.name, errs[i]))
			continue
		}
		fs.Replicas[e.name] = ranges[i]
		reached = append(reached, ranges[i])
	}
	rep.reached = len(reached)
	if len(reached) == 0 {
		return fs, rep, fmt.Errorf("final state: no member answered: %s", strings.Join(rep.unreachable, "; "))
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
			u, has := r[k]
			agreed = agreed && has && bytes.Equal(v, u)
		}
		switch {
		case agreed:
			fs.Keys[k] = v
		case w.mode == modeDurability:
			// A set: what every member has, so a missing id is a lost
			// ack, not a missing key.
			fs.Keys[k] = intersect(reached, k)
			rep.diverged++
		default:
			rep.diverged++
		}
	}
	rep.keys = len(fs.Keys)
	return fs, rep, nil
}

func equalRows(a, b map[string]json.RawMessage) bool {
	return maps.EqualFunc(a, b, func(x, y json.RawMessage) bool { return bytes.Equal(x, y) })
}

// intersect is the sorted list of ids that every member's list for k
// holds.
func intersect(members []map[string]json.RawMessage, k string) json.RawMessage {
	count := map[int64]int{}
	for _, m := range members {
		var ids []int64
		_ = json.Unmarshal(m[k], &ids) // absent: no ids
		for _, id := range slices.Compact(slices.Sorted(slices.Values(ids))) {
			count[id]++
		}
	}
	all := []int64{}
	for id, n := range count {
		if n == len(members) {
			all = append(all, id)
		}
	}
	slices.Sort(all)
	b, _ := json.Marshal(all)
	return b
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
func (w *workload) WriteFinal(ctx context.Context) error {
	fs, rep, err := dumpFinal(ctx, w)
	if err == nil {
		err = writeFinal(w.cfg.Final, fs)
	}
	w.cfg.Logf("final=%s mode=%s members=%d/%d keys=%d diverged=%d converged=%t prefix=%s",
		w.cfg.Final, w.mode, rep.reached, rep.members, rep.keys, rep.diverged, rep.converged, w.cfg.Prefix)
	for _, u := range rep.unreachable {
		w.cfg.Logf("note: final state without member %s", u)
	}
	return err
}
