package analyze

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/session"
	"github.com/dstgen/dstgen/testsupport/fixture"
)

// step is one closed-loop client's behaviour at time t (seconds): an op
// of latency lat (< 0: no op) with an unknown outcome or not, and the
// time of its next invoke.
type step func(t float64) (lat float64, unknown bool, next float64)

// normalStep: an op every half second, answered in 4 ms.
func normalStep(t float64) (float64, bool, float64) { return 0.004, false, t + 0.5 }

// blocked makes every op invoked in [from, to) wait 2.5 s: answered then
// (an error answer) or, unknown, given up then.
func blocked(from, to float64, unknown bool) step {
	return func(t float64) (float64, bool, float64) {
		if t >= from && t < to {
			return 2.5, unknown, t + 2.5
		}
		return normalStep(t)
	}
}

// closedLoopOps runs 5 clients of s for 60 s, client i starting at 0.1·i
// s; time stamps are ns from the history's zero.
func closedLoopOps(s step) []history.Op {
	var ops []history.Op
	for i := range 5 {
		for t := 0.1 * float64(i); t < 59.5; {
			lat, unknown, next := s(t)
			if lat >= 0 {
				op := history.Op{OpID: fmt.Sprint(len(ops) + 1), ProcessID: fmt.Sprintf("c%d.%d", i, len(ops)), InvokeTS: int64(t * 1e9),
					OpType: "write", Key: "k", Input: json.RawMessage(fmt.Sprint(len(ops) + 1)), NodeSeen: "kvnode-1"}
				switch end := int64((t + lat) * 1e9); {
				case unknown:
					op.TimeoutMarker, op.Error = true, "timeout"
				case lat > 1:
					op.CompleteTS, op.Error = &end, "unavailable"
				default:
					op.CompleteTS = &end
				}
				ops = append(ops, op)
			}
			t = next
		}
	}
	return ops
}

// seriesOf buckets ops by invoke time into 1 s intervals from 0, as the
// orchestrator fills run.json's throughput series.
func seriesOf(ops []history.Op) (ser []session.Interval, last int64) {
	for _, o := range ops {
		b := int(o.InvokeTS / 1e9)
		for len(ser) <= b {
			ser = append(ser, session.Interval{StartNS: int64(len(ser)) * 1e9})
		}
		ser[b].Ops++
		last = max(last, o.InvokeTS)
		if o.CompleteTS != nil {
			last = max(last, *o.CompleteTS)
		}
	}
	return ser, last
}

// Red flag 1 and ops in flight (docs/verdicts.md §6 check 1): clients
// blocked on a cut-off node are the fault landing, so an interval in which
// no op was invoked but ops invoked before it were still in flight is
// activity, not a stall. A real stall — nothing invoked and nothing in
// flight — still fails it, inside a fault window or not.
func TestIntendedLoadCountsOpsInFlight(t *testing.T) {
	cases := []struct {
		name      string
		s         step
		timeoutNS int64   // the header's op_timeout_ns
		planned   float64 // 0: no planned rate
		want      string
		evidence  string
	}{
		{"clients blocked in the window, answered after it", blocked(20, 30, false), 0, 10, CheckPass, "inside a fault window"},
		{"clients blocked in the window, timed out, timeout declared", blocked(20, 30, true), 2.5e9, 10, CheckPass, "inside a fault window"},
		{"clients blocked in the window, timed out, no timeout declared", blocked(20, 30, true), 0, 10, CheckFail, "declares no op_timeout_ns"},
		{"blocked outside any window, no planned rate", blocked(40, 45, true), 2.5e9, 0, CheckPass, "ops in flight"},
		{"blocked outside any window, below the planned rate", blocked(40, 45, true), 2.5e9, 10, CheckFail, "0 ops/s at +41s"},
		{"a stall in the window: nothing invoked, nothing in flight", func(t float64) (float64, bool, float64) {
			if t >= 24 && t < 26 {
				return -1, false, 26
			}
			return normalStep(t)
		}, 2.5e9, 10, CheckFail, "0 ops/s at +24s"},
		{"in flight at the interval's start only", func(t float64) (float64, bool, float64) {
			if t >= 23.5 && t < 24 {
				return 0.3, false, 25
			}
			return normalStep(t)
		}, 2.5e9, 10, CheckFail, "0 ops/s at +24s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ops := closedLoopOps(c.s)
			g := baseAudit("S1")
			g.windows = []win{{epoch: "S1-w1", nemesis: "partition-full", target: "kvnode-1", at: 20, dur: 10}}
			edit := func(dir string) {
				adir := fixture.ArtifactDir(dir, "S1")
				f, err := os.Create(filepath.Join(adir, "history.jsonl"))
				if err != nil {
					t.Fatal(err)
				}
				meta := &history.Meta{Scenario: "S1", Seed: 1, Clock: "monotonic", Recorder: "in-process", Schema: history.Schema, OpTimeoutNS: c.timeoutNS}
				if err := fixture.WriteHistory(f, meta, ops); err != nil {
					t.Fatal(err)
				}
				f.Close()
				data, err := os.ReadFile(filepath.Join(adir, "run.json"))
				if err != nil {
					t.Fatal(err)
				}
				var r session.Run
				if err := json.Unmarshal(data, &r); err != nil {
					t.Fatal(err)
				}
				ser, last := seriesOf(ops)
				first := ops[0].InvokeTS
				r.Workload.Throughput, r.Workload.IntervalNS, r.Workload.PlannedRate = ser, 1e9, c.planned
				r.Workload.OpsProduced, r.Workload.FirstOpNS, r.Workload.LastOpNS = len(ops), &first, &last
				data, _ = json.MarshalIndent(&r, "", "  ")
				writeFile(t, filepath.Join(adir, "run.json"), data)
			}
			rep := analyzeOne(t, linPlan, g, edit)
			s := findResult(rep, "S1")
			if s == nil {
				t.Fatal("no S1")
			}
			if got := s.RedFlags[0]; got.Status != c.want || !strings.Contains(got.Evidence, c.evidence) {
				t.Errorf("red flag 1 = %s (%s), want %s citing %q", got.Status, got.Evidence, c.want, c.evidence)
			}
		})
	}
}
