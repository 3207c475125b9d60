package plan

import (
	"testing"
	"time"
)

func TestWorkloadDuration(t *testing.T) {
	for _, c := range []struct {
		text string
		want time.Duration // 0 = not stated: the tier's duration applies
	}{
		// Stated as the run length.
		{"6 clients, 50% get / 40% put / 10% cas, 20 keys uniform, 10 min", 10 * time.Minute},
		{"2 producers appending unique values at 100 ops/s, 5 min; read the whole log after quiescence", 5 * time.Minute},
		{"8 clients, 100% credit, 500 ops/s open loop, 50 accounts, 10 min after 1 min warm-up", 10 * time.Minute},
		{"4 clients, 100% put for 5 min", 5 * time.Minute},
		{"4 clients, 100% put, run for 120 s", 120 * time.Second},
		{"4 clients, 100% put, duration 60 s", time.Minute},
		{"4 clients, duration: 90s, 100% put", 90 * time.Second},
		{"lasting 2 h, 3 clients", 2 * time.Hour},
		{"3 clients, 5 min total", 5 * time.Minute},
		{"3 clients, and 5 min", 5 * time.Minute},
		// Never the run length.
		{"5 clients, 200 ops/s total, 1 s request timeout, for the tier's duration", 0},
		{"2 clients, 100% put at 50 puts/s, 1 s request timeout, for the tier's duration", 0},
		{"5 clients contending for 3 locks, acquire with 5s TTL, hold 200 ms, release", 0},
		{"1 holder client, 2 waiting clients polling acquire every 100 ms", 0},
		{"clients hold the lock for 200 ms, then release", 0},
		{"every put must be acknowledged within 2 s", 0},
		{"p99 under 20 ms at 1000 ops/s", 0},
		{"retry for 10 s on timeout", 0},
		{"first put at T+30s", 0},
		{"1,000 keys, 3 clients", 0},
		{"", 0},
		// The first stated run length wins.
		{"3 clients, 10 min, then for 5 min at double rate", 10 * time.Minute},
		// An explicit run length after a timeout clause still counts.
		{"1 s request timeout, for 5 min", 5 * time.Minute},
	} {
		got, ok := WorkloadDuration(c.text)
		if ok != (c.want != 0) || got != c.want {
			t.Errorf("WorkloadDuration(%q) = %v, %v; want %v", c.text, got, ok, c.want)
		}
	}
}
