package orchestrator

import (
	"context"
	"time"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/nemesis"
	"github.com/dstgen/dstgen/session"
)

// HistorySignal is the victim-side evidence read from the history.
func HistorySignal(ops []history.Op, w session.FaultWindow) session.Evidence {
	return session.Evidence{Kind: "history_error_rate", Verdict: session.SignalAbsent}
}

// LogSizes records the current size of each log file on each host.
func LogSizes(ctx context.Context, x nemesis.Exec, hosts []nemesis.Host) (map[string]map[string]int64, error) {
	return nil, nil
}

// LogSignal counts lines matching re written since the sizes LogSizes took.
func LogSignal(ctx context.Context, x nemesis.Exec, hosts []nemesis.Host, since map[string]map[string]int64, re string) (session.Evidence, error) {
	return session.Evidence{Kind: "log_marker", Name: re, Verdict: session.SignalAbsent}, nil
}

// MetricValue runs cmd on each host and sums the number it prints.
func MetricValue(ctx context.Context, x nemesis.Exec, hosts []nemesis.Host, cmd string) (float64, error) {
	return 0, nil
}

// MetricSignal compares two readings with expect rise|fall|change.
func MetricSignal(name string, before, after float64, expect string) session.Evidence {
	return session.Evidence{Kind: "metric", Name: name}
}

// LeaderSignal compares the leader before and after injection.
func LeaderSignal(before, after string) session.Evidence {
	return session.Evidence{Kind: "leader_change"}
}

// Throughput fills the run.json workload fields from the history.
func Throughput(ops []history.Op, interval time.Duration) session.Workload {
	return session.Workload{}
}
