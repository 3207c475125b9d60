package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/dstgen/dstgen/session"
)

// The safe part and the stale-read part of `dstgen demo --bug both` are
// independent: each has its own hosts, proxy, ports, testing/ and SUT, so
// they run at the same time (the wall time is the longer part's, not the
// sum). What a reader sees stays in part order: the second part's
// progress lines and children's output wait in a gate until the first
// part has ended, and the few things that must follow part order (session
// names, the comparison with the previous session) are sequenced below.

// gate holds what is written to it until it is opened, then passes it
// through to w. It is safe for concurrent use.
type gate struct {
	mu   sync.Mutex
	w    io.Writer
	buf  bytes.Buffer
	open bool
}

func (g *gate) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open {
		return g.buf.Write(p)
	}
	return g.w.Write(p)
}

// Open writes what was held to w and passes every later write through.
func (g *gate) Open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		return
	}
	g.open = true
	_, _ = g.w.Write(g.buf.Bytes())
	g.buf = bytes.Buffer{}
}

// partFunc is one part of the demo: it writes its progress lines to out
// and its children's output to log, and returns its result; t is its
// place in the part order.
type partFunc func(ctx context.Context, out, log io.Writer, t *turn) (partResult, error)

// partResult is what a part ends with: its headlines and the exit code of
// its dstgen analyze.
type partResult struct {
	heads []headline
	code  int
}

// turn is one part's place in the sequence: the part before it (nil for
// the first) and two signals of its own. named: this part has its
// session name; judged: its session is analyzed (or the part ended).
type turn struct {
	prev          *turn
	names         *stamps
	named, judged chan struct{}
	namedOnce     sync.Once
	judgedOnce    sync.Once
}

func newTurn(prev *turn, names *stamps) *turn {
	return &turn{prev: prev, names: names, named: make(chan struct{}), judged: make(chan struct{})}
}

// sessionName waits until the part before has its session name, then
// returns this part's: a UTC stamp later than any handed out before, so
// the sessions sort in part order.
func (t *turn) sessionName(ctx context.Context) (string, error) {
	if t.prev != nil {
		select {
		case <-t.prev.named:
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
	}
	name := t.names.next(time.Now())
	t.namedOnce.Do(func() { close(t.named) })
	return name, nil
}

// afterPrevJudged waits until the part before has analyzed its session
// (or ended): dstgen analyze compares a session with the one before it,
// which must be complete and judged by then, as when the parts ran one
// after another.
func (t *turn) afterPrevJudged(ctx context.Context) error {
	if t.prev == nil {
		return nil
	}
	select {
	case <-t.prev.judged:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// isJudged says this part's session is analyzed.
func (t *turn) isJudged() { t.judgedOnce.Do(func() { close(t.judged) }) }

// end releases whoever waits for this part.
func (t *turn) end() {
	t.namedOnce.Do(func() { close(t.named) })
	t.isJudged()
}

// stamps hands out session names (session.StampLayout), strictly
// increasing: two parts that start in the same second still get two
// sessions, one after the other.
type stamps struct {
	mu   sync.Mutex
	last time.Time
}

func (s *stamps) next(now time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := now.UTC().Truncate(time.Second)
	if !t.After(s.last) {
		t = s.last.Add(time.Second)
	}
	s.last = t
	return t.Format(session.StampLayout)
}

// runParts runs the parts at the same time. Part 0 writes to out and log
// as it goes; part i's writes are held until part i−1 has returned, so
// both streams read in part order. The first part to fail stops the
// others (their commands are interrupted, their clean-up runs) and its
// error is the one returned; runParts returns once every part has
// returned. res[i] is part i's result.
func runParts(ctx context.Context, out, log io.Writer, parts []partFunc) (res []partResult, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	res = make([]partResult, len(parts))
	names := &stamps{}
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		prev     *turn
		outs     = make([]io.Writer, len(parts))
		logs     = make([]io.Writer, len(parts))
		gates    []*gate
	)
	done := make([]chan struct{}, len(parts))
	for i := range parts {
		done[i] = make(chan struct{})
		outs[i], logs[i] = out, log
		if i > 0 {
			gOut, gLog := &gate{w: out}, &gate{w: log}
			gates = append(gates, gOut, gLog)
			outs[i], logs[i] = gOut, gLog
		}
	}
	for i, p := range parts {
		t := newTurn(prev, names)
		prev = t
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := p(ctx, outs[i], logs[i], t)
			t.end()
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
					cancel(fmt.Errorf("another part of the demo failed: %w", err))
				}
				mu.Unlock()
			} else {
				res[i] = r
			}
			if i > 0 {
				// This part's lines come after the part before's.
				<-done[i-1]
				outs[i].(*gate).Open()
				logs[i].(*gate).Open()
			}
			close(done[i])
		}()
	}
	wg.Wait()
	for _, g := range gates {
		g.Open() // nothing may stay held, whatever happened
	}
	return res, firstErr
}
