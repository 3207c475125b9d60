package driver

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dstgen/dstgen/history"
)

// scripted is a Workload whose client i answers its ops with outcomes[i]
// in turn and then has no more ops.
type scripted struct {
	outcomes [][]error
	// do, when set, replaces the scripted answer.
	do func(ctx context.Context, i int, op Op) (any, error)
}

func (s *scripted) Flags(*flag.FlagSet, *Config) {}
func (s *scripted) Setup(*Config) error          { return nil }
func (s *scripted) Client(i int) Client {
	var outs []error
	if i < len(s.outcomes) {
		outs = s.outcomes[i]
	}
	return &scriptClient{w: s, i: i, outs: outs}
}

type scriptClient struct {
	w    *scripted
	i, n int
	outs []error
}

func (c *scriptClient) Next() (Op, bool) {
	if c.w.do == nil && c.n >= len(c.outs) {
		return Op{}, false
	}
	c.n++
	return Op{Type: "write", Key: fmt.Sprintf("k%d", c.i), Input: c.n, Node: "n1"}, true
}

func (c *scriptClient) Do(ctx context.Context, op Op) (any, error) {
	if c.w.do != nil {
		return c.w.do(ctx, c.i, op)
	}
	return nil, c.outs[c.n-1]
}

func testConfig(clients int) *Config {
	return &Config{Name: "t", RunID: "r1", Seed: 7, Scenario: "S1", Tier: "smoke", Duration: time.Minute,
		Clients: clients, Timeout: 50 * time.Millisecond, FinalTimeout: time.Second}
}

// runHistory runs w and reads the history back.
func runHistory(t *testing.T, ctx context.Context, cfg *Config, w Workload) (Stats, history.Meta, []history.Op, error) {
	t.Helper()
	var buf bytes.Buffer
	st, err := Run(ctx, cfg, w, &buf)
	meta, ops, bad := history.ReadBytes(buf.Bytes(), "h.jsonl")
	if len(bad) > 0 {
		t.Fatalf("history does not parse: %v", bad)
	}
	if errs := history.Validate("h.jsonl", ops, nil); len(errs) > 0 {
		t.Fatalf("invalid history: %v", errs)
	}
	return st, meta, ops, err
}

// After an unknown outcome the client goes on as a new process; a
// response or a definite failure keeps it (docs/history-and-checkers.md
// §2.3).
func TestProcessIDAfterUnknownOutcome(t *testing.T) {
	reset := fmt.Errorf("read: %w", syscall.ECONNRESET)
	cases := []struct {
		name     string
		outcomes [][]error
		want     map[string][]string // key → process of each of its ops, in order
		codes    []string            // error column of client 0's ops
	}{
		{"responses keep the process", [][]error{{nil, nil, nil}},
			map[string][]string{"k0": {"c0.0", "c0.0", "c0.0"}}, []string{"", "", ""}},
		{"a definite failure keeps it", [][]error{{nil, Fail("refused"), nil}},
			map[string][]string{"k0": {"c0.0", "c0.0", "c0.0"}}, []string{"", "refused", ""}},
		{"an unknown outcome starts a new one", [][]error{{Unknown("server-timeout", nil), nil, nil}},
			map[string][]string{"k0": {"c0.0", "c0.1", "c0.1"}}, []string{"server-timeout", "", ""}},
		{"every plain error is unknown", [][]error{{errors.New("boom"), context.DeadlineExceeded, reset, nil}},
			map[string][]string{"k0": {"c0.0", "c0.1", "c0.2", "c0.3"}}, []string{"indeterminate", "timeout", "conn-reset", ""}},
		{"one client's unknown leaves the others", [][]error{{nil, nil}, {Unknown("", context.DeadlineExceeded), nil}},
			map[string][]string{"k0": {"c0.0", "c0.0"}, "k1": {"c1.0", "c1.1"}}, []string{"", ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, _, ops, err := runHistory(t, context.Background(), testConfig(len(c.outcomes)), &scripted{outcomes: c.outcomes})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			var codes []string
			for _, o := range ops {
				got[o.Key] = append(got[o.Key], o.ProcessID)
				if o.Key == "k0" {
					codes = append(codes, o.Error)
				}
				if o.TimeoutMarker != (o.CompleteTS == nil) || o.NodeSeen != "n1" {
					t.Errorf("op %+v: timeout marker and complete_ts disagree, or no node_seen", o)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) || fmt.Sprint(codes) != fmt.Sprint(c.codes) {
				t.Errorf("processes %v codes %q, want %v %q", got, codes, c.want, c.codes)
			}
			if st.Exhausted != int64(len(c.outcomes)) || st.Ops != int64(len(ops)) {
				t.Errorf("stats %+v for %d ops", st, len(ops))
			}
		})
	}
}

// An op outliving the per-op timeout is recorded unknown ("timeout"); one
// whose Do ignores its context is abandoned a second later and its client
// stopped, so the run still ends.
func TestPerOpTimeoutIsBounded(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var mu sync.Mutex
	calls := map[int]int{}
	w := &scripted{do: func(ctx context.Context, i int, op Op) (any, error) {
		mu.Lock()
		calls[i]++
		n := calls[i]
		mu.Unlock()
		switch {
		case n > 1:
			return nil, nil
		case i == 0: // honours ctx
			<-ctx.Done()
			return nil, ctx.Err()
		default: // ignores it
			<-release
			return nil, nil
		}
	}}
	cfg := testConfig(2)
	cfg.MaxOps = 6
	st, meta, ops, err := runHistory(t, context.Background(), cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	if meta.OpTimeoutNS != int64(cfg.Timeout) || meta.RunID != "r1" || meta.Tier != "smoke" || meta.Seed != 7 || meta.Scenario != "S1" {
		t.Errorf("header %+v: want op_timeout_ns, run_id, tier, seed, scenario", meta)
	}
	first := map[string]history.Op{}
	for _, o := range ops {
		if _, ok := first[o.Key]; !ok {
			first[o.Key] = o
		}
	}
	if o := first["k0"]; !o.TimeoutMarker || o.Error != "timeout" {
		t.Errorf("client 0's first op %+v: want unknown, timeout", o)
	}
	if o := first["k1"]; !o.TimeoutMarker || o.Error != "abandoned" {
		t.Errorf("client 1's first op %+v: want unknown, abandoned", o)
	}
	if st.Abandoned != 1 || st.Unknown != 2 || st.Ops != 6 {
		t.Errorf("stats %+v: want client 1 abandoned after its first op, 6 ops in all", st)
	}
}

// The end of the run stops new ops, not the one in flight: it gets its
// answer and is recorded as a response.
func TestStopLetsInFlightOpsFinish(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started, release := make(chan struct{}), make(chan struct{})
	w := &scripted{do: func(ctx context.Context, _ int, _ Op) (any, error) {
		close(started)
		<-release
		return "v", ctx.Err()
	}}
	go func() { <-started; cancel(); close(release) }()
	cfg := testConfig(1)
	cfg.Timeout = time.Minute // the stop, not the timeout, ends the run
	st, _, ops, err := runHistory(t, ctx, cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 1 || ops[0].CompleteTS == nil || string(ops[0].Output) != `"v"` || st.OK != 1 {
		t.Errorf("ops %+v stats %+v: want the one op in flight answered", ops, st)
	}
}

// The op budget is shared by the clients; a run in which nothing
// succeeded is an error naming the first failure.
func TestOpBudgetAndNothingSucceeded(t *testing.T) {
	cases := []struct {
		name    string
		answer  error
		wantErr string
	}{
		{"budget", nil, ""},
		{"every op refused", Fail("refused"), `no operation succeeded (50 issued); first error: refused`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(3)
			cfg.MaxOps = 50
			st, _, ops, err := runHistory(t, context.Background(), cfg, &scripted{do: func(context.Context, int, Op) (any, error) { return nil, c.answer }})
			if len(ops) != 50 || st.Ops != 50 {
				t.Errorf("%d ops recorded, %d counted: want the budget, 50", len(ops), st.Ops)
			}
			if (err == nil) != (c.wantErr == "") || (err != nil && err.Error() != c.wantErr) {
				t.Errorf("error %v, want %q", err, c.wantErr)
			}
			if c.wantErr != "" && (st.FirstCode != "refused" || st.Failed != 50) {
				t.Errorf("stats %+v: want 50 definite failures, first refused", st)
			}
		})
	}
}

// An output that cannot be recorded is an unknown outcome, never a lost
// op: the history keeps every op invoked.
func TestUnmarshallableOutputIsUnknown(t *testing.T) {
	cfg := testConfig(1)
	cfg.MaxOps = 2
	_, _, ops, _ := runHistory(t, context.Background(), cfg, &scripted{do: func(_ context.Context, _ int, op Op) (any, error) {
		if op.Input == 1 {
			return func() {}, nil
		}
		return 1, nil
	}})
	if len(ops) != 2 || !ops[0].TimeoutMarker || ops[0].Error != "bad-output" || ops[1].ProcessID != "c0.1" {
		t.Errorf("ops %+v: want op 1 unknown (bad-output), op 2 a new process", ops)
	}
}

func TestRunRefusesAnUnsetConfig(t *testing.T) {
	_, err := Run(context.Background(), &Config{}, &scripted{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "must be positive") {
		t.Errorf("error %v, want one naming the zero fields", err)
	}
}

// The second of two shares numbers its clients after the first share's:
// its processes (and whatever the workload derives from the client id)
// never meet the other host's in the merged history.
func TestShareNumbersItsClientsAfterTheOthers(t *testing.T) {
	cfg := testConfig(2)
	cfg.Share, cfg.Shares = 1, 2
	_, _, ops, err := runHistory(t, context.Background(), cfg, &scripted{outcomes: [][]error{nil, nil, {nil}, {nil}}})
	if err != nil {
		t.Fatal(err)
	}
	var procs []string
	for _, o := range ops {
		procs = append(procs, o.ProcessID+" "+o.Key)
	}
	if fmt.Sprint(procs) != fmt.Sprint([]string{"c2.0 k2", "c3.0 k3"}) && fmt.Sprint(procs) != fmt.Sprint([]string{"c3.0 k3", "c2.0 k2"}) {
		t.Errorf("share 1/2 of 2 clients ran %v, want clients 2 and 3", procs)
	}
}
