package driver

// Stage 2: the run. One goroutine per logical client: take a slot from
// the pacer, ask the client for its next op, record the invoke, call Do
// under the per-op timeout, record the outcome; after an unknown outcome
// the client goes on as a new process.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/dstgen/dstgen/history"
)

// Workload is what a driver supplies: its flags, the check of them, and
// its clients.
type Workload interface {
	// Flags registers the driver's own flags on fs. It may also change
	// the defaults of the contract's fields in cfg (Name, Clients,
	// Timeout, Mode, Prefix, FailPause…): they are registered after it.
	Flags(fs *flag.FlagSet, cfg *Config)
	// Setup checks the driver's flags against the parsed cfg and makes
	// the run ready (shared connections, say); an error is bad input, a
	// one-line reason naming the flag or variable (exit 2). It may set
	// cfg.Clients.
	Setup(cfg *Config) error
	// Client returns logical client i, cfg.FirstClient() ≤ i <
	// cfg.FirstClient()+cfg.Clients: i is unique over every client host
	// of a run (DSTGEN_SHARE), so a workload may derive ids, fresh keys
	// and unique values from it.
	Client(i int) Client
}

// Finaler is a Workload that dumps the SUT's final state to Config.Final
// (DSTGEN_FINAL) once the run is over, or alone with -final-only: what a
// scenario's final_state command runs (docs/driver-contract.md §7.1). The
// context is bounded by Config.FinalTimeout.
type Finaler interface {
	WriteFinal(ctx context.Context) error
}

// Op is one operation as the history records it (docs/history-and-checkers.md §2).
type Op struct {
	Type  string // op_type: read, write, cas, …
	Key   string // the object addressed ("" = null)
	Input any    // what is sent (nil = null); marshalled at invoke
	Node  string // node_seen: the node the client talks to
}

// Client is one logical client. Run calls its methods from one goroutine,
// never two at once.
type Client interface {
	// Next returns the client's next op; false ends this client (its
	// value space is spent, say).
	Next() (Op, bool)
	// Do sends op to the SUT and returns the output of a response (nil is
	// null). A definite failure is Fail(code); an unknown outcome is
	// Unknown(code, err) or any other error. ctx carries the per-op
	// timeout and is not cancelled by the end of the run: an op once sent
	// gets its answer or its timeout. After an unknown outcome the next
	// op is another process's; a client holding a connection should open
	// a new one.
	Do(ctx context.Context, op Op) (output any, err error)
}

// Stats counts a run's ops by outcome.
type Stats struct {
	Ops     int64 // ops invoked, every one of them recorded unless the history failed
	OK      int64
	Failed  int64 // definite failures
	Unknown int64 // unknown outcomes (timeouts)
	// Exhausted counts clients whose Next ended them.
	Exhausted int64
	// Abandoned counts clients stopped because Do outlived its context by
	// more than abandonGrace.
	Abandoned int64
	// FirstCode and FirstError are the code and message of the first op
	// that did not succeed: what to say when none did.
	FirstCode, FirstError string
}

// abandonGrace is how long Do may outlive its context before its op is
// recorded unknown ("abandoned") and its client stopped, so a client that
// ignores ctx cannot hold the run past its end.
const abandonGrace = time.Second

// counters is Stats while the clients run.
type counters struct {
	issued, ops, ok, failed, unknown, exhausted, abandoned atomic.Int64
	first                                                  sync.Once
	firstCode, firstErr                                    string
}

// Run drives cfg.Clients clients of w until cfg.Duration, the op budget
// or the end of ctx, recording every op to hist as dst-history/1. ctx
// ending stops new ops only: ops in flight finish or time out, and Run
// returns once they have. The error says the run failed: the history
// could not be written, or no op succeeded (the driver never exercised
// the SUT); the Stats are filled either way.
func Run(ctx context.Context, cfg *Config, w Workload, hist io.Writer) (Stats, error) {
	if cfg.Clients < 1 || cfg.Timeout <= 0 || cfg.Duration <= 0 {
		return Stats{}, fmt.Errorf("run: clients %d, timeout %v, duration %v: each must be positive", cfg.Clients, cfg.Timeout, cfg.Duration)
	}
	rec := history.NewRecorder(hist, history.Meta{Scenario: cfg.Scenario, Seed: cfg.Seed,
		RunID: cfg.RunID, Tier: cfg.Tier, OpTimeoutNS: int64(cfg.Timeout)})
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var pace *rate.Limiter
	if cfg.Rate > 0 {
		pace = newPacer(cfg.Rate, time.Now())
	}
	var c counters
	var wg sync.WaitGroup
	for k := range cfg.Clients {
		i := cfg.FirstClient() + k
		cl := w.Client(i)
		wg.Go(func() { c.drive(ctx, cfg, rec, pace, i, cl) })
	}
	wg.Wait()
	st := Stats{Ops: c.ops.Load(), OK: c.ok.Load(), Failed: c.failed.Load(), Unknown: c.unknown.Load(),
		Exhausted: c.exhausted.Load(), Abandoned: c.abandoned.Load(), FirstCode: c.firstCode, FirstError: c.firstErr}
	if err := rec.Err(); err != nil {
		return st, fmt.Errorf("write history: %w", err)
	}
	if st.OK == 0 {
		why := ""
		if st.FirstError != "" {
			why = "; first error: " + st.FirstError
		}
		return st, fmt.Errorf("no operation succeeded (%d issued)%s", st.Ops, why)
	}
	return st, nil
}

// process names client i's gen-th process: c<i>.<gen>.
func process(i, gen int) string { return "c" + strconv.Itoa(i) + "." + strconv.Itoa(gen) }

// result is what one Do call returned.
type result struct {
	out any
	err error
}

// drive is client i's loop.
func (c *counters) drive(ctx context.Context, cfg *Config, rec *history.Recorder, pace *rate.Limiter, i int, cl Client) {
	gen := 0
	for ctx.Err() == nil {
		// Wait refuses a wait past the run's deadline: pacing never
		// stretches a run.
		if pace != nil && pace.Wait(ctx) != nil {
			return
		}
		if cfg.MaxOps > 0 && c.issued.Add(1) > cfg.MaxOps {
			return
		}
		op, ok := cl.Next()
		if !ok {
			c.exhausted.Add(1)
			return
		}
		p := rec.Invoke(process(i, gen), op.Type, op.Key, op.Input)
		if op.Node != "" {
			p.SetNode(op.Node)
		}
		c.ops.Add(1)
		// Not cancelled by the run's end: an op invoked before it runs to
		// its answer, so the last ops are not all recorded as timeouts.
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Timeout)
		done := make(chan result, 1)
		go func() {
			out, err := cl.Do(octx, op)
			done <- result{out, err}
		}()
		var r result
		abandoned := false
		select {
		case r = <-done:
		case <-time.After(cfg.Timeout + abandonGrace):
			r, abandoned = result{err: Unknown("abandoned", errors.New("the client's Do ignored its context"))}, true
		}
		cancel()
		if r.err == nil {
			err := p.Ok(r.out)
			if err == nil || rec.Err() != nil { // a write error is reported by Run
				c.ok.Add(1)
				continue
			}
			// An output that does not marshal: what came back is unknown.
			r.err = Unknown("bad-output", err)
		}
		definite, code := classify(r.err)
		c.note(code, r.err)
		if definite {
			_ = p.Fail(code) // a write error is the recorder's, reported by Run
			c.failed.Add(1)
		} else {
			_ = p.Timeout(code)
			c.unknown.Add(1)
			gen++ // the op may still take effect: go on as a new process
		}
		if abandoned {
			// Do still runs: the client cannot be called again.
			c.abandoned.Add(1)
			return
		}
		if cfg.FailPause > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(cfg.FailPause):
			}
		}
	}
}

// note keeps the first error's code and message.
func (c *counters) note(code string, err error) {
	c.first.Do(func() { c.firstCode, c.firstErr = code, err.Error() })
}
