package orchestrator

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/atomicfile"
	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/session"
)

// toHistory converts a control-node wall time (Unix ns) to the history's
// clock: + the driver host's offset (host − control) − the history's origin
// (origin 0 = the history is on the wall clock already).
func toHistory(controlUnixNS int64, driver session.HostClock, originUnixNS int64) int64 {
	return controlUnixNS + driver.OffsetNS - originUnixNS
}

// stamp sets fault_epoch on every op the driver left unstamped whose
// [invoke_ts, complete_ts] overlaps a window [injected_at_ns,
// reverted_at_ns] (both on the history clock). An op without complete_ts
// (outcome unknown) may have taken effect at any later time, so its span
// is open-ended; a window never reverted stays open; a window never
// injected stamps nothing.
//
// Clock conversion is only good to ± uncertaintyNS, so an op is stamped
// only when it overlaps the window with both edges moved inward by the
// uncertainty; an op that overlaps with the edges moved outward but not
// inward could lie on either side and is left unstamped and counted
// ambiguous. When an op certainly overlaps several windows, the first in
// the slice wins. Ops the driver stamped itself are kept and not counted.
func stamp(ops []history.Op, windows []session.FaultWindow, uncertaintyNS int64) (stamped, ambiguous int) {
	u := max(uncertaintyNS, 0)
	for i := range ops {
		op := &ops[i]
		if op.FaultEpoch != "" {
			continue
		}
		end := int64(math.MaxInt64)
		if op.CompleteTS != nil {
			end = max(*op.CompleteTS, op.InvokeTS)
		}
		unsure := false
		for _, w := range windows {
			if w.InjectedAtNS == nil {
				continue
			}
			lo, hi := *w.InjectedAtNS, int64(math.MaxInt64)
			if w.RevertedAtNS != nil {
				hi = max(*w.RevertedAtNS, lo)
			}
			// One clock offset error e in [-u, u] moves both edges together:
			// the op meets [lo+e, hi+e] for every e iff it meets
			// [lo+u, hi-u] in this sense (for a window shorter than 2u, only
			// an op covering the whole uncertain zone does).
			if overlaps(op.InvokeTS, end, sat(lo, u), sat(hi, -u)) {
				op.FaultEpoch = w.FaultEpoch
				stamped++
				unsure = false
				break
			}
			if overlaps(op.InvokeTS, end, sat(lo, -u), sat(hi, u)) {
				unsure = true
			}
		}
		if unsure {
			ambiguous++
		}
	}
	return stamped, ambiguous
}

// overlaps reports whether the op span [a, b] meets [lo, hi]: a <= hi and
// b >= lo (with lo > hi, only a span covering [hi, lo] does).
func overlaps(a, b, lo, hi int64) bool {
	return a <= hi && b >= lo
}

// sat adds d to t, saturating at the int64 bounds (MaxInt64 means open).
func sat(t, d int64) int64 {
	if t == math.MaxInt64 {
		return t
	}
	if d > 0 && t > math.MaxInt64-d {
		return math.MaxInt64
	}
	if d < 0 && t < math.MinInt64-d {
		return math.MinInt64
	}
	return t + d
}

// errNoOrigin is StampFile's answer for a history whose ops cannot be put
// on the fault windows' timeline (see Placeable): nothing was stamped and
// the file was left as it was.
var errNoOrigin = errors.New("monotonic history without origin_unix_ns in its header: its ops cannot be placed against the fault windows (docs/driver-contract.md §7.2)")

// unixNSFloor is 2001-09-09 in Unix ns: a timestamp above it is a wall
// clock's (a monotonic clock would have to run for 31 years to reach it).
const unixNSFloor = int64(1e18)

// placeable reports whether the ops of a history with header meta can be
// put on one timeline with the fault windows: the header gives
// origin_unix_ns, or says clock "wall", or (no clock stated) the first op's
// invoke_ts is plainly Unix ns. A monotonic history without an origin is
// not, and must be neither stamped nor read for history signals.
func placeable(meta history.Meta, ops []history.Op) bool {
	switch {
	case meta.OriginUnixNS != 0 || meta.Clock == "wall":
		return true
	case meta.Clock == "" && len(ops) > 0:
		return ops[0].InvokeTS > unixNSFloor
	}
	return false
}

// malformedLinesError is what StampFile returns when some lines of the
// history are not valid ops: the file was still stamped and written, and
// those lines were kept as they were (the analyzer reports them again with
// file:line).
type malformedLinesError struct {
	Path  string
	Lines []error // one *fileline.Error per bad line
}

// Error names the first bad line and how many there are.
func (e *malformedLinesError) Error() string {
	if len(e.Lines) == 1 {
		return fmt.Sprintf("stamp %s: kept 1 malformed line as it was: %v", e.Path, e.Lines[0])
	}
	return fmt.Sprintf("stamp %s: kept %d malformed lines as they were, the first: %v", e.Path, len(e.Lines), e.Lines[0])
}

// rawPath is where StampFile keeps the driver's original history:
// history.jsonl → history.raw.jsonl beside it.
func rawPath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".raw.jsonl"
}

// epochField finds the fault_epoch column holding null or "".
var epochField = lazyre.New(`"fault_epoch"\s*:\s*(null|"")`)

// stampFile rewrites a dst-history/1 file in place with Stamp applied,
// after saving the driver's original as <name>.raw.jsonl beside it (see
// RawPath). A history that is not Placeable is not stamped: the error wraps
// ErrNoOrigin. When the .raw.jsonl already exists it is the source, so
// stamping twice gives the same file and the original is never lost.
//
// The header, blank lines, malformed lines and every op Stamp did not
// change are kept byte for byte; a stamped op keeps its bytes except the
// fault_epoch value, and falls back to the history package's writer when
// its fault_epoch cannot be filled in place. A malformed line is
// kept as it is and reported in a *MalformedLinesError, with the file
// written all the same. The rewrite goes through a temporary file and a
// rename, so a crash leaves either the old or the new history.
func stampFile(path string, windows []session.FaultWindow, uncertaintyNS int64) (stamped, ambiguous int, err error) {
	raw := rawPath(path)
	data, err := os.ReadFile(raw)
	switch {
	case errors.Is(err, os.ErrNotExist):
		data, err = os.ReadFile(path)
		if err != nil {
			return 0, 0, fmt.Errorf("stamp history: %w", err)
		}
		if err := atomicfile.Write(raw, data, 0o644); err != nil {
			return 0, 0, fmt.Errorf("stamp history: save the driver's original: %w", err)
		}
	case err != nil:
		return 0, 0, fmt.Errorf("stamp history: read the driver's original: %w", err)
	}
	// Positions name the file the user knows; the bytes are the original's.
	meta, ops, bad := history.ReadBytes(data, path)
	if len(ops) > 0 && !placeable(meta, ops) {
		return 0, 0, fmt.Errorf("stamp %s: %w", path, errNoOrigin)
	}
	unstamped := make([]bool, len(ops))
	for i := range ops {
		unstamped[i] = ops[i].FaultEpoch == ""
	}
	stamped, ambiguous = stamp(ops, windows, uncertaintyNS)
	byLine := make(map[int]*history.Op, stamped) // the ops Stamp changed
	for i := range ops {
		if unstamped[i] && ops[i].FaultEpoch != "" {
			byLine[ops[i].Line] = &ops[i]
		}
	}
	var out bytes.Buffer
	out.Grow(len(data) + stamped*16)
	rest := data
	for line := 1; len(rest) > 0; line++ {
		cur, next, found := bytes.Cut(rest, []byte{'\n'})
		rest = next
		op := byLine[line]
		if op == nil {
			out.Write(cur)
		} else {
			out.Write(stampLine(cur, op))
		}
		if found {
			out.WriteByte('\n')
		}
	}
	if err := atomicfile.Write(path, out.Bytes(), 0o644); err != nil {
		return stamped, ambiguous, fmt.Errorf("stamp history: %w", err)
	}
	if len(bad) > 0 {
		return stamped, ambiguous, &malformedLinesError{Path: path, Lines: bad}
	}
	return stamped, ambiguous, nil
}

// stampLine returns line with op's fault_epoch written into it, touching
// nothing else when the line has exactly one empty fault_epoch column (the
// reader requires the column, so a valid op has at least one); otherwise,
// or when the edit would not read back as op, it is the history writer's
// rendering of op.
func stampLine(line []byte, op *history.Op) []byte {
	cr := bytes.HasSuffix(line, []byte{'\r'})
	body := bytes.TrimSuffix(line, []byte{'\r'})
	epoch := history.AppendJSON(nil, &history.Op{FaultEpoch: op.FaultEpoch})
	epoch = epoch[bytes.LastIndex(epoch, []byte(`"fault_epoch":`)) : len(epoch)-1]
	var edited []byte
	if locs := epochField.FindAllIndex(body, -1); len(locs) == 1 {
		edited = append(append(append([]byte(nil), body[:locs[0][0]]...), epoch...), body[locs[0][1]:]...)
	}
	if edited == nil || !sameOp(edited, op) {
		edited = history.AppendJSON(nil, op)
	}
	if cr {
		edited = append(edited, '\r')
	}
	return edited
}

// sameOp reports whether line reads back as op.
func sameOp(line []byte, op *history.Op) bool {
	_, ops, bad := history.ReadBytes(line, "")
	if len(ops) != 1 || len(bad) != 0 {
		return false
	}
	got := ops[0]
	return bytes.Equal(history.AppendJSON(nil, &got), history.AppendJSON(nil, op))
}

// shareHistory is one client host's collected history and its clock
// against the control node's.
type shareHistory struct {
	host          string
	path          string
	offsetNS      int64 // the host's clock − the control node's
	uncertaintyNS int64 // how far offsetNS may be off, drift included
}

// mergeShares writes the shares' histories as one history at out, on the
// control node's clock (docs/dst-run.md §7, collect): each op's times go
// from its host's clock to the control node's (+ its history's origin −
// its host's offset); the merged origin is the earliest share's. One
// host's clock error could order two hosts' ops the wrong way round, so
// every op is widened by its host's uncertainty — invoked that much
// earlier, completed that much later — which only removes real-time
// orders a checker could rely on: a clock error can hide an anomaly, it
// cannot make one. Op and process ids get their host's name in front, so
// two drivers' ids never meet. It returns the ops written and how far a
// window's edge may be off against them: the largest host uncertainty,
// twice (its clock, and the widening).
func mergeShares(shares []shareHistory, out string) (int, int64, error) {
	type loaded struct {
		sh   shareHistory
		meta history.Meta
		ops  []history.Op
	}
	var ls []loaded
	origin, u := int64(math.MaxInt64), int64(0)
	for _, sh := range shares {
		meta, ops, bad, err := history.ReadFile(sh.path)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", sh.host, err)
		}
		if len(bad) > 0 {
			return 0, 0, fmt.Errorf("%s: %w", sh.host, bad[0])
		}
		if !placeable(meta, ops) {
			return 0, 0, fmt.Errorf("%s: its history has neither origin_unix_ns nor wall-clock times: it cannot be put on the others' clock", sh.host)
		}
		ls = append(ls, loaded{sh, meta, ops})
		origin = min(origin, meta.OriginUnixNS-sh.offsetNS)
		u = max(u, sh.uncertaintyNS)
	}
	var all []history.Op
	for _, l := range ls {
		shift := l.meta.OriginUnixNS - l.sh.offsetNS - origin
		w := l.sh.uncertaintyNS
		for _, op := range l.ops {
			op.InvokeTS = op.InvokeTS + shift - w
			if op.CompleteTS != nil {
				c := *op.CompleteTS + shift + w
				op.CompleteTS = &c
			}
			op.OpID = l.sh.host + "/" + op.OpID
			op.ProcessID = l.sh.host + "/" + op.ProcessID
			all = append(all, op)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].InvokeTS < all[j].InvokeTS })
	meta := ls[0].meta
	meta.Clock, meta.OriginUnixNS = "monotonic", origin
	if origin == 0 {
		meta.Clock = "wall"
	}
	var b []byte
	b = append(history.AppendMeta(b, meta), '\n')
	for i := range all {
		b = append(history.AppendJSON(b, &all[i]), '\n')
	}
	if err := atomicfile.Write(out, b, 0o644); err != nil {
		return 0, 0, fmt.Errorf("write the merged history: %w", err)
	}
	return len(all), 2 * u, nil
}
