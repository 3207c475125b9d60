package nemesis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/session"
)

// The process rows of docs/nemesis.md §1: each finds the SUT's pid on every
// target (pidfile, systemd unit or pgrep pattern), signals it, and proves
// the landing from the process table, never from kill's exit status.

// Bounds of the process faults. Each wait runs on the host inside one
// round trip, so it stays under the transport's 30 s ceiling.
const (
	killWait    = 10 * time.Second // a signalled process must be gone by then
	pauseWait   = 5 * time.Second  // the state must read T (or not) by then
	startWait   = 30 * time.Second // a restarted SUT must show a new pid by then
	startPoll   = 200 * time.Millisecond
	maxAncestry = 64 // shell ancestors walked to keep them out of a pgrep
)

func processNemeses() []Nemesis {
	return []Nemesis{
		killNemesis{id: "kill-9", signal: "KILL"},
		killNemesis{id: "kill-term", signal: "TERM"},
		pauseNemesis{},
		restartNemesis{},
	}
}

// proc is one process as the host's /proc saw it. Start (the starttime
// field of /proc/<pid>/stat) tells a pid from a later process that reused
// the number.
type proc struct {
	PID   int
	State string
	Start string
	Cmd   string
}

// pstatFn is the shell function printing "<state> <starttime>" of a pid
// (the fields after the parenthesised comm, which may hold spaces), or
// nothing when /proc has no such pid.
const pstatFn = `pstat() { [ -r /proc/$1/stat ] && sed 's/.*) //' /proc/$1/stat 2>/dev/null | cut -d' ' -f1,20; }` + "\n" + treeFn

// treeFn prints a pid and every descendant of it. A signal goes to the
// whole tree: a SUT started as `sh -c CMD` (a dstgen job, many unit
// files) is the shell's child, and killing only the pid in the pidfile
// would leave the real server running — a fault that did not land while
// the pid changed.
const treeFn = `tree() { cat /proc/[0-9]*/stat 2>/dev/null | awk -v root="$1" '{ l=$0; sub(/.*\) /, "", l); split(l, f, " "); pp[$1]=f[2] } END { n=1; q[1]=root; out=root; for (i=1; i<=n && i<100000; i++) for (p in pp) if (pp[p]==q[i]) { n++; q[n]=p; out=out " " p } print out }'; }` + "\n"

// locator says how a host's SUT is found, for messages and evidence names.
func locator(s *SUT) string {
	switch {
	case s.PIDFile != "":
		return "pidfile " + s.PIDFile
	case s.Unit != "":
		return "unit " + s.Unit
	default:
		return "pattern " + s.Pattern
	}
}

// needSUT is the one-line refusal for a target without a findable SUT.
func needSUT(h Host, id string) error {
	if h.SUT == nil || (h.SUT.PIDFile == "" && h.SUT.Unit == "" && h.SUT.Pattern == "") {
		return fmt.Errorf("%s on %s: no SUT process on this host (env.yml gives it no pidfile, unit or pattern)", id, h.Name)
	}
	return nil
}

// lookupScript prints one "<pid> <state> <starttime> <cmdline>" line per
// live (non-zombie) SUT process, nothing when none runs.
func lookupScript(s *SUT) string {
	var b strings.Builder
	b.WriteString(pstatFn)
	b.WriteString(`show() { s=$(pstat "$1"); case "$s" in ''|Z*) return 0;; esac; printf '%s %s %s\n' "$1" "$s" "$(tr '\0\n' '  ' < /proc/$1/cmdline 2>/dev/null | cut -c1-200)"; }` + "\n")
	switch {
	case s.PIDFile != "":
		fmt.Fprintf(&b, "f=%s\n[ -r \"$f\" ] || exit 0\np=$(tr -dc 0-9 < \"$f\")\n[ -n \"$p\" ] && show \"$p\"\nexit 0\n", shell.Quote(s.PIDFile))
	case s.Unit != "":
		fmt.Fprintf(&b, "p=$(systemctl show -p MainPID --value %s) || exit 1\n[ \"$p\" -gt 0 ] 2>/dev/null && show \"$p\"\nexit 0\n", shell.Quote(s.Unit))
	default:
		// The shells running this script (and over SSH the login shell
		// above it) carry the pattern in their command line: walk the
		// ancestry and leave it out. The $(pgrep) subshell is gone by the
		// time the candidates are read, so show skips it.
		fmt.Fprintf(&b, "anc=' '; p=$$; i=0\nwhile [ \"$p\" -gt 1 ] 2>/dev/null && [ $i -lt %d ]; do anc=\"$anc$p \"; p=$(sed 's/.*) //' /proc/$p/stat 2>/dev/null | cut -d' ' -f2); i=$((i+1)); done\n", maxAncestry)
		fmt.Fprintf(&b, "c=$(pgrep -f -- %s)\nfor p in $c; do case \"$anc\" in *\" $p \"*) continue;; esac; show \"$p\"; done\nexit 0\n", shell.Quote(s.Pattern))
	}
	return b.String()
}

// parseProcs reads lookupScript's output.
func parseProcs(out string) ([]proc, error) {
	var ps []proc
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, " ", 4)
		if len(f) < 3 {
			return nil, fmt.Errorf("unreadable process line %q", line)
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil {
			return nil, fmt.Errorf("unreadable pid in %q", line)
		}
		p := proc{PID: pid, State: f[1], Start: f[2]}
		if len(f) == 4 {
			p.Cmd = strings.TrimSpace(f[3])
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// lookupSUT returns the live SUT process of h, or nil when none runs. A
// pattern matching several processes is an error naming them: namespaced
// hosts share one pid space, so the pattern cannot tell whose they are.
func lookupSUT(ctx context.Context, x Exec, h Host) (*proc, error) {
	out, err := x.Run(ctx, h.Host, lookupScript(h.SUT))
	if err != nil {
		return nil, fmt.Errorf("%s: find the SUT by %s: %w", h.Name, locator(h.SUT), err)
	}
	ps, err := parseProcs(out)
	if err != nil {
		return nil, fmt.Errorf("%s: find the SUT by %s: %w", h.Name, locator(h.SUT), err)
	}
	switch len(ps) {
	case 0:
		return nil, nil
	case 1:
		return &ps[0], nil
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = fmt.Sprintf("%d (%s)", p.PID, p.Cmd)
	}
	return nil, fmt.Errorf("%s: SUT %s matches %d processes: %s; make the pattern name this host only (its data dir or address)",
		h.Name, locator(h.SUT), len(ps), strings.Join(names, ", "))
}

// findSUT is lookupSUT for a fault that needs the process running.
func findSUT(ctx context.Context, x Exec, h Host, id string) (*proc, error) {
	if err := needSUT(h, id); err != nil {
		return nil, err
	}
	p, err := lookupSUT(ctx, x, h)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	if p == nil {
		return nil, fmt.Errorf("%s on %s: the SUT is not running (%s finds no live process)", id, h.Name, locator(h.SUT))
	}
	return p, nil
}

// sameProc is the shell test "pid p is still the process that started at
// start and is no zombie"; it needs pstatFn.
func sameProc(p *proc) string {
	return fmt.Sprintf(`{ s=$(pstat %d); [ -n "$s" ] && [ "${s#Z }" = "$s" ] && [ "${s#* }" = %s ]; }`, p.PID, shell.Quote(p.Start))
}

// signalAndWait sends sig to p and waits, on the host, up to wait for it
// to be gone. It reports whether the exit was seen.
func signalAndWait(ctx context.Context, x Exec, h Host, p *proc, sig string, wait time.Duration) (bool, error) {
	tries := int(wait / (100 * time.Millisecond))
	// The whole tree is signalled and must be gone: the pid exited (or is
	// a zombie) and no descendant it had is left.
	script := pstatFn + fmt.Sprintf("t=$(tree %d)\nkill -%s %d || exit 1\nfor q in $t; do kill -%s $q 2>/dev/null; done\n"+
		"left() { %s && return 0; for q in $t; do [ $q = %d ] && continue; s=$(pstat $q); case \"$s\" in ''|Z*) ;; *) return 0;; esac; done; return 1; }\n"+
		"i=0\nwhile left && [ $i -lt %d ]; do sleep 0.1; i=$((i+1)); done\nif left; then echo alive; else echo gone; fi\n",
		p.PID, sig, p.PID, sig, sameProc(p), p.PID, tries)
	out, err := x.Run(ctx, h.Host, script)
	if err != nil {
		return false, fmt.Errorf("%s: kill -%s %d: %w", h.Name, sig, p.PID, err)
	}
	return strings.TrimSpace(out) == "gone", nil
}

// isGone says whether p has exited (its pid is free or another process's).
func isGone(ctx context.Context, x Exec, h Host, p *proc, tree string) (bool, error) {
	// Gone means the whole tree: a child left running (the real server
	// under a `sh -c`) is a kill that did not land.
	left := ""
	for _, q := range strings.Fields(tree) {
		if n, err := strconv.Atoi(q); err == nil && n != p.PID {
			left += fmt.Sprintf("s=$(pstat %d); case \"$s\" in ''|Z*) ;; *) echo alive; exit 0;; esac\n", n)
		}
	}
	out, err := x.Run(ctx, h.Host, pstatFn+left+"if "+sameProc(p)+"; then echo alive; else echo gone; fi\n")
	if err != nil {
		return false, fmt.Errorf("%s: read pid %d: %w", h.Name, p.PID, err)
	}
	return strings.TrimSpace(out) == "gone", nil
}

// restartSUT brings h's SUT back after old exited, unless it already is
// (someone else's supervisor, an earlier Heal), and waits for a new pid.
// It is what makes Heal of every process fault idempotent.
func restartSUT(ctx context.Context, x Exec, h Host, old *proc) (*proc, error) {
	cur, err := lookupSUT(ctx, x, h)
	if err != nil {
		return nil, err
	}
	if cur != nil {
		return cur, nil
	}
	if h.SUT.StartScript == "" {
		return nil, fmt.Errorf("%s: cannot restart: the SUT has no start command dstgen can run (deploy it through dstgen, as a job or a unit)", h.Name)
	}
	if _, err := x.Run(ctx, h.Host, h.SUT.StartScript); err != nil {
		return nil, fmt.Errorf("%s: restart the SUT: %w", h.Name, err)
	}
	return waitNewPID(ctx, x, h, old)
}

// hostEv is one target's share of a fault's evidence.
type hostEv struct {
	host          string
	before, after any
	delta         *float64
	raw           string
	verdict       string
}

// joinEvidence makes one record of the targets' shares: with one target
// its values as they are, with several an object keyed by host name. It is
// changed only when every target changed, absent when none could be read,
// unchanged when none changed, and ambiguous for a partial landing.
func joinEvidence(kind, name string, evs []hostEv) session.Evidence {
	e := session.Evidence{Kind: kind, Name: name}
	count := map[string]int{}
	raws := make([]string, len(evs))
	for i, v := range evs {
		count[v.verdict]++
		raws[i] = v.host + ": " + v.raw
	}
	e.Raw = strings.Join(raws, "; ")
	switch {
	case len(evs) == 0:
		e.Verdict = session.SignalAbsent
	case count[session.SignalChanged] == len(evs):
		e.Verdict = session.SignalChanged
	case count[session.SignalAbsent] == len(evs):
		e.Verdict = session.SignalAbsent
	case count[session.SignalUnchanged] == len(evs):
		e.Verdict = session.SignalUnchanged
	default:
		e.Verdict = session.SignalAmbiguous
	}
	if len(evs) == 1 {
		e.Before, e.After, e.Delta = rawJSON(evs[0].before), rawJSON(evs[0].after), evs[0].delta
		return e
	}
	b, a := map[string]any{}, map[string]any{}
	for _, v := range evs {
		if v.before != nil {
			b[v.host] = v.before
		}
		if v.after != nil {
			a[v.host] = v.after
		}
	}
	if len(b) > 0 {
		e.Before = rawJSON(b)
	}
	if len(a) > 0 {
		e.After = rawJSON(a)
	}
	return e
}

// rawJSON marshals a value of the evidence (numbers, strings, maps of
// them, which cannot fail); nil stays absent.
func rawJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(strconv.Quote(fmt.Sprint(v)))
	}
	return b
}

// killed is one target of a kill or restart: the process signalled and
// what became of it.
type killed struct {
	h      Host
	old    *proc
	tree   string // old's pid and its descendants at injection (treeFn)
	exited bool   // the exit was seen after the signal
	armed  bool   // its restart undo script is on the host
	now    *proc  // the SUT's process after a restart or heal
}

// killNemesis is kill-9 (SIGKILL) and kill-term (SIGTERM).
type killNemesis struct{ id, signal string }

func (k killNemesis) Info() Info {
	how := "SIGKILL: the SUT process dies at once, without cleanup"
	if k.signal == "TERM" {
		how = fmt.Sprintf("SIGTERM: a graceful stop, waited for up to %s", killWait)
	}
	return Info{
		ID: k.id, Group: "process", BuiltIn: true,
		Summary:  how + "; heal restarts the SUT (its job or unit) and waits for a new pid",
		Needs:    []string{"kill"},
		Injector: "pid (the signalled pid gone, exit seen; raw says whether it came back with a new pid)",
		Victim:   "log marker of the exit or restart; leader change",
	}
}

// restartUndoKind names the undo scripts that bring a killed SUT back.
const restartUndoKind = "restart"

// restartUndo is a target's restart, guarded: it starts the SUT only while
// none runs, so it may run at any time, any number of times (a heal, then
// `dstgen heal`), and it never starts a second one.
func restartUndo(s *SUT) string {
	return "running=$( (\n" + lookupScript(s) + "\n) 2>/dev/null | head -n 1)\n" +
		"[ -n \"$running\" ] && exit 0\n" + s.StartScript + "\nexit 0\n"
}

func (k killNemesis) Inject(ctx context.Context, x Exec, f Fault) (Active, error) {
	ts, err := resolveProcs(ctx, x, f, k.id)
	if err != nil {
		return nil, err
	}
	a := &killActive{x: x, id: k.id, epoch: f.tag(), targets: ts}
	for _, t := range ts {
		// The way back is on the host before the SUT is killed: a crash of
		// dstgen between the two leaves something `dstgen heal` restarts.
		switch {
		case ordered([]Host{t.h}):
			// Restarted in order by the heal (or HealAll), never by a
			// script of this host alone (ordered.go).
			if err := armUndo(ctx, x, t.h, f.tag(), orderedUndoKind, orderedUndo(t.h)); err != nil {
				return a, fmt.Errorf("%s: %w", k.id, err)
			}
			t.armed = true
		case t.h.SUT.StartScript != "":
			if err := armUndo(ctx, x, t.h, f.tag(), restartUndoKind, restartUndo(t.h.SUT)); err != nil {
				return a, fmt.Errorf("%s: %w", k.id, err)
			}
			t.armed = true
		}
		if t.exited, err = signalAndWait(ctx, x, t.h, t.old, k.signal, killWait); err != nil {
			return a, fmt.Errorf("%s: %w", k.id, err)
		}
	}
	return a, nil
}

// resolveProcs finds the SUT process of every target before any is
// signalled, so a missing one leaves nothing half done.
func resolveProcs(ctx context.Context, x Exec, f Fault, id string) ([]*killed, error) {
	if len(f.Targets) == 0 {
		return nil, fmt.Errorf("%s: no target hosts", id)
	}
	var ts []*killed
	for _, h := range f.Targets {
		p, err := findSUT(ctx, x, h, id)
		if err != nil {
			return nil, err
		}
		out, err := x.Run(ctx, h.Host, treeFn+fmt.Sprintf("tree %d\n", p.PID))
		if err != nil {
			return nil, fmt.Errorf("%s: %s: list the SUT's processes under pid %d: %w", id, h.Name, p.PID, err)
		}
		ts = append(ts, &killed{h: h, old: p, tree: strings.TrimSpace(out)})
	}
	return ts, nil
}

// killActive is a kill-9, kill-term or restart in effect.
type killActive struct {
	x       Exec
	id      string
	epoch   string
	targets []*killed
}

func (a *killActive) Evidence(ctx context.Context) (session.Evidence, error) {
	var evs []hostEv
	for _, t := range a.targets {
		gone, err := isGone(ctx, a.x, t.h, t.old, t.tree)
		if err != nil {
			return session.Evidence{}, fmt.Errorf("%s evidence: %w", a.id, err)
		}
		cur, err := lookupSUT(ctx, a.x, t.h)
		if err != nil {
			return session.Evidence{}, fmt.Errorf("%s evidence: %w", a.id, err)
		}
		v := hostEv{host: t.h.Name, before: t.old.PID, after: "gone", verdict: session.SignalUnchanged}
		switch {
		case gone && cur != nil:
			v.after, v.verdict = cur.PID, session.SignalChanged
			v.raw = fmt.Sprintf("pid %d gone (exit seen), back with new pid %d", t.old.PID, cur.PID)
		case gone:
			v.verdict = session.SignalChanged
			v.raw = fmt.Sprintf("pid %d gone (exit seen), not back yet", t.old.PID)
		default:
			v.after = t.old.PID
			v.raw = fmt.Sprintf("pid %d still running", t.old.PID)
		}
		evs = append(evs, v)
	}
	return joinEvidence("pid", a.name(), evs), nil
}

// name is the evidence name: how the SUT was found on the first target.
func (a *killActive) name() string {
	if len(a.targets) == 0 {
		return ""
	}
	return locator(a.targets[0].h.SUT)
}

// TargetCheck proves the signalled pid was the SUT's: the locator named it
// at injection, with the command line recorded then, and it exited.
func (a *killActive) TargetCheck(ctx context.Context) (*session.Evidence, error) {
	var evs []hostEv
	for _, t := range a.targets {
		gone, err := isGone(ctx, a.x, t.h, t.old, t.tree)
		if err != nil {
			return nil, fmt.Errorf("%s target check: %w", a.id, err)
		}
		v := hostEv{host: t.h.Name, before: t.old.PID, after: "running", verdict: session.SignalUnchanged,
			raw: fmt.Sprintf("%s named pid %d (%s)", locator(t.h.SUT), t.old.PID, t.old.Cmd)}
		if gone {
			v.after, v.verdict = "gone", session.SignalChanged
		}
		evs = append(evs, v)
	}
	e := joinEvidence("sut_pid", a.name(), evs)
	return &e, nil
}

// Heal restarts every target whose SUT is not running and waits for its
// new pid; a target already running again is left alone. Targets are
// healed at once, each within its own bound, so one slow start does not
// starve the others; the restart undo of a healed target is removed.
func (a *killActive) Heal(ctx context.Context) error {
	hs := make([]Host, len(a.targets))
	for i, t := range a.targets {
		hs[i] = t.h
	}
	if ordered(hs) {
		return a.healOrdered(ctx, hs)
	}
	errs := make([]error, len(a.targets))
	var wg sync.WaitGroup
	for i, t := range a.targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startWait+killWait)
			defer cancel()
			cur, err := restartSUT(tctx, a.x, t.h, t.old)
			if err != nil {
				errs[i] = fmt.Errorf("%s heal: %w", a.id, err)
				return
			}
			t.now = cur
			if t.armed {
				errs[i] = runUndo(tctx, a.x, t.h, a.epoch, restartUndoKind)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// healOrdered is Heal for a SUT that starts in order: the targets that
// run none are restarted together by the bootstrap rule (after a kill of
// every member, the highest ranked bootstraps and the others join once it
// is healthy), then each must show a new pid; the undo scripts are
// removed, not run (they only mark the member for HealAll).
func (a *killActive) healOrdered(ctx context.Context, hs []Host) error {
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), orderedBound(hs)+startWait)
	defer cancel()
	if _, err := orderedRestart(tctx, a.x, hs); err != nil {
		return fmt.Errorf("%s heal: %w", a.id, err)
	}
	var errs []error
	for _, t := range a.targets {
		cur, err := waitNewPID(tctx, a.x, t.h, t.old)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s heal: %w", a.id, err))
			continue
		}
		t.now = cur
		if t.armed {
			if err := Unguard(tctx, a.x, t.h, a.epoch, orderedUndoKind); err != nil {
				errs = append(errs, fmt.Errorf("%s heal: %w", a.id, err))
			}
		}
	}
	return errors.Join(errs...)
}

// restartNemesis stops the SUT with kill-term semantics, then starts it.
type restartNemesis struct{}

func (restartNemesis) Info() Info {
	return Info{
		ID: "restart", Group: "process", BuiltIn: true,
		Summary:  fmt.Sprintf("SIGTERM (waited for up to %s), then the SUT's own start (job or unit) and a wait for its new pid", killWait),
		Needs:    []string{"kill"},
		Injector: "pid (old pid gone, a new pid running)",
		Victim:   "log marker of the restart; leader change",
	}
}

func (restartNemesis) Inject(ctx context.Context, x Exec, f Fault) (Active, error) {
	ts, err := resolveProcs(ctx, x, f, "restart")
	if err != nil {
		return nil, err
	}
	// Refuse before stopping anything that could not be started again.
	for _, t := range ts {
		if t.h.SUT.StartScript == "" {
			return nil, fmt.Errorf("restart on %s: cannot restart: the SUT has no start command dstgen can run (deploy it through dstgen, as a job or a unit)", t.h.Name)
		}
	}
	a := &killActive{x: x, id: "restart", epoch: f.tag(), targets: ts}
	for _, t := range ts {
		if t.exited, err = signalAndWait(ctx, x, t.h, t.old, "TERM", killWait); err != nil {
			return a, fmt.Errorf("restart: %w", err)
		}
		if !t.exited {
			return a, fmt.Errorf("restart on %s: pid %d still running %s after SIGTERM", t.h.Name, t.old.PID, killWait)
		}
		if ordered([]Host{t.h}) {
			// Joins the members that run; the last member of a cluster
			// restarted alone bootstraps again (its rank is read first).
			tctx, cancel := context.WithTimeout(ctx, orderedBound([]Host{t.h}))
			_, err = orderedRestart(tctx, x, []Host{t.h})
			if err == nil {
				t.now, err = waitNewPID(tctx, x, t.h, t.old)
			}
			cancel()
			if err != nil {
				return a, fmt.Errorf("restart: %w", err)
			}
			continue
		}
		if t.now, err = restartSUT(ctx, x, t.h, t.old); err != nil {
			return a, fmt.Errorf("restart: %w", err)
		}
	}
	return a, nil
}

// paused is one target of a pause.
type paused struct {
	h      Host
	p      *proc
	before string // the state before SIGSTOP
}

// pauseNemesis freezes the SUT with SIGSTOP; heal (or HealAll, from the
// undo script armed first) sends SIGCONT.
type pauseNemesis struct{}

func (pauseNemesis) Info() Info {
	return Info{
		ID: "pause", Group: "process", BuiltIn: true,
		Summary:  "SIGSTOP of the SUT process (a GC pause or freeze); heal sends SIGCONT, and so does `dstgen heal` from the undo script armed before the stop",
		Needs:    []string{"kill"},
		Injector: "proc_state (/proc/<pid>/stat state T while paused)",
		Victim:   "gap in the heartbeat log or metric; leader change",
	}
}

// pauseUndoKind names pause's undo scripts.
const pauseUndoKind = "pause"

func (pauseNemesis) Inject(ctx context.Context, x Exec, f Fault) (Active, error) {
	ts, err := resolveProcs(ctx, x, f, "pause")
	if err != nil {
		return nil, err
	}
	a := &pauseActive{x: x, epoch: f.tag()}
	for _, t := range ts {
		pt := &paused{h: t.h, p: t.old, before: t.old.State}
		// CONT of a pid that is gone or reused is harmless, so the undo
		// may run at any time, any number of times.
		undo := fmt.Sprintf("kill -CONT %d 2>/dev/null; for q in %s; do kill -CONT $q 2>/dev/null; done; exit 0", t.old.PID, shell.Quote(t.tree))
		if err := armUndo(ctx, x, t.h, f.tag(), pauseUndoKind, undo); err != nil {
			return a, fmt.Errorf("pause: %w", err)
		}
		a.targets = append(a.targets, pt)
		st, err := signalState(ctx, x, t.h, t.old, "STOP", true)
		if err != nil {
			return a, fmt.Errorf("pause: %w", err)
		}
		if st != "T" {
			return a, fmt.Errorf("pause on %s: pid %d reads state %q, not T, %s after SIGSTOP", t.h.Name, t.old.PID, st, pauseWait)
		}
	}
	return a, nil
}

// signalState sends sig (none when "") to p and waits on the host up to
// pauseWait for its state to become stopped (T or t) when stopped is
// true, or to leave it otherwise; it returns the last state read, "gone"
// when the process exited.
func signalState(ctx context.Context, x Exec, h Host, p *proc, sig string, stopped bool) (string, error) {
	want := `case "$st" in T|t) true;; *) false;; esac`
	if !stopped {
		want = `case "$st" in T|t) false;; *) true;; esac`
	}
	var b strings.Builder
	b.WriteString(pstatFn)
	if sig != "" {
		// The tree, the pid first (treeFn).
		fmt.Fprintf(&b, "kill -%s %d || exit 1\nfor q in $(tree %d); do kill -%s $q 2>/dev/null; done\n", sig, p.PID, p.PID, sig)
	}
	fmt.Fprintf(&b, "rd() { if %s; then st=$(pstat %d); st=${st%% *}; else st=gone; fi; }\n", sameProc(p), p.PID)
	fmt.Fprintf(&b, "i=0; rd\nwhile ! { [ \"$st\" = gone ] || %s; } && [ $i -lt %d ]; do sleep 0.1; i=$((i+1)); rd; done\necho \"$st\"\n",
		want, int(pauseWait/(100*time.Millisecond)))
	out, err := x.Run(ctx, h.Host, b.String())
	if err != nil {
		return "", fmt.Errorf("%s: signal %q and read the state of pid %d: %w", h.Name, sig, p.PID, err)
	}
	st := strings.TrimSpace(out)
	if st == "t" {
		st = "T"
	}
	return st, nil
}

// pauseActive is a pause in effect.
type pauseActive struct {
	x       Exec
	epoch   string
	targets []*paused
}

func (a *pauseActive) Evidence(ctx context.Context) (session.Evidence, error) {
	evs, err := a.states(ctx)
	if err != nil {
		return session.Evidence{}, fmt.Errorf("pause evidence: %w", err)
	}
	return joinEvidence("proc_state", a.name(), evs), nil
}

// states reads each paused process's state now: changed while it is T.
func (a *pauseActive) states(ctx context.Context) ([]hostEv, error) {
	var evs []hostEv
	for _, t := range a.targets {
		out, err := a.x.Run(ctx, t.h.Host, pstatFn+"if "+sameProc(t.p)+"; then s=$(pstat "+strconv.Itoa(t.p.PID)+"); echo \"${s%% *}\"; else echo gone; fi\n")
		if err != nil {
			return nil, fmt.Errorf("%s: read the state of pid %d: %w", t.h.Name, t.p.PID, err)
		}
		st := strings.TrimSpace(out)
		if st == "t" {
			st = "T"
		}
		v := hostEv{host: t.h.Name, before: t.before, after: st, verdict: session.SignalUnchanged,
			raw: fmt.Sprintf("pid %d state %s → %s (/proc/%d/stat field 3)", t.p.PID, t.before, st, t.p.PID)}
		switch st {
		case "T":
			v.verdict = session.SignalChanged
		case "gone":
			v.verdict, v.raw = session.SignalAmbiguous, fmt.Sprintf("pid %d exited while paused", t.p.PID)
		}
		evs = append(evs, v)
	}
	return evs, nil
}

func (a *pauseActive) name() string {
	if len(a.targets) == 0 {
		return ""
	}
	return locator(a.targets[0].h.SUT)
}

// TargetCheck proves the stopped process is the SUT's: the locator still
// names the paused pid, and it reads T.
func (a *pauseActive) TargetCheck(ctx context.Context) (*session.Evidence, error) {
	evs, err := a.states(ctx)
	if err != nil {
		return nil, fmt.Errorf("pause target check: %w", err)
	}
	for i, t := range a.targets {
		cur, err := lookupSUT(ctx, a.x, t.h)
		if err != nil {
			return nil, fmt.Errorf("pause target check: %w", err)
		}
		if cur == nil || cur.PID != t.p.PID {
			evs[i].verdict = session.SignalUnchanged
			evs[i].raw += fmt.Sprintf("; %s no longer names pid %d", locator(t.h.SUT), t.p.PID)
		}
	}
	e := joinEvidence("sut_pid", a.name(), evs)
	return &e, nil
}

// Heal runs each target's undo script (SIGCONT) and checks the process
// left state T. Run again, it finds no script and a running process.
func (a *pauseActive) Heal(ctx context.Context) error {
	var errs []error
	for _, t := range a.targets {
		if err := runUndo(ctx, a.x, t.h, a.epoch, pauseUndoKind); err != nil {
			errs = append(errs, fmt.Errorf("pause heal: %w", err))
			continue
		}
		st, err := signalState(ctx, a.x, t.h, t.p, "", false)
		if err != nil {
			errs = append(errs, fmt.Errorf("pause heal: %w", err))
			continue
		}
		if st == "T" {
			errs = append(errs, fmt.Errorf("pause heal on %s: pid %d still stopped %s after SIGCONT", t.h.Name, t.p.PID, pauseWait))
		}
	}
	return errors.Join(errs...)
}
