// Package driver is the driver contract of docs/driver-contract.md for Go
// workload drivers (§8.1 there): everything a driver does that is not a
// call to the system under test.
//
// A driver supplies a Workload — its own flags, a Setup that checks them,
// and one Client per logical client with two methods: Next (the op to
// issue: op_type, key, input) and Do (send it, return the output or an
// error). The package does the rest:
//
//   - reads every DSTGEN_* input into a Config, each under a flag that
//     wins over its variable, and refuses a bad value with a one-line
//     reason naming it (exit 2);
//   - writes the history with history.Recorder to DSTGEN_HISTORY, its
//     header carrying scenario, seed, run id, tier and the per-op timeout;
//   - paces op starts at DSTGEN_RATE on an open-loop schedule that catches
//     up to the planned average after a stall, with a bounded burst
//     (docs/driver-contract.md §7.4);
//   - bounds every op by the per-op timeout, and continues a client as a
//     new process after an unknown outcome (docs/history-and-checkers.md
//     §2.3);
//   - stops at DSTGEN_DURATION_S, the op budget or SIGTERM/SIGINT: no new
//     op is issued, ops in flight finish or time out, the history is
//     flushed, and the exit code is 0;
//   - runs the final-state hook for DSTGEN_FINAL, namespaces keys with
//     DSTGEN_RUN_ID, and prints the summary line dstgen reads
//     (docs/driver-contract.md §3.4).
//
// `dstgen driver new` writes a main package built on it with only the
// client calls left to fill in.
package driver
