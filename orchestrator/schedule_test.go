package orchestrator

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
)

func TestScheduleShapes(t *testing.T) {
	s := time.Second
	tests := []struct {
		name      string
		faults    []scenarios.Fault
		dur       time.Duration
		maxFaults int
		wantAt    []time.Duration // the windows' starts, in order
		wantFor   time.Duration
	}{
		{"one window", []scenarios.Fault{{Nemesis: "kill-9", At: "10s", For: "0s"}}, 60 * s, 0, []time.Duration{10 * s}, 0},
		{"times stops the repeat", []scenarios.Fault{{Nemesis: "pause", At: "5s", For: "2s", Every: "10s", Times: 3}}, 600 * s, 0, []time.Duration{5 * s, 15 * s, 25 * s}, 2 * s},
		{"dur stops the repeat", []scenarios.Fault{{Nemesis: "pause", At: "5s", For: "2s", Every: "10s"}}, 38 * s, 0, []time.Duration{5 * s, 15 * s, 25 * s, 35 * s}, 2 * s},
		{"a window ending at dur is dropped", []scenarios.Fault{{Nemesis: "pause", At: "5s", For: "5s", Every: "10s"}}, 30 * s, 0, []time.Duration{5 * s, 15 * s}, 5 * s},
		{"every without at opens after one period", []scenarios.Fault{{Nemesis: "pause", For: "1s", Every: "20s", Times: 2}}, 600 * s, 0, []time.Duration{20 * s, 40 * s}, s},
		{"maxFaults caps the count in time order", []scenarios.Fault{
			{Nemesis: "pause", At: "30s", For: "1s"},
			{Nemesis: "kill-9", At: "10s", For: "1s", Every: "10s", Times: 5},
		}, 600 * s, 3, []time.Duration{10 * s, 20 * s, 30 * s}, s},
		{"times also stops at dur", []scenarios.Fault{{Nemesis: "pause", At: "5s", For: "2s", Every: "10s", Times: 9}}, 20 * s, 0, []time.Duration{5 * s, 15 * s}, 2 * s},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := expandSchedule("S1", tc.faults, 7, tc.dur, tc.maxFaults)
			if err != nil {
				t.Fatal(err)
			}
			var at []time.Duration
			for _, w := range got {
				at = append(at, time.Duration(w.AtNS))
				if time.Duration(w.ForNS) != tc.wantFor {
					t.Errorf("%s: for %s, want %s", w.FaultEpoch, time.Duration(w.ForNS), tc.wantFor)
				}
			}
			if !reflect.DeepEqual(at, tc.wantAt) {
				t.Fatalf("starts %v, want %v", at, tc.wantAt)
			}
			checkEpochs(t, "S1", got)
		})
	}
}

// checkEpochs asserts epochs are unit-w1..wn, unique, in time order.
func checkEpochs(t *testing.T, prefix string, got []session.ScheduledFault) {
	t.Helper()
	seen := map[string]bool{}
	for i, w := range got {
		want := prefix + "-w" + strconv.Itoa(i+1)
		if w.FaultEpoch != want || seen[w.FaultEpoch] {
			t.Errorf("window %d: epoch %q, want %q (unique)", i, w.FaultEpoch, want)
		}
		seen[w.FaultEpoch] = true
		if i > 0 && got[i-1].AtNS > w.AtNS {
			t.Errorf("window %d at %d before window %d at %d", i, w.AtNS, i-1, got[i-1].AtNS)
		}
	}
}

func TestScheduleDeterministicPerSeed(t *testing.T) {
	faults := []scenarios.Fault{
		{Nemesis: "partition-minority", Targets: "minority", At: "10s", For: "5s", Every: "30s", Jitter: "10s", Params: map[string]string{"hook": "INPUT"}},
		{Nemesis: "kill-9", Targets: "random", At: "12s", For: "0s", Every: "25s"},
	}
	a, _, err := expandSchedule("S4/api", faults, 42, 10*time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := expandSchedule("S4/api", faults, 42, 10*time.Minute, 0)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave two schedules")
	}
	c, _, _ := expandSchedule("S4/api", faults, 43, 10*time.Minute, 0)
	if reflect.DeepEqual(a, c) {
		t.Fatal("seeds 42 and 43 gave the same schedule although jitter and picks are drawn from the seed")
	}
	checkEpochs(t, "S4.api", a)
	// The first window keeps the plan's at; repeats stay within [nominal, nominal+jitter].
	var part []session.ScheduledFault
	for _, w := range a {
		if w.Nemesis == "partition-minority" {
			part = append(part, w)
		}
	}
	if len(part) < 3 || part[0].AtNS != int64(10*time.Second) {
		t.Fatalf("partition windows %+v", part)
	}
	for k, w := range part {
		nominal := 10*time.Second + time.Duration(k)*30*time.Second
		if d := time.Duration(w.AtNS) - nominal; d < 0 || d > 10*time.Second {
			t.Errorf("repeat %d shifted by %s, outside [0, 10s]", k, d)
		}
		if w.Params["hook"] != "INPUT" || w.Targets != "minority" {
			t.Errorf("repeat %d lost its params or targets: %+v", k, w)
		}
	}
	// Editing the params a caller got back must not reach the input.
	part[0].Params["hook"] = "x"
	if faults[0].Params["hook"] != "INPUT" {
		t.Fatal("Schedule shares the params map with scenarios.yml")
	}
}

func TestScheduleNoOverlapOnOneEntry(t *testing.T) {
	// every == for leaves no gap: any jitter would push a repeat into the
	// previous window unless Schedule holds it back.
	faults := []scenarios.Fault{{Nemesis: "pause", At: "0s", For: "10s", Every: "10s", Jitter: "9s"}}
	for seed := int64(0); seed < 50; seed++ {
		got, _, err := expandSchedule("S2", faults, seed, 5*time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(got); i++ {
			if got[i].AtNS < got[i-1].AtNS+got[i-1].ForNS {
				t.Fatalf("seed %d: window %d starts at %d before window %d ends at %d", seed, i, got[i].AtNS, i-1, got[i-1].AtNS+got[i-1].ForNS)
			}
		}
	}
}

func TestScheduleErrors(t *testing.T) {
	tests := []struct {
		name  string
		fault scenarios.Fault
		dur   time.Duration
		want  string
	}{
		{"TODO time", scenarios.Fault{Nemesis: "kill-9", At: "TODO(S1.faults.at)", Line: 12}, time.Minute, "line 12"},
		{"bad duration", scenarios.Fault{Nemesis: "kill-9", At: "soon"}, time.Minute, `at "soon" is not a duration`},
		{"negative", scenarios.Fault{Nemesis: "kill-9", At: "-5s"}, time.Minute, "negative"},
		{"times without every", scenarios.Fault{Nemesis: "kill-9", At: "1s", Times: 3}, time.Minute, "needs every"},
		{"every shorter than for", scenarios.Fault{Nemesis: "pause", At: "1s", For: "10s", Every: "5s"}, time.Minute, "would overlap"},
		{"first window past the run", scenarios.Fault{Nemesis: "pause", At: "50s", For: "20s"}, time.Minute, "does not end before"},
		{"unbounded repeat", scenarios.Fault{Nemesis: "pause", At: "1s", Every: "1s"}, 0, "needs a run length"},
		{"too many windows", scenarios.Fault{Nemesis: "pause", At: "1ms", Every: "1ms"}, time.Hour, "more than 10000 windows"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := expandSchedule("S1", []scenarios.Fault{tc.fault}, 1, tc.dur, 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestScheduleEmpty(t *testing.T) {
	got, _, err := expandSchedule("S1", nil, 1, time.Minute, 0)
	if err != nil || len(got) != 0 {
		t.Fatalf("got %v, %v", got, err)
	}
}

// A fault entry whose first window does not fit a shorter tier's run is
// left out and named; the entries that fit are scheduled.
func TestScheduleLeavesOutWhatDoesNotFit(t *testing.T) {
	faults := []scenarios.Fault{
		{Nemesis: "leader-isolation", Targets: "leader", At: "30s", For: "20s", Every: "60s", Line: 9},
		{Nemesis: "partition-asym", Targets: "leader", At: "60s", For: "20s", Every: "120s", Line: 15},
	}
	got, unfit, err := expandSchedule("S1", faults, 1, time.Minute, 1)
	if err != nil || len(got) != 1 || got[0].Nemesis != "leader-isolation" {
		t.Fatalf("schedule %+v, %v: want the isolation window only", got, err)
	}
	if len(unfit) != 1 || !strings.Contains(unfit[0], "faults[1] (partition-asym, line 15)") {
		t.Errorf("unfit %q: want the asymmetric partition named", unfit)
	}
	if got, _, _ := expandSchedule("S1", faults, 1, 10*time.Minute, 10); len(got) != 10 {
		t.Errorf("hardening: %d windows, want 10", len(got))
	}
}
