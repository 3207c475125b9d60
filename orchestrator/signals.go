package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/oneline"
	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/internal/stats"
	"github.com/dstgen/dstgen/nemesis"
	"github.com/dstgen/dstgen/session"
)

// Evidence kinds of the victim-side signals the orchestrator captures
// (docs/nemesis.md §7); the injector-side kinds belong to the nemeses.
const (
	kindHistoryErrorRate = "history_error_rate"
	kindLogMarker        = "log_marker"
	kindMetric           = "metric"
	kindLeaderChange     = "leader_change"
)

// historySignal is the victim-side evidence read from the history: the
// error+timeout rate of ops invoked during window i of wins against the
// rate over an equally long stretch of fault-free time just before it —
// the spans of the other windows are skipped, so back-to-back windows
// (every == for) never make one window the baseline of the next (wins'
// times on the history clock).
//
// Verdict: changed when the window has ≥ 2 failed ops and at least twice
// the before-rate (any rate above a before-rate of 0 counts); unchanged
// otherwise; ambiguous when ≥ 2 ops failed in the window but no op was
// invoked in its baseline (nothing to compare with); absent when the
// window was never injected or no op was invoked in it. A window never
// reverted runs to the last op.
func historySignal(ops []history.Op, wins []session.FaultWindow, i int) session.Evidence {
	w := wins[i]
	ev := session.Evidence{Kind: kindHistoryErrorRate, Name: w.FaultEpoch, Verdict: session.SignalAbsent}
	if w.InjectedAtNS == nil {
		ev.Raw = "window never injected"
		return ev
	}
	lo := *w.InjectedAtNS
	hi := int64(math.MinInt64)
	if w.RevertedAtNS != nil {
		hi = *w.RevertedAtNS
	} else {
		for i := range ops {
			hi = max(hi, ops[i].InvokeTS)
		}
	}
	if hi < lo {
		hi = lo
	}
	base := faultFree(wins, i, lo, max(hi-lo, 1))
	var nIn, fIn, nBefore, fBefore int
	for i := range ops {
		op := &ops[i]
		failed := op.TimeoutMarker || op.Error != ""
		switch t := op.InvokeTS; {
		case t >= lo && t <= hi:
			nIn++
			if failed {
				fIn++
			}
		case t < lo && base.holds(t):
			nBefore++
			if failed {
				fBefore++
			}
		}
	}
	ev.Raw = fmt.Sprintf("window: %d of %d ops failed; the %s of fault-free time before: %d of %d", fIn, nIn, time.Duration(hi-lo), fBefore, nBefore)
	if nIn == 0 {
		return ev
	}
	rIn := float64(fIn) / float64(nIn)
	rBefore := 0.0
	if nBefore > 0 {
		rBefore = float64(fBefore) / float64(nBefore)
	}
	ev.Before, ev.After = jsonNumber(rBefore), jsonNumber(rIn)
	d := rIn - rBefore
	ev.Delta = &d
	switch {
	case fIn < 2:
		ev.Verdict = session.SignalUnchanged
	case nBefore == 0:
		ev.Verdict = session.SignalAmbiguous
	case rIn > rBefore && rIn >= 2*rBefore:
		ev.Verdict = session.SignalChanged
	default:
		ev.Verdict = session.SignalUnchanged
	}
	return ev
}

// spans is a set of [from, to) stretches of the history clock.
type spans [][2]int64

func (s spans) holds(t int64) bool {
	for _, sp := range s {
		if t >= sp[0] && t < sp[1] {
			return true
		}
	}
	return false
}

// faultFree is length of fault-free time just before lo, walking back
// over the spans of every window but i (injection to revert; an unreverted
// one to lo), as stretches; shorter when the history starts first.
func faultFree(wins []session.FaultWindow, i int, lo, length int64) spans {
	var busy spans
	for j, w := range wins {
		if j == i || w.InjectedAtNS == nil || *w.InjectedAtNS >= lo {
			continue
		}
		end := lo
		if w.RevertedAtNS != nil {
			end = min(*w.RevertedAtNS, lo)
		}
		busy = append(busy, [2]int64{*w.InjectedAtNS, end})
	}
	var out spans
	cur, left := lo, length
	for k := 0; left > 0 && k < 2*len(busy)+2; k++ {
		// The latest busy span ending at or before cur, if it covers cur.
		next := int64(math.MinInt64)
		for _, b := range busy {
			if b[0] < cur && b[1] >= cur {
				cur = b[0] // inside a window: jump over it
			}
		}
		for _, b := range busy {
			if b[1] <= cur && b[1] > next {
				next = b[1]
			}
		}
		from := cur - left
		if next > from {
			from = next
		}
		if from < cur {
			out = append(out, [2]int64{from, cur})
			left -= cur - from
		}
		if next == math.MinInt64 {
			break
		}
		cur = next
		for _, b := range busy {
			if b[1] == next {
				cur = min(cur, b[0])
			}
		}
	}
	return out
}

// hostResult is one host's answer of a per-host round trip.
type hostResult struct {
	out string
	err error
}

// eachHost runs script(h) on every host at once (one round trip each) and
// returns the outputs by index; a host whose script is "" is skipped.
func eachHost(ctx context.Context, x nemesis.Exec, hosts []nemesis.Host, script func(nemesis.Host) string) []hostResult {
	res := make([]hostResult, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		s := script(h)
		if s == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := x.Run(ctx, h.Host, s)
			if err != nil {
				err = fmt.Errorf("host %s: %w", h.Name, err)
			}
			res[i] = hostResult{out: out, err: err}
		}()
	}
	wg.Wait()
	return res
}

func logsOf(h nemesis.Host) []string {
	if h.SUT == nil {
		return nil
	}
	return h.SUT.Logs
}

// logSizes records the current size in bytes of each SUT log file
// (Host.SUT.Logs) on each host, one round trip per host; a file that does
// not exist yet counts as 0, so all of it is new to LogSignal. Hosts
// without logs are left out of the map (host name → log path → size).
func logSizes(ctx context.Context, x nemesis.Exec, hosts []nemesis.Host) (map[string]map[string]int64, error) {
	res := eachHost(ctx, x, hosts, func(h nemesis.Host) string {
		var b strings.Builder
		for _, f := range logsOf(h) {
			fmt.Fprintf(&b, "{ wc -c < %s; } 2>/dev/null || echo 0\n", shell.Quote(f))
		}
		return b.String()
	})
	out := map[string]map[string]int64{}
	var errs []error
	for i, h := range hosts {
		logs := logsOf(h)
		if len(logs) == 0 {
			continue
		}
		if res[i].err != nil {
			errs = append(errs, fmt.Errorf("log sizes: %w", res[i].err))
			continue
		}
		lines := strings.Fields(res[i].out)
		if len(lines) != len(logs) {
			errs = append(errs, fmt.Errorf("log sizes: host %s: want %d sizes, got %q", h.Name, len(logs), oneline.Cut(res[i].out, 120)))
			continue
		}
		m := make(map[string]int64, len(logs))
		for j, f := range logs {
			n, err := strconv.ParseInt(lines[j], 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("log sizes: host %s: %s: size %q is not a number", h.Name, f, lines[j]))
				continue
			}
			m[f] = n
		}
		out[h.Name] = m
	}
	return out, errors.Join(errs...)
}

// maxMarkerLine bounds the first matching line kept as raw evidence.
const maxMarkerLine = 300

// logSignal counts the lines matching the extended regular expression re
// (grep -E) written to each host's SUT logs since the sizes LogSizes took
// (`tail -c +N | grep -cE`), one round trip per host, every value quoted.
// A log shorter than its recorded size was rotated or truncated and is
// read from its start; a host missing from since (its size before the
// fault is unknown) is not read at all, never from its start. Kind "log_marker", Name the regex, Before 0, After
// the count, Verdict changed when ≥ 1, unchanged when 0 on every host,
// absent when no host has a log to read, ambiguous when a host could not be
// read and nothing matched elsewhere; Raw the first matching line per host.
// A regex grep rejects is an error.
func logSignal(ctx context.Context, x nemesis.Exec, hosts []nemesis.Host, since map[string]map[string]int64, re string) (session.Evidence, error) {
	ev := session.Evidence{Kind: kindLogMarker, Name: re, Before: json.RawMessage("0"), Verdict: session.SignalAbsent}
	qre := shell.Quote(re)
	res := eachHost(ctx, x, hosts, func(h nemesis.Host) string {
		if _, known := since[h.Name]; !known {
			return "" // its size before the fault is unknown: nothing it logs is known to be new
		}
		var b strings.Builder
		for _, f := range logsOf(h) {
			start := since[h.Name][f] + 1
			qf := shell.Quote(f)
			// Two lines per log: the count (or ERR when grep rejects the
			// regex) and the first match, cut and flattened.
			fmt.Fprintf(&b, "s=$( { wc -c < %s; } 2>/dev/null || echo 0); n=%d; [ \"$s\" -lt $((n-1)) ] && n=1\n", qf, start)
			fmt.Fprintf(&b, "c=$(tail -c +\"$n\" %s 2>/dev/null | grep -cE -e %s); st=$?; [ \"$st\" -gt 1 ] && c=ERR\n", qf, qre)
			fmt.Fprintf(&b, "m=$(tail -c +\"$n\" %s 2>/dev/null | grep -m1 -E -e %s 2>/dev/null | head -c %d | tr -d '\\r\\n')\n", qf, qre, maxMarkerLine)
			b.WriteString("printf '%s\\n%s\\n' \"$c\" \"$m\"\n")
		}
		return b.String()
	})
	var (
		total int
		raw   []string
		errs  []error
		read  bool
	)
	for i, h := range hosts {
		logs := logsOf(h)
		if len(logs) == 0 {
			continue
		}
		if _, known := since[h.Name]; !known {
			errs = append(errs, fmt.Errorf("log marker %q: host %s: its log size before the fault is unknown (that reading failed): not read", re, h.Name))
			continue
		}
		if res[i].err != nil {
			errs = append(errs, fmt.Errorf("log marker %q: %w", re, res[i].err))
			continue
		}
		lines := strings.Split(strings.TrimSuffix(res[i].out, "\n"), "\n")
		if len(lines) != 2*len(logs) {
			errs = append(errs, fmt.Errorf("log marker %q: host %s: unexpected output %q", re, h.Name, oneline.Cut(res[i].out, 120)))
			continue
		}
		first := ""
		for j := range logs {
			c := strings.TrimSpace(lines[2*j])
			if c == "ERR" {
				return ev, fmt.Errorf("log marker %q: grep -E rejects the regular expression on host %s", re, h.Name)
			}
			n, err := strconv.Atoi(c)
			if err != nil {
				errs = append(errs, fmt.Errorf("log marker %q: host %s: count %q is not a number", re, h.Name, c))
				continue
			}
			read = true
			total += n
			if first == "" && lines[2*j+1] != "" {
				first = lines[2*j+1]
			}
		}
		if first != "" {
			raw = append(raw, h.Name+": "+first)
		}
	}
	ev.After = jsonNumber(float64(total))
	d := float64(total)
	ev.Delta = &d
	ev.Raw = strings.Join(raw, "\n")
	switch {
	case total > 0:
		ev.Verdict = session.SignalChanged
	case len(errs) > 0:
		ev.Verdict = session.SignalAmbiguous
	case read:
		ev.Verdict = session.SignalUnchanged
	}
	return ev, errors.Join(errs...)
}

// metricValue runs cmd (the scenario's own shell command, run as written)
// on each host at once and sums the number each prints on its last
// non-empty line (first field). A host that fails or prints no number is
// an error naming it.
func metricValue(ctx context.Context, x nemesis.Exec, hosts []nemesis.Host, cmd string) (float64, error) {
	if strings.TrimSpace(cmd) == "" {
		return 0, errors.New("metric: empty command")
	}
	res := eachHost(ctx, x, hosts, func(nemesis.Host) string { return cmd })
	var sum float64
	var errs []error
	for i, h := range hosts {
		if res[i].err != nil {
			errs = append(errs, fmt.Errorf("metric: %w", res[i].err))
			continue
		}
		v, err := lastNumber(res[i].out)
		if err != nil {
			errs = append(errs, fmt.Errorf("metric: host %s: %w", h.Name, err))
			continue
		}
		sum += v
	}
	return sum, errors.Join(errs...)
}

// lastNumber parses the first field of the last non-empty line of out.
func lastNumber(out string) (float64, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	f := strings.Fields(lines[len(lines)-1])
	if len(f) == 0 {
		return 0, errors.New("the command printed nothing")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("the command printed %q, not a number", oneline.Cut(lines[len(lines)-1], 80))
	}
	return v, nil
}

// metricSignal compares two readings of a metric: expect "rise" (the
// default, ""), "fall" or "change". Kind "metric", Name name, Before and
// After the readings, Delta after − before; Verdict changed when the
// reading moved the expected way, unchanged otherwise, ambiguous for an
// unknown expect.
func metricSignal(name string, before, after float64, expect string) session.Evidence {
	d := after - before
	ev := session.Evidence{Kind: kindMetric, Name: name, Before: jsonNumber(before), After: jsonNumber(after), Delta: &d, Verdict: session.SignalUnchanged}
	var moved bool
	switch expect {
	case "", "rise":
		moved = after > before
	case "fall":
		moved = after < before
	case "change":
		moved = after != before
	default:
		ev.Verdict = session.SignalAmbiguous
		ev.Raw = fmt.Sprintf("unknown expect %q (rise, fall or change)", expect)
		return ev
	}
	if moved {
		ev.Verdict = session.SignalChanged
	}
	return ev
}

// leaderSignal compares the leader named before injection with the one
// named after: Kind "leader_change", Before/After the names, Verdict
// changed when after differs from before, unchanged when it is the same,
// absent when no leader could be read after.
func leaderSignal(before, after string) session.Evidence {
	ev := session.Evidence{Kind: kindLeaderChange, Before: jsonString(before), After: jsonString(after)}
	switch {
	case after == "":
		ev.Verdict = session.SignalAbsent
	case after != before:
		ev.Verdict = session.SignalChanged
	default:
		ev.Verdict = session.SignalUnchanged
	}
	return ev
}

// allStarted is the latest of the drivers' first invokes, each driver's
// ops being those whose process id mergeShares prefixed with its name;
// nil with fewer than two drivers, or when one invoked nothing (then
// every interval is judged: a share that never ran is a short load).
func allStarted(ops []history.Op, drivers []string) *int64 {
	if len(drivers) < 2 {
		return nil
	}
	first := make(map[string]int64, len(drivers))
	for _, d := range drivers {
		first[d] = math.MaxInt64
	}
	for i := range ops {
		host, _, ok := strings.Cut(ops[i].ProcessID, "/")
		if t, seen := first[host]; ok && seen {
			first[host] = min(t, ops[i].InvokeTS)
		}
	}
	all := int64(math.MinInt64)
	for _, t := range first {
		if t == math.MaxInt64 {
			return nil
		}
		all = max(all, t)
	}
	return &all
}

// maxIntervals bounds the throughput series; a longer run gets a wider
// interval (recorded in interval_ns) rather than an unbounded array.
const maxIntervals = 100000

// throughput fills the run.json workload fields from the history:
// ops_produced, first_op_ns (the earliest invoke), last_op_ns (the latest
// invoke or completion), interval_ns (interval, 1 s when ≤ 0) and the
// throughput[] series {start_ns, ops, errors, p50_ms, p95_ms, p99_ms}, ops
// bucketed by invoke time from first_op_ns rounded down to the interval,
// as the analyzer's charts are; a run longer than 100000 intervals gets a
// wider interval. Errors count errors and timeouts; percentiles are over
// completed ops. With several client hosts (drivers, whose names prefix
// the merged history's process ids) all_started_ns is the latest of
// their first invokes. Other workload fields are left zero.
func throughput(ops []history.Op, interval time.Duration, drivers []string) session.Workload {
	step := int64(interval)
	if step <= 0 {
		step = int64(time.Second)
	}
	w := session.Workload{OpsProduced: len(ops)}
	if len(ops) == 0 {
		w.IntervalNS = step
		return w
	}
	lo, hi, last := int64(math.MaxInt64), int64(math.MinInt64), int64(math.MinInt64)
	for i := range ops {
		t := ops[i].InvokeTS
		lo, hi, last = min(lo, t), max(hi, t), max(last, t)
		if c := ops[i].CompleteTS; c != nil {
			last = max(last, *c)
		}
	}
	w.FirstOpNS, w.LastOpNS = &lo, &last
	w.AllStartedNS = allStarted(ops, drivers)
	// Timestamps this far from zero are recorder garbage (history
	// validation reports them): no series rather than an overflow, as the
	// analyzer's charts do.
	const limit = int64(1) << 60
	if lo < -limit || hi > limit {
		w.IntervalNS = step
		return w
	}
	start := stats.FloorTo(lo, step)
	if (hi-start)/step >= maxIntervals {
		step = (hi-start)/maxIntervals + 1
		start = stats.FloorTo(lo, step)
	}
	w.IntervalNS = step
	n := int((hi-start)/step) + 1
	series := make([]session.Interval, n)
	lats := make([][]float64, n)
	for i := range ops {
		op := &ops[i]
		b := int((op.InvokeTS - start) / step)
		series[b].Ops++
		if op.TimeoutMarker || op.Error != "" {
			series[b].Errors++
		}
		if op.CompleteTS != nil {
			lats[b] = append(lats[b], float64(*op.CompleteTS-op.InvokeTS)/1e6)
		}
	}
	for b := range series {
		series[b].StartNS = start + int64(b)*step
		sort.Float64s(lats[b])
		series[b].P50Ms = stats.Percentile(lats[b], 0.50)
		series[b].P95Ms = stats.Percentile(lats[b], 0.95)
		series[b].P99Ms = stats.Percentile(lats[b], 0.99)
	}
	w.Throughput = series
	return w
}

func jsonNumber(v float64) json.RawMessage {
	return json.RawMessage(strconv.FormatFloat(v, 'g', -1, 64))
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}
