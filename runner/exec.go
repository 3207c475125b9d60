package runner

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/oneline"
	"github.com/dstgen/dstgen/internal/shell"
	"golang.org/x/crypto/ssh"
)

// Result statuses.
const (
	StatusOK      = "ok"      // exit 0
	StatusFailed  = "failed"  // ran, exited non-zero
	StatusTimeout = "timeout" // outlived the round-trip bound; killed
	StatusError   = "error"   // could not run or lost the connection
)

// ExitTimeout is Result.ExitCode for a timed-out command: 124, as GNU
// timeout reports it (docs/real-env-test.md §11 decision).
const ExitTimeout = 124

// Result is what one remote command did on one host.
type Result struct {
	Host     string        `json:"host"`
	ExitCode int           `json:"exit"`   // -1 when there is none (status error)
	Status   string        `json:"status"` // ok | failed | timeout | error
	Elapsed  time.Duration `json:"elapsed_ns"`
	Err      string        `json:"error,omitempty"` // one line, for timeout and error
}

// errConnLost marks a Run whose connection died under a started command:
// the command may or may not have run, so only an idempotent caller may
// retry it.
var errConnLost = errors.New("connection lost")

// runError is Run's error; connLost lets idempotent callers (the job
// scripts) retry on a fresh connection.
type runError struct {
	msg      string
	connLost bool
}

func (e *runError) Error() string { return e.msg }

// killGrace bounds the kill session sent after a client-side deadline, so a
// timed-out Run still returns within bound + ~1 s.
const killGrace = 900 * time.Millisecond

// Run runs cmd (a shell string the caller already quoted with Quote) on h
// through h's pooled connection, streaming its output to stdout and stderr
// (nil discards). It is bounded by min(ctx deadline, Options.Timeout,
// timeout_s), never more than 30 s.
//
// Error is nil when the command ran to completion, whatever its exit code
// (Status ok or failed); it is non-nil, and equals Result.Err, for timeout
// and error.
//
// On the remote side the command runs in its own session and process group
// (setsid) under GNU timeout a little longer than the bound, with the group
// id written to a file; when the client-side deadline fires first, a fresh
// session kills that whole group. Signalling the SSH session is not enough:
// OpenSSH does not forward it to the command, and children of the command
// would survive anyway.
func (p *Pool) Run(ctx context.Context, h env.Host, cmd string, stdin io.Reader, stdout, stderr io.Writer) (Result, error) {
	start := time.Now()
	res := Result{Host: h.Name, ExitCode: -1}
	fail := func(status string, err error) (Result, error) {
		res.Status = status
		res.Elapsed = time.Since(start)
		res.Err = oneline.First(err.Error())
		if status == StatusTimeout {
			res.ExitCode = ExitTimeout
		}
		return res, &runError{msg: res.Err, connLost: errors.Is(err, errConnLost)}
	}
	bound := p.bound(ctx)
	if bound <= 0 {
		return fail(StatusTimeout, fmt.Errorf("host %s: no time left before the deadline", h.Name))
	}
	rctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()

	c, sess, release, err := p.session(rctx, h)
	if err != nil {
		return fail(StatusError, err)
	}
	defer release()
	defer sess.Close()

	marker := randomMarker()
	out := &gate{w: stdout}
	errw := &gate{w: stderr}
	defer out.shut()
	defer errw.shut()
	sess.Stdout = out
	sess.Stderr = errw
	if stdin != nil {
		// Feed stdin from our own goroutine: Session.Wait waits for its
		// stdin copier, and a caller's stdin (a terminal) may never end.
		in, err := sess.StdinPipe()
		if err != nil {
			return fail(StatusError, fmt.Errorf("host %s: stdin: %w", h.Name, err))
		}
		go func() {
			_, _ = io.Copy(in, stdin)
			_ = in.Close()
		}()
	}
	// Every command knows its host's own work dir, so one Taskfile line
	// ("$DSTGEN_WORKDIR"/scripts/...) works on hosts whose work dirs differ.
	wd := "DSTGEN_WORKDIR=" + shell.Quote(p.env.HostWorkdir(h)) + "; export DSTGEN_WORKDIR; "
	if err := sess.Start(wd + wrap(cmd, marker, bound, c.grouping.Load())); err != nil {
		p.drop(c)
		return fail(StatusError, fmt.Errorf("host %s: start command: %w", h.Name, err))
	}
	waitc := make(chan error, 1)
	go func() { waitc <- sess.Wait() }()
	select {
	case err := <-waitc:
		res.Elapsed = time.Since(start)
		if err == nil {
			res.Status, res.ExitCode = StatusOK, 0
			return res, nil
		}
		var ee *ssh.ExitError
		if errors.As(err, &ee) {
			res.Status, res.ExitCode = StatusFailed, ee.ExitStatus()
			return res, nil
		}
		p.drop(c)
		return fail(StatusError, fmt.Errorf("host %s: %w while the command ran: %v", h.Name, errConnLost, err))
	case <-rctx.Done():
		// Stop forwarding before killing: output arriving after we return
		// must not reach the caller's writers.
		out.shut()
		errw.shut()
		p.kill(c, marker)
		_ = sess.Close()
		if errors.Is(rctx.Err(), context.DeadlineExceeded) {
			return fail(StatusTimeout, fmt.Errorf("host %s: command still running after %s; killed its process group", h.Name, bound.Round(time.Millisecond)))
		}
		return fail(StatusError, fmt.Errorf("host %s: canceled; killed the remote process group", h.Name))
	}
}

// session opens a session on h's connection. A connection that turns out to
// be dead (dropped since its last use) is redialled once, transparently.
func (p *Pool) session(ctx context.Context, h env.Host) (*conn, *ssh.Session, func(), error) {
	s, err := p.slot(h.Name)
	if err != nil {
		return nil, nil, nil, err
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, nil, fmt.Errorf("host %s: waiting for a free session: %w", h.Name, ctx.Err())
	}
	release := func() { <-s.sem }
	for attempt := 0; ; attempt++ {
		c, fresh, err := p.conn(ctx, h)
		if err != nil {
			release()
			return nil, nil, nil, err
		}
		sess, err := newSession(ctx, c)
		if err == nil {
			return c, sess, release, nil
		}
		p.drop(c)
		if fresh || attempt > 0 || ctx.Err() != nil {
			release()
			// The connection (or the holder's upstream) died under us: that
			// is a host that stopped answering, not bad input.
			return nil, nil, nil, fmt.Errorf("host %s: open session: %w: %w", h.Name, errConnLost, err)
		}
		p.logf("host %s: session failed on a reused connection (%v); reconnecting", h.Name, err)
	}
}

// newSession is Client.NewSession bounded by ctx: on a half-open TCP
// connection the channel-open reply never comes.
func newSession(ctx context.Context, c *conn) (*ssh.Session, error) {
	type res struct {
		s   *ssh.Session
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := c.client.NewSession()
		ch <- res{s, err}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-ctx.Done():
		c.close()
		go func() {
			if r := <-ch; r.s != nil {
				_ = r.s.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// kill sends SIGKILL to the process group recorded under marker, over a
// fresh session on the same connection, waiting at most killGrace.
func (p *Pool) kill(c *conn, marker string) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		sess, err := c.client.NewSession()
		if err != nil {
			p.logf("host %s: kill after timeout: %v", c.host, err)
			return
		}
		defer sess.Close()
		if err := sess.Run(killScript(marker)); err != nil {
			p.logf("host %s: kill after timeout: %v", c.host, err)
		}
	}()
	t := time.NewTimer(killGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		p.logf("host %s: kill after timeout did not confirm within %s; remote timeout will reap it", c.host, killGrace)
	}
}

func pgidFile(marker string) string { return "/tmp/.dstgen-run-" + marker + ".pgid" }

// What a host's shell offers the wrapper, as conn.grouping records it.
const (
	groupUnknown int32 = iota // not probed: the wrapper probes inline
	groupGrouped              // util-linux setsid -w and timeout
	groupPlain                // neither: the command runs ungrouped
)

// groupProbe is the wrapper's question to a host, a shell condition that
// holds when setsid -w and timeout are there. It runs a process (setsid),
// so a connection whose answer is known asks only the shell builtins
// whether both are still on PATH.
const (
	groupProbe = `setsid -w true 2>/dev/null && command -v timeout >/dev/null 2>&1`
	groupKnown = `command -v setsid >/dev/null 2>&1 && command -v timeout >/dev/null 2>&1`
)

// wrap builds the remote command line. The remote timeout is the bound plus
// two seconds: it only matters when the client is gone (connection lost)
// and cannot send the kill itself. grouping is the connection's probed
// answer (groupUnknown: probe here).
func wrap(cmd, marker string, bound time.Duration, grouping int32) string {
	secs := int((bound+time.Second-1)/time.Second) + 2
	f := shell.Quote(pgidFile(marker))
	inner := `echo $$ >"$0" 2>/dev/null; exec timeout -s KILL ` + strconv.Itoa(secs) + ` sh -c "$1"`
	cond := groupProbe
	switch grouping {
	case groupGrouped:
		cond = groupKnown
	case groupPlain:
		cond = "false"
	}
	// Hosts without util-linux setsid -w or coreutils timeout (BusyBox)
	// still run the command, without the process-group guarantee.
	return "f=" + f + "; if " + cond + "; then setsid -w sh -c " + shell.Quote(inner) + ` "$f" ` + shell.Quote(cmd) +
		`; else sh -c ` + shell.Quote(cmd) + `; fi; rc=$?; rm -f "$f"; exit $rc`
}

// probeGrouping returns c's grouping, asking the host once per connection
// (groupProbe in its own session) when it is not known yet; groupUnknown
// when the host did not answer within DialTimeout. The holder calls it for
// every upstream connection it hands out, so a CLI call through it never
// pays the probe's process; a second probe racing the first is harmless.
func probeGrouping(ctx context.Context, c *conn) int32 {
	if g := c.grouping.Load(); g != groupUnknown {
		return g
	}
	ctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	sess, err := newSession(ctx, c)
	if err != nil {
		return groupUnknown
	}
	defer sess.Close()
	done := make(chan error, 1)
	go func() { done <- sess.Run(groupProbe) }()
	var g int32
	select {
	case err = <-done:
	case <-ctx.Done():
		return groupUnknown
	}
	var ee *ssh.ExitError
	switch {
	case err == nil:
		g = groupGrouped
	case errors.As(err, &ee):
		g = groupPlain
	default:
		return groupUnknown
	}
	c.grouping.Store(g)
	return g
}

func killScript(marker string) string {
	// No "--" before the negative pid: dash's kill builtin rejects it.
	return "f=" + shell.Quote(pgidFile(marker)) + `; g=$(cat "$f" 2>/dev/null); case $g in ''|*[!0-9]*) ;; *) kill -9 -"$g" 2>/dev/null ;; esac; rm -f "$f"; exit 0`
}

func randomMarker() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// gate forwards writes until shut, then swallows them, so goroutines still
// copying a killed session's output never touch the caller's writer after
// Run has returned.
type gate struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (g *gate) Write(b []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.w == nil {
		return len(b), nil
	}
	if _, err := g.w.Write(b); err != nil {
		// A failing sink (closed pipe) must not kill the remote command's
		// output stream mid-way; drop further output instead.
		g.closed = true
	}
	return len(b), nil
}

func (g *gate) shut() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// RunEach runs cmd on every host, at most parallel at a time (≤0 means all
// at once), and returns the results in hosts order. sinks gives each host's
// stdout and stderr writers; it is called once per host before that host
// starts and may return nil writers to discard.
func (p *Pool) RunEach(ctx context.Context, hosts []env.Host, cmd string, parallel int, sinks func(env.Host) (stdout, stderr io.Writer)) []Result {
	if parallel <= 0 || parallel > len(hosts) {
		parallel = len(hosts)
	}
	results := make([]Result, len(hosts))
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				results[i] = Result{Host: h.Name, ExitCode: -1, Status: StatusError, Err: "host " + h.Name + ": not started: " + ctx.Err().Error()}
				return
			}
			defer func() { <-sem }()
			var so, se io.Writer
			if sinks != nil {
				so, se = sinks(h)
			}
			results[i], _ = p.Run(ctx, h, cmd, nil, so, se)
		}()
	}
	wg.Wait()
	return results
}

// runAll runs cmd on hosts concurrently (bounded by parallel), streams
// stdout and stderr to out — each line prefixed "[host] " when there is more
// than one host — and ends with one Summary line per host.
func (p *Pool) runAll(ctx context.Context, hosts []env.Host, cmd string, parallel int, out io.Writer) []Result {
	var mu sync.Mutex
	var lws []*LineWriter
	results := p.RunEach(ctx, hosts, cmd, parallel, func(h env.Host) (io.Writer, io.Writer) {
		prefix := ""
		if len(hosts) > 1 {
			prefix = "[" + h.Name + "] "
		}
		so, se := NewLineWriter(out, &mu, prefix), NewLineWriter(out, &mu, prefix)
		mu.Lock()
		lws = append(lws, so, se)
		mu.Unlock()
		return so, se
	})
	for _, lw := range lws {
		lw.Flush()
	}
	for _, r := range results {
		fmt.Fprintln(out, Summary(r))
	}
	return results
}

// Summary is r as one key=value line: host= status= exit= elapsed= and,
// for timeout and error, error= with the reason quoted.
func Summary(r Result) string {
	s := fmt.Sprintf("host=%s status=%s exit=%d elapsed=%s", r.Host, r.Status, r.ExitCode, r.Elapsed.Round(time.Millisecond))
	if r.Err != "" {
		s += " error=" + strconv.Quote(r.Err)
	}
	return s
}

// LineWriter writes whole lines to a shared writer, each prefixed, so the
// output of concurrent hosts interleaves by line and never mid-line.
type LineWriter struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix string
	buf    bytes.Buffer
}

// NewLineWriter returns a LineWriter onto w; mu is shared by every
// LineWriter of w.
func NewLineWriter(w io.Writer, mu *sync.Mutex, prefix string) *LineWriter {
	return &LineWriter{mu: mu, w: w, prefix: prefix}
}

// Write buffers b and emits every complete line. The shared mutex also
// guards the buffer: x/crypto copies stdout and stderr from two goroutines.
func (l *LineWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(b)
	for {
		i := bytes.IndexByte(l.buf.Bytes(), '\n')
		if i < 0 {
			break
		}
		l.emit(l.buf.Next(i + 1))
	}
	return len(b), nil
}

// Flush emits a trailing partial line, newline-terminated.
func (l *LineWriter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len() > 0 {
		line := append(l.buf.Bytes(), '\n')
		l.buf.Reset()
		l.emit(line)
	}
}

// emit writes one line; the caller holds mu.
func (l *LineWriter) emit(line []byte) {
	_, _ = io.WriteString(l.w, l.prefix)
	_, _ = l.w.Write(line)
}
