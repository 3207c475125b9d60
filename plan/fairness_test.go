package plan

import (
	"errors"
	"math"
	"testing"
	"time"
)

// The one fairness grammar: the forms the checker's former parser took and
// the plan fixture's form with a unit all parse, a partial formula comes back
// with ErrIncomplete, and bad bounds are rejected.
func TestParseFairnessGrammar(t *testing.T) {
	tests := []struct {
		name       string
		formula    string
		incomplete bool
		bad        bool
	}{
		{"fixture form with unit", "group=tenant; worst_group_p99 / aggregate_p99 <= 2.0; min_group_throughput >= 190 ops/s; error_rate_by_group == 0; repeat_spread <= 0.15", false, false},
		{"no spaces", "group=key;worst_group_p99/aggregate_p99<=1.5;min_group_throughput>=10;error_rate_by_group==0;repeat_spread<=0.2", false, false},
		{"partial", "group=key; worst_group_p99 / aggregate_p99 <= 1.5", true, false},
		{"negative bound", "group=key; repeat_spread <= -1", false, true},
		{"NaN bound", "group=key; repeat_spread <= NaN", false, true},
		{"no group", "error_rate_by_group == 0", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFairness(tt.formula)
			switch {
			case tt.bad:
				if err == nil || errors.Is(err, ErrIncomplete) {
					t.Fatalf("accepted: %+v, %v", f, err)
				}
			case tt.incomplete:
				if !errors.Is(err, ErrIncomplete) || f == nil {
					t.Fatalf("want ErrIncomplete with the formula, got %+v, %v", f, err)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if !f.MinThroughput.Known || !f.MinThroughput.Holds(f.MinThroughput.Value) || f.MinThroughput.Holds(f.MinThroughput.Value-1) {
					t.Errorf("min throughput %+v", f.MinThroughput)
				}
			}
		})
	}
}

func TestParseSLO(t *testing.T) {
	tests := []struct {
		text   string
		p99    time.Duration
		opType string
		errMax float64 // -1: not stated
		tput   float64 // -1: not stated
	}{
		{"per-tenant fairness formula below, plus p99 put ≤ 20ms overall", 20 * time.Millisecond, "put", -1, -1},
		{"p99 put latency <= 20ms at 2000 ops/s", 20 * time.Millisecond, "put", -1, -1},
		{"p99 <= 1.5 s, error rate <= 0.1%, throughput >= 500 ops/s", 1500 * time.Millisecond, "", 0.001, 500},
	}
	for _, tt := range tests {
		s, ok := ParseSLO(tt.text)
		if !ok {
			t.Fatalf("%q: no SLO", tt.text)
		}
		if d, _ := s.P99.Duration(); d != tt.p99 || s.OpType != tt.opType {
			t.Errorf("%q: p99 %v op %q", tt.text, d, s.OpType)
		}
		if got := map[bool]float64{true: s.ErrorRate.Value, false: -1}[s.ErrorRate.Known]; math.Abs(got-tt.errMax) > 1e-12 {
			t.Errorf("%q: error rate %v", tt.text, got)
		}
		if got := map[bool]float64{true: s.Throughput.Value, false: -1}[s.Throughput.Known]; got != tt.tput {
			t.Errorf("%q: throughput %v", tt.text, got)
		}
	}
	if _, ok := ParseSLO("every cross-tenant read is denied"); ok {
		t.Error("an oracle with no threshold parsed as an SLO")
	}
}

func FuzzParseFairness(f *testing.F) {
	f.Add("group=key; worst_group_p99 / aggregate_p99 <= 1.5; min_group_throughput >= 10; error_rate_by_group == 0; repeat_spread <= 0.2")
	f.Add("group=input.tenant;;")
	f.Add("worst_group_p99/aggregate_p99<=-1")
	f.Add("group=k; repeat_spread <= NaN")
	f.Fuzz(func(t *testing.T, formula string) {
		fs, err := ParseFairness(formula)
		if err != nil && !errors.Is(err, ErrIncomplete) {
			return
		}
		// Accepted: a group, and every stated threshold a usable
		// non-negative number.
		if fs.Group == "" {
			t.Fatalf("%q accepted without a group", formula)
		}
		for _, th := range append([]Threshold{fs.WorstP99Ratio, fs.MinThroughput, fs.ErrorRate, fs.RepeatSpread}, fs.Other...) {
			if th.Known && !(th.Value >= 0) {
				t.Fatalf("%q: threshold %+v", formula, th)
			}
		}
	})
}

// The recovery bound: the time from a fault to the first acknowledged op
// after it, in the forms plans state it.
func TestParseSLORecovery(t *testing.T) {
	for _, tc := range []struct {
		text string
		want time.Duration
		op   string
	}{
		{"for every kill, the time from the kill to the first acknowledged put issued after it is <= 5s, and `etcdctl endpoint status` shows a leader within 5s", 5 * time.Second, "put"},
		{"time from fault start to first successful put ≤ 3s in every window", 3 * time.Second, "put"},
		{"recovery <= 800ms after every partition", 800 * time.Millisecond, ""},
		{"the time from the crash to the first answered op < 2 s", 2 * time.Second, ""},
		{"p99 <= 20ms", 0, ""},
	} {
		s, ok := ParseSLO(tc.text)
		got := time.Duration(0)
		if ok && s.Recovery.Known {
			got, _ = s.Recovery.Duration()
		}
		if got != tc.want || ok && s.RecoveryOp != tc.op {
			t.Errorf("%q: recovery %v op %q; want %v %q", tc.text, got, s.RecoveryOp, tc.want, tc.op)
		}
	}
}
