package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/env"
)

// Job states reported by StartJob, JobStatusOf, StopJob and ListJobs.
const (
	StatusStarted  = "started"  // StartJob launched it in this call
	StatusRunning  = "running"  // pid alive, no rc yet
	StatusFinished = "finished" // rc recorded (by the job, or by StopJob)
	StatusLost     = "lost"     // no process and no rc: killed with its wrapper, host rebooted
	StatusAbsent   = "absent"   // no such job directory
	// StatusAlreadyRunning: StartJob found the id running a different
	// command (argv) than the one asked for, and started nothing.
	StatusAlreadyRunning = "already-running"
	// StatusUnreachable: the host did not answer within the round-trip
	// bound (after retries). It says nothing about the job: it may well
	// still be running.
	StatusUnreachable = "unreachable"
)

// ErrAlreadyRunning is returned (wrapped) by StartJob when the id is
// running a different command than the one asked for.
var ErrAlreadyRunning = errors.New("job already running with a different command")

// UnreachableError means the host did not answer a job call: it refused or
// dropped the connection, or did not answer within the bound, on every
// attempt. It is not an answer about the job.
type UnreachableError struct {
	Host     string
	Attempts int
	Err      error // the last attempt's error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("host %s unreachable after %d attempt(s): %v", e.Host, e.Attempts, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// IsUnreachable reports whether err says the host did not answer (as
// opposed to answering badly, or refusing our key).
func IsUnreachable(err error) bool {
	var ue *UnreachableError
	return errors.As(err, &ue)
}

// Bounds on what a job call may ask of a host, so that every call fits in
// one bounded SSH round trip.
const (
	MaxStopGrace = 20 * time.Second
	MaxLogLines  = 10000
	maxLogBytes  = 1 << 20
)

// JobStatus is one job's state as its host reports it.
type JobStatus struct {
	Host    string        `json:"host"`
	ID      string        `json:"job"`
	Status  string        `json:"status"`
	PID     int           `json:"pid,omitempty"`
	RC      *int          `json:"rc,omitempty"`
	Started time.Time     `json:"started,omitzero"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Stopped string        `json:"stopped,omitempty"` // signal job stop needed: TERM or KILL
	Already bool          `json:"already,omitempty"` // start found it running and started nothing
	Source  string        `json:"source,omitempty"`  // ListJobs: remote, index or both
	Err     string        `json:"error,omitempty"`   // why the host did not answer (status unreachable)
}

// Fields returns the status as ordered key=value pairs, the form every
// job command prints; the first three are the contract's
// `status=started job=ID pid=N`, so a line-oriented caller can match them.
func (s JobStatus) Fields() [][2]string {
	f := [][2]string{{"status", s.Status}, {"job", s.ID}}
	if s.Status == StatusUnreachable {
		// Nothing is known about the job: no pid, rc or elapsed that could
		// be read as facts.
		return append(f, [2]string{"host", s.Host}, [2]string{"error", s.Err})
	}
	pid, rc := "", ""
	if s.PID > 0 {
		pid = strconv.Itoa(s.PID)
	}
	if s.RC != nil {
		rc = strconv.Itoa(*s.RC)
	}
	f = append(f, [2]string{"pid", pid}, [2]string{"rc", rc},
		[2]string{"elapsed", strconv.FormatInt(int64(s.Elapsed/time.Second), 10) + "s"}, [2]string{"host", s.Host})
	if s.Stopped != "" {
		f = append(f, [2]string{"stopped", s.Stopped})
	}
	if s.Source != "" {
		f = append(f, [2]string{"source", s.Source})
	}
	return f
}

// FormatKV renders pairs as `k=v k=v`. A value that holds whitespace, a
// quote, '=' or a control character is Go-quoted, so a hostile host name or
// path can never forge a second key or line for a caller that parses output.
func FormatKV(pairs [][2]string) string {
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p[0])
		b.WriteByte('=')
		b.WriteString(kvValue(p[1]))
	}
	return b.String()
}

func kvValue(v string) string {
	if strings.IndexFunc(v, func(r rune) bool {
		return r <= ' ' || r == '"' || r == '\'' || r == '=' || r == '\\' || r == 0x7f || r == '\u2028' || r == '\u2029'
	}) < 0 {
		return v
	}
	return strconv.Quote(v)
}

// hostShell runs one POSIX sh script on one host. *Pool is adapted to it
// (poolShell); tests also run the same scripts through a local sh.
type hostShell interface {
	runScript(ctx context.Context, script string) (stdout, stderr []byte, code int, err error)
}

func runJobScript(ctx context.Context, sh hostShell, host, id, what, script string) (JobStatus, error) {
	out, errOut, code, err := sh.runScript(ctx, script)
	if err != nil {
		st := JobStatus{Host: host, ID: id}
		if IsUnreachable(err) {
			st.Status, st.Err = StatusUnreachable, err.Error()
		}
		return st, fmt.Errorf("job %s %s on %s: %w", what, id, host, err)
	}
	recs := parseRecords(out)
	if len(recs) == 0 {
		return JobStatus{Host: host, ID: id}, fmt.Errorf("job %s %s on %s: exit %d, no status%s", what, id, host, code, stderrHint(errOut))
	}
	st, perr := jobStatusFrom(host, id, recs[len(recs)-1])
	if perr != nil {
		return st, fmt.Errorf("job %s %s on %s: %w%s", what, id, host, perr, stderrHint(errOut))
	}
	return st, nil
}

// stderrHint gives the first line of a script's stderr for an error message.
func stderrHint(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return ""
	}
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return ": " + s
}

func jobStart(ctx context.Context, sh hostShell, host, workdir, id string, argv []string) (JobStatus, error) {
	if err := ValidateJobID(id); err != nil {
		return JobStatus{Host: host, ID: id}, err
	}
	if len(argv) == 0 {
		return JobStatus{Host: host, ID: id}, errors.New("job start: no command")
	}
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return JobStatus{Host: host, ID: id}, errors.New("job start: command argument contains NUL")
		}
	}
	st, err := runJobScript(ctx, sh, host, id, "start", startScript(workdir, id, argv))
	if err == nil && st.Status == StatusAlreadyRunning {
		err = fmt.Errorf("job start %s on %s: %w (pid %d); stop it first or use another id", id, host, ErrAlreadyRunning, st.PID)
	}
	return st, err
}

func jobStatus(ctx context.Context, sh hostShell, host, workdir, id string) (JobStatus, error) {
	if err := ValidateJobID(id); err != nil {
		return JobStatus{Host: host, ID: id}, err
	}
	return runJobScript(ctx, sh, host, id, "status", statusScript(workdir, id))
}

func jobStop(ctx context.Context, sh hostShell, host, workdir, id string, grace time.Duration) (JobStatus, error) {
	if err := ValidateJobID(id); err != nil {
		return JobStatus{Host: host, ID: id}, err
	}
	if grace < 0 || grace > MaxStopGrace {
		return JobStatus{Host: host, ID: id}, fmt.Errorf("job stop: grace %v outside 0..%v", grace, MaxStopGrace)
	}
	return runJobScript(ctx, sh, host, id, "stop", stopScript(workdir, id, grace))
}

func jobList(ctx context.Context, sh hostShell, host, workdir string) ([]JobStatus, error) {
	out, errOut, code, err := sh.runScript(ctx, listScript(workdir))
	if err != nil {
		return nil, fmt.Errorf("job list on %s: %w", host, err)
	}
	if code != 0 {
		return nil, fmt.Errorf("job list on %s: exit %d%s", host, code, stderrHint(errOut))
	}
	var jobs []JobStatus
	for _, rec := range parseRecords(out) {
		id := rec["job"]
		if ValidateJobID(id) != nil {
			continue
		}
		st, err := jobStatusFrom(host, id, rec)
		if err != nil {
			return jobs, fmt.Errorf("job list on %s: job %s: %w", host, id, err)
		}
		st.Source = "remote"
		jobs = append(jobs, st)
	}
	return jobs, nil
}

func jobLogs(ctx context.Context, sh hostShell, host, workdir, id string, lines int, stderr bool) ([]byte, error) {
	if err := ValidateJobID(id); err != nil {
		return nil, err
	}
	if lines <= 0 || lines > MaxLogLines {
		return nil, fmt.Errorf("job logs: lines %d outside 1..%d", lines, MaxLogLines)
	}
	stream := "stdout"
	if stderr {
		stream = "stderr"
	}
	out, errOut, code, err := sh.runScript(ctx, logsScript(workdir, id, stream, lines, maxLogBytes))
	if err != nil {
		return nil, fmt.Errorf("job logs %s on %s: %w", id, host, err)
	}
	if code == 4 {
		return nil, fmt.Errorf("job logs %s on %s: job absent", id, host)
	}
	if code != 0 {
		return out, fmt.Errorf("job logs %s on %s: exit %d%s", id, host, code, stderrHint(errOut))
	}
	return out, nil
}

// poolShell runs scripts on one host through a Pool. Run already hands the
// command to `sh -c` on the host, bounded, so the script is passed as is.
type poolShell struct {
	p *Pool
	h env.Host
}

// runScript retries a script the host did not answer (connection
// refused or dropped, dial or command past its bound) with backoff, all
// attempts together within one round-trip bound: every job script is
// idempotent (start answers "already running", stop of a finished job
// changes nothing, the rest only read), so a poll across a network blip
// stays transparent. When no attempt got an answer the error is an
// *UnreachableError.
func (s poolShell) runScript(ctx context.Context, script string) ([]byte, []byte, int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.p.bound(ctx))
	defer cancel()
	var out, errOut bytes.Buffer
	delay := reachFirstBackoff
	for attempt := 1; ; attempt++ {
		out.Reset()
		errOut.Reset()
		res, err := s.p.Run(ctx, s.h, script, nil, &out, &errOut)
		if err == nil || !unreachableErr(err) {
			return out.Bytes(), errOut.Bytes(), res.ExitCode, err
		}
		dl, _ := ctx.Deadline()
		// Give up when another wait plus a minimal attempt would not fit in
		// what is left of the bound, or the caller gave up.
		if ctx.Err() != nil || attempt >= reachMaxAttempts || time.Until(dl) < delay+reachMinAttempt {
			return out.Bytes(), errOut.Bytes(), res.ExitCode, &UnreachableError{Host: s.h.Name, Attempts: attempt, Err: err}
		}
		s.p.logf("host %s: %v; retrying in %v", s.h.Name, err, delay)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return out.Bytes(), errOut.Bytes(), res.ExitCode, &UnreachableError{Host: s.h.Name, Attempts: attempt, Err: err}
		}
		delay = min(2*delay, reachMaxBackoff)
	}
}

// Retry schedule of poolShell.runScript: 0.25 s, 0.5 s, 1 s, 2 s, 4 s, 4 s
// ... between attempts, at most reachMaxAttempts, and never past the
// round-trip bound.
const (
	reachFirstBackoff = 250 * time.Millisecond
	reachMaxBackoff   = 4 * time.Second
	reachMaxAttempts  = 8
	reachMinAttempt   = 500 * time.Millisecond
)

// unreachableErr tells "the host did not answer" from "the host answered
// no" (authentication, host key, a closed pool) in a Pool.Run error. Run
// flattens its cause into a message, so beyond connLost this reads the
// standard library's and x/crypto/ssh's wording.
func unreachableErr(err error) bool {
	var re *runError
	if errors.As(err, &re) && re.connLost || errors.Is(err, errConnLost) {
		return true
	}
	msg := strings.ToLower(err.Error())
	for _, never := range []string{"unable to authenticate", "knownhosts", "host key", "pool is closed", "canceled", "no such host"} {
		if strings.Contains(msg, never) {
			return false
		}
	}
	for _, m := range []string{"connection refused", "i/o timeout", "no route to host", "network is unreachable",
		"host is down", "connection reset", "broken pipe", "deadline exceeded", "no time left", "still running after",
		"handshake failed: eof", "connection lost", "temporary failure in name resolution", "server misbehaving"} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// StartJob launches argv detached on host as job id under
// <workdir>/jobs/<id>/ and answers within about 2 s. argv is run as given
// (each element one word; use `sh -c LINE` for shell syntax). A running job
// with the same id and the same argv is left alone and its status returned
// with Already set; one running a different argv is left alone too, but
// answers StatusAlreadyRunning and an error wrapping ErrAlreadyRunning. A
// host that does not answer within the bound gives an *UnreachableError
// (and every job call below does the same).
func StartJob(ctx context.Context, pool *Pool, host env.Host, workdir, id string, argv []string) (JobStatus, error) {
	return jobStart(ctx, poolShell{pool, host}, host.Name, workdir, id, argv)
}

// JobStatusOf reports one job's state in one round trip.
func JobStatusOf(ctx context.Context, pool *Pool, host env.Host, workdir, id string) (JobStatus, error) {
	return jobStatus(ctx, poolShell{pool, host}, host.Name, workdir, id)
}

// StopJob sends TERM to the job's process group, waits up to grace, then
// KILLs it, and records the signal and rc. Stopping a job that is no
// longer running changes nothing.
func StopJob(ctx context.Context, pool *Pool, host env.Host, workdir, id string, grace time.Duration) (JobStatus, error) {
	return jobStop(ctx, poolShell{pool, host}, host.Name, workdir, id, grace)
}

// ListJobs reports every job directory on host.
func ListJobs(ctx context.Context, pool *Pool, host env.Host, workdir string) ([]JobStatus, error) {
	return jobList(ctx, poolShell{pool, host}, host.Name, workdir)
}

// JobLogs returns the last lines of the job's stdout (or stderr), at most
// MaxLogLines lines and 1 MiB.
func JobLogs(ctx context.Context, pool *Pool, host env.Host, workdir, id string, lines int, stderr bool) ([]byte, error) {
	return jobLogs(ctx, poolShell{pool, host}, host.Name, workdir, id, lines, stderr)
}
