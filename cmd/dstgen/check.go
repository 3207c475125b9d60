package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/exitcode"
	"github.com/dstgen/dstgen/internal/gcstart"
	"github.com/dstgen/dstgen/plan"
)

// checkHeapStart is the heap size before check's first garbage
// collection: a 100k-op history checks within it.
const checkHeapStart = 128 << 20

// exitUnknown is check's own code: the checker ran out of time, so the
// history is neither valid nor shown invalid.
const exitUnknown = 3

// checkReport is the --json shape of dstgen check.
type checkReport struct {
	History        string         `json:"history"`
	Meta           history.Meta   `json:"meta"`
	OpsRead        int            `json:"ops_read"`
	BadLines       []string       `json:"bad_lines,omitempty"`
	InvalidRecords []string       `json:"invalid_records,omitempty"`
	Weak           []string       `json:"weak,omitempty"` // docs/history-and-checkers.md §2.2: fields this checker needs are missing
	Result         checker.Result `json:"result"`
}

func newCheckCmd() *cobra.Command {
	var spec checker.Spec
	var finalPath string
	var params []string
	var asJSON bool
	var level string
	cmd := &cobra.Command{
		Use:   "check --model M [--checker C] [--level L] [--timeout D] [--html FILE] [--final FILE] [--json] HISTORY.jsonl",
		Short: "Check one operation history (like elle-cli): exit 0 valid, 1 anomaly, 3 unknown, 2 bad input or dirty initial state",
		Long: `check runs one checker over a dst-history/1 JSON Lines file and prints the
ops consumed, the anomalies found (key, message, op ids, window) and the time
taken. --checker defaults from the model (the picker of
docs/history-and-checkers.md §4). Checkers that need a final state
(no-lost-ack, exactly-once, invariant, reconciliation) read it from --final:
{"keys":{k:v}, "replicas":{node:{k:v}}}. Checker parameters go in
--param name=value (e.g. --param window=2, --param p99=200ms;
monotonic-reads takes versions from an object output's .version or, with
--param version_from=value, from the read value itself, else only from
real-time order between writes). An empty history is bad input, never valid.
A kv/register history that reads a value no op in it wrote (left-over state
from an earlier run) prints result=dirty-initial-state key=... value=...
line=FILE:N and exits 2: an environment problem, not an anomaly; the other
keys are still checked, and a violation on them still exits 1.
--model txn --checker serializability judges transactions (op_type txn)
at --level read-committed, snapshot-isolation, repeatable-read (on
item-level histories the same as serializable), serializable (default),
strong-session-snapshot-isolation, strong-session-serializable (each
process sees its own earlier transactions) or strict-serializable; --html then draws each cycle found. --model lock (or
mutex) checks mutual exclusion and fencing tokens (acquire/release ops);
--model lease checks lease safety with --param ttl=D [--param uncertainty=D].`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// The check builds its structures in one go: no collection
			// until they reach a working size (internal/gcstart).
			gcstart.Defer(checkHeapStart)
			path := args[0]
			if spec.Model == "" {
				return errors.New("check: --model is required (register, kv, map, counter, log, set, queue, session, ledger, ...)")
			}
			spec.Params = map[string]string{}
			for _, p := range params {
				k, v, ok := strings.Cut(p, "=")
				if !ok || k == "" {
					return fmt.Errorf("check: --param %q: want name=value", p)
				}
				spec.Params[k] = v
			}
			if level != "" {
				l, ok := checker.IsolationLevel(level)
				if !ok {
					return fmt.Errorf("check: --level %q: want one of %s", level, strings.Join(checker.IsolationLevels(), ", "))
				}
				spec.Params["level"] = l
			}
			if formula, set := spec.Params["formula"]; set {
				// The plan's grammar is the only fairness grammar; a
				// one-off check may state only some of the thresholds.
				f, err := plan.ParseFairness(formula)
				if err != nil && !errors.Is(err, plan.ErrIncomplete) {
					return fmt.Errorf("check: --param formula: %v", err)
				}
				spec.Fairness = f
			}
			if spec.Checker == "" {
				c, ok := checker.Pick(spec.Model, "")
				if !ok {
					return fmt.Errorf("check: no default checker for model %q; pass --checker", spec.Model)
				}
				spec.Checker = c
			}
			var final *checker.FinalState
			if finalPath != "" {
				f, err := checker.LoadFinalState(finalPath)
				if err != nil {
					return err
				}
				final = f
			}
			// An error about one op names path:line.
			fr, err := checker.RunFile(cmd.Context(), spec, path, final)
			if err != nil {
				return err
			}
			res := fr.Result
			rep := checkReport{History: path, Meta: fr.Meta, OpsRead: fr.OpsRead, Weak: fr.Weak, Result: res}
			for _, e := range fr.Bad {
				rep.BadLines = append(rep.BadLines, e.Error())
			}
			for _, e := range fr.Invalid {
				rep.InvalidRecords = append(rep.InvalidRecords, e.Error())
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return fmt.Errorf("write report: %w", err)
				}
			} else {
				printCheck(out, rep)
			}
			switch {
			case len(rep.BadLines) > 0:
				return fmt.Errorf("%d bad lines in %s (first: %s); results above cover the rest", len(rep.BadLines), path, rep.BadLines[0])
			case len(rep.InvalidRecords) > 0:
				return fmt.Errorf("history invalid (recorder bug, blame harness): %s", rep.InvalidRecords[0])
			case rep.OpsRead == 0:
				// Red flag 2: a checker that consumed nothing proves nothing,
				// so an empty history is never reported as valid.
				return fmt.Errorf("%s: no ops: an empty history proves nothing", path)
			case res.Outcome == checker.Invalid:
				return exitcode.New(exitcode.NotSo, nil)
			case len(res.Dirty) > 0:
				// Left-over state from an earlier run is an environment
				// problem, not an anomaly of the SUT: exit 2 (bad input or
				// environment), never 1.
				return fmt.Errorf("%s: dirty initial state: %d keys read a value no op in the history wrote; %s", path, len(res.Dirty), checker.DirtyAdvice)
			case res.Outcome == checker.Unknown:
				return exitcode.New(exitUnknown, nil)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&spec.Model, "model", "", "model under test: register, kv|map, counter, log, set, queue, session, ledger, membership-table, ...")
	f.StringVar(&spec.Checker, "checker", "", "checker id (default: picked from the model): "+strings.Join([]string{
		checker.Linearizability, checker.NoLostAck, checker.ExactlyOnce, checker.Session, checker.MonotonicReads,
		checker.Prefix, checker.SLO, checker.Invariant, checker.Reconciliation, checker.Fairness, checker.Serializability,
		checker.MutualExclusion, checker.LeaseSafety}, ", "))
	f.StringVar(&level, "level", "", "isolation level for serializability: "+strings.Join(checker.IsolationLevels(), ", ")+" (default "+checker.Serializable+")")
	f.DurationVar(&spec.Timeout, "timeout", time.Minute, "hard time limit; reaching it is unknown (exit 3), never valid")
	f.StringVar(&spec.HTMLPath, "html", "", fmt.Sprintf("write the violation's visualization here: porcupine's, or the isolation cycles (capped at %d MiB)", checker.DefaultHTMLMaxBytes>>20))
	f.StringVar(&finalPath, "final", "", "final-state JSON for no-lost-ack, exactly-once, invariant, reconciliation")
	f.StringArrayVar(&params, "param", nil, "checker parameter name=value (repeatable)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func printCheck(w io.Writer, rep checkReport) {
	r := rep.Result
	fmt.Fprintf(w, "history=%s ops=%d\n", rep.History, rep.OpsRead)
	for _, b := range rep.BadLines {
		fmt.Fprintf(w, "bad line: %s\n", b)
	}
	for _, b := range rep.InvalidRecords {
		fmt.Fprintf(w, "invalid record: %s\n", b)
	}
	for _, b := range rep.Weak {
		fmt.Fprintf(w, "weak history: %s\n", b)
	}
	fmt.Fprintf(w, "checker=%s model=%s outcome=%s\n", r.Checker, r.Model, r.Outcome)
	fmt.Fprintf(w, "%s in %v\n", r.Evidence(), r.Elapsed.Round(time.Microsecond))
	if r.Reason != "" {
		fmt.Fprintf(w, "reason: %s\n", r.Reason)
	}
	for _, a := range r.Anomalies {
		fmt.Fprintf(w, "anomaly %s", a.Kind)
		if a.Key != "" {
			fmt.Fprintf(w, " key=%q", a.Key)
		}
		if len(a.OpIDs) > 0 {
			fmt.Fprintf(w, " ops=%s", strings.Join(a.OpIDs, ","))
		}
		if a.WindowEnd != 0 {
			fmt.Fprintf(w, " window=%d..%dns", a.WindowStart, a.WindowEnd)
		}
		if a.FaultEpoch != "" {
			fmt.Fprintf(w, " fault_epoch=%s", a.FaultEpoch)
		}
		fmt.Fprintf(w, ": %s\n", a.Message)
	}
	for _, d := range r.Dirty {
		fmt.Fprintf(w, "result=dirty-initial-state key=%q value=%s process=%s op=%s line=%s:%d\n", d.Key, d.Value, d.ProcessID, d.OpID, rep.History, d.Line)
	}
	switch {
	case r.HTML != "" && r.HTMLCapped:
		fmt.Fprintf(w, "visualization: %s (capped: only the ops up to the failing window)\n", r.HTML)
	case r.HTML != "":
		fmt.Fprintf(w, "visualization: %s\n", r.HTML)
	case r.HTMLCapped:
		fmt.Fprintln(w, "visualization: not written, larger than the cap even when cut to the failing window")
	}
	fmt.Fprintf(w, "scope: %s\n", r.Scope)
}
