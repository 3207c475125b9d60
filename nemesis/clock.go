package nemesis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/session"
)

// The time row of docs/nemesis.md §4 dstgen can inject itself: clock-skew,
// by `date -s` on the target. libfaketime is not used: Go binaries read
// the clock through the vDSO without libc, so it would skew nothing in a
// Go SUT while saying it did.

const (
	clockUndoKind = "clock-skew"
	// clockSamples is how many `date +%s%N` round trips a measurement takes;
	// the fastest one is kept (NTP-style).
	clockSamples = 5
	// clockSlack is added to the measurement's uncertainty when judging a
	// skew: a skew is set through a shell that reads and writes the clock
	// in two steps.
	clockSlack = 500 * time.Millisecond
)

func clockNemeses() []Nemesis { return []Nemesis{clockSkewNemesis{}} }

// clockSkewNemesis sets the targets' clock off by params offset. Its
// fields are for tests; zero values read this machine.
type clockSkewNemesis struct {
	// localBootID is the control node's kernel boot id.
	localBootID func() (string, error)
}

func (clockSkewNemesis) Info() Info {
	return Info{
		ID: "clock-skew", Group: "time", BuiltIn: true,
		Summary: "sets the targets' real clock off by params offset with `date -s` (opt-in: allow=true); refused on a host sharing the control node's kernel " +
			"(network namespaces, containers), whose clock is this machine's; libfaketime is not used: Go binaries read the clock without libc, so it does not reach them",
		Needs: []string{"root", "clock"},
		Params: []string{
			"offset=: required, the skew as a Go duration (30s, -2m, 1.5s); the host's clock becomes its own time plus offset",
			"allow=false: must be true: the fault changes a real clock",
		},
		Injector: "clock_offset (host − control node offset, measured NTP-style before and during; delta in ns)",
		Victim:   "timestamp drift in the SUT's logs; lease or TTL errors in the history",
	}
}

// bootID reads the control node's kernel boot id ("" where there is none:
// no remote host can then match it).
func (c clockSkewNemesis) bootID() (string, error) {
	if c.localBootID != nil {
		return c.localBootID()
	}
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the control node's boot_id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// skewOffset reads and checks clock-skew's params.
func skewOffset(p map[string]string) (time.Duration, error) {
	if p["allow"] != "true" {
		return 0, errors.New("clock-skew is opt-in: it sets the real clock of the target hosts, and everything on them sees it; set params allow=true to use it")
	}
	s, ok := p["offset"]
	if !ok || s == "" {
		return 0, errors.New("clock-skew: params offset is required (a Go duration such as 30s or -2m)")
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("clock-skew: params offset %q: want a Go duration such as 30s or -2m", s)
	}
	if d == 0 {
		return 0, errors.New("clock-skew: params offset is 0: nothing to skew")
	}
	return d, nil
}

// clockSetScript sets the host's clock to its own time plus offset, to the
// nanosecond where date has %N (GNU date's `-s @<sec>.<frac>`). Read and
// write are two steps of one shell, a few ms apart.
func clockSetScript(offset time.Duration) string {
	return fmt.Sprintf(`ns=$(date +%%s%%N); case "$ns" in *[!0-9]*) ns=$(( $(date +%%s) * 1000000000 ));; esac
t=$(( ns + (%d) ))
date -s "@$(( t / 1000000000 )).$(printf %%09d $(( t %% 1000000000 )))" >/dev/null
`, int64(offset))
}

// skewMarker says the skew of one fault was applied, so that its undo
// moves the clock back only then: HealAll may run the undo of a fault
// whose apply never ran.
func skewMarker(workdir, epoch string) string {
	return path.Join(undoDir(workdir), epoch+"."+clockUndoKind+".applied")
}

// clockRef is the shell text that prints the host's reference for an
// undo: its wall clock (ns), its uptime (centiseconds: a clock that
// settimeofday and NTP never move) and its boot id.
const clockRef = `ns=$(date +%s%N); case "$ns" in *[!0-9]*) ns=$(( $(date +%s) * 1000000000 ));; esac
up=$(cut -d' ' -f1 /proc/uptime 2>/dev/null | tr -d .); boot=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)
`

// clockUndoScript puts the clock back once, if it was moved: to the wall
// time the apply recorded plus the uptime since — what the clock would
// read had it never been skewed, whatever NTP did meanwhile — never "now −
// offset", which after NTP's correction would skew it the other way. It
// then checks the clock reads that reference (within 1 s) and fails
// otherwise. After a reboot the skew is gone with the boot: nothing to do.
// A marker without a reference (an older dstgen's) is undone relatively.
func clockUndoScript(workdir, epoch string, offset time.Duration) string {
	m := shell.Quote(skewMarker(workdir, epoch))
	return fmt.Sprintf(`[ -f %[1]s ] || exit 0
read w0 u0 b0 < %[1]s || true
%[2]sif [ -n "$w0" ] && [ -n "$u0" ] && [ -n "$up" ]; then
	if [ "$boot" != "$b0" ] || [ "$up" -lt "$u0" ]; then rm -f %[1]s; exit 0; fi
	t=$(( w0 + (up - u0) * 10000000 ))
	date -s "@$(( t / 1000000000 )).$(printf %%09d $(( t %% 1000000000 )))" >/dev/null || exit 1
	now=$(date +%%s%%N); d=$(( now - t )); [ "${d#-}" -lt 1000000000 ] || { echo "clock-skew undo: the clock reads $d ns off its reference after the set" >&2; exit 1; }
else
%[3]sfi
rm -f %[1]s
`, m, clockRef, clockSetScript(-offset))
}

// clockApplyScript records the reference (clockRef) in the marker, then
// applies the skew; a failed set takes the marker back.
func clockApplyScript(workdir, epoch string, offset time.Duration) string {
	m := shell.Quote(skewMarker(workdir, epoch))
	return fmt.Sprintf("%sprintf '%%s %%s %%s\\n' \"$ns\" \"$up\" \"$boot\" > %s || exit 1\nif ! { %s}; then rm -f %s; exit 1; fi\n",
		clockRef, m, strings.ReplaceAll(clockSetScript(offset), "\n", "\n  "), m)
}

// offsetSample is a host's clock against this one.
type offsetSample struct {
	offset, uncertainty time.Duration
}

// measureOffset is host − control node, from the fastest of clockSamples
// `date +%s%N` round trips, at its midpoint, ± half its round trip.
func measureOffset(ctx context.Context, x Exec, h Host) (offsetSample, error) {
	best := offsetSample{uncertainty: -1}
	var lastErr error
	for range clockSamples {
		t0 := time.Now()
		out, err := x.Run(ctx, h.Host, "date +%s%N")
		t1 := time.Now()
		if err != nil {
			lastErr = err
			continue
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		if err != nil {
			lastErr = fmt.Errorf("date +%%s%%N printed %q (no nanoseconds on this host)", strings.TrimSpace(out))
			continue
		}
		rtt := t1.Sub(t0)
		mid := t0.Add(rtt / 2)
		if best.uncertainty < 0 || rtt/2 < best.uncertainty {
			best = offsetSample{offset: time.Unix(0, ns).Sub(mid), uncertainty: rtt / 2}
		}
	}
	if best.uncertainty < 0 {
		return best, fmt.Errorf("%s: measure the clock offset: %w", h.Name, lastErr)
	}
	return best, nil
}

// skewed is one target of a clock-skew.
type skewed struct {
	h      Host
	before offsetSample
}

func (c clockSkewNemesis) Inject(ctx context.Context, x Exec, f Fault) (Active, error) {
	offset, err := skewOffset(f.Params)
	if err != nil {
		return nil, err
	}
	if len(f.Targets) == 0 {
		return nil, errors.New("clock-skew: no target hosts")
	}
	if err := f.checkTag(); err != nil {
		return nil, fmt.Errorf("clock-skew: %w", err)
	}
	local, err := c.bootID()
	if err != nil {
		return nil, fmt.Errorf("clock-skew: %w", err)
	}
	// Every target is checked before any clock moves.
	var ts []*skewed
	for _, h := range f.Targets {
		out, err := x.Run(ctx, h.Host, "cat /proc/sys/kernel/random/boot_id")
		if err != nil {
			return nil, fmt.Errorf("clock-skew on %s: read its boot_id (to tell whether it shares this machine's kernel): %w", h.Name, err)
		}
		remote := strings.TrimSpace(out)
		if remote == "" {
			return nil, fmt.Errorf("clock-skew on %s: empty boot_id; cannot tell whether it shares this machine's kernel", h.Name)
		}
		if remote == local {
			return nil, fmt.Errorf("clock-skew on %s: the host shares the control node's kernel (boot_id %s, a network namespace or container): setting its clock would set this machine's too", h.Name, remote)
		}
		before, err := measureOffset(ctx, x, h)
		if err != nil {
			return nil, fmt.Errorf("clock-skew: %w", err)
		}
		ts = append(ts, &skewed{h: h, before: before})
	}
	a := &clockActive{x: x, epoch: f.Epoch, tag: f.tag(), offset: offset}
	for _, t := range ts {
		if err := armUndo(ctx, x, t.h, f.tag(), clockUndoKind, clockUndoScript(t.h.Workdir, f.tag(), offset)); err != nil {
			return a, fmt.Errorf("clock-skew: %w", err)
		}
		a.targets = append(a.targets, t)
		if _, err := x.Run(ctx, t.h.Host, clockApplyScript(t.h.Workdir, f.tag(), offset)); err != nil {
			return a, fmt.Errorf("clock-skew on %s: date -s: %w", t.h.Name, err)
		}
	}
	return a, nil
}

// clockActive is a clock-skew in effect.
type clockActive struct {
	x       Exec
	epoch   string
	tag     string // what its undo script carries: <session>.<epoch>
	offset  time.Duration
	targets []*skewed
}

// Evidence is the offset measured now against before: changed when it
// moved by the skew, within the measurements' uncertainty.
func (a *clockActive) Evidence(ctx context.Context) (session.Evidence, error) {
	var evs []hostEv
	for _, t := range a.targets {
		now, err := measureOffset(ctx, a.x, t.h)
		if err != nil {
			return session.Evidence{}, fmt.Errorf("clock-skew evidence: %w", err)
		}
		evs = append(evs, judgeSkew(t.h.Name, t.before, now, a.offset))
	}
	return joinEvidence("clock_offset", "offset "+a.offset.String(), evs), nil
}

// judgeSkew compares two offset measurements with the skew wanted.
func judgeSkew(host string, before, now offsetSample, want time.Duration) hostEv {
	moved := now.offset - before.offset
	tol := before.uncertainty + now.uncertainty + clockSlack
	d := float64(moved)
	v := hostEv{host: host, before: int64(before.offset), after: int64(now.offset), delta: &d,
		raw: fmt.Sprintf("offset %s ± %s → %s ± %s (moved %s, skew %s)", before.offset, before.uncertainty, now.offset, now.uncertainty, moved, want)}
	switch {
	case (moved - want).Abs() <= tol:
		v.verdict = session.SignalChanged
	case moved.Abs() <= tol:
		v.verdict = session.SignalUnchanged
	default:
		v.verdict = session.SignalAmbiguous
	}
	return v
}

// TargetCheck is not applicable: the clock set is the host's only one.
func (a *clockActive) TargetCheck(context.Context) (*session.Evidence, error) { return nil, nil }

// Heal moves each target's clock back (its undo script, which does so only
// once) and checks the offset is what it was.
func (a *clockActive) Heal(ctx context.Context) error {
	var errs []error
	for _, t := range a.targets {
		if err := runUndo(ctx, a.x, t.h, a.tag, clockUndoKind); err != nil {
			errs = append(errs, fmt.Errorf("clock-skew heal: %w", err))
			continue
		}
		now, err := measureOffset(ctx, a.x, t.h)
		if err != nil {
			errs = append(errs, fmt.Errorf("clock-skew heal: %w", err))
			continue
		}
		if v := judgeSkew(t.h.Name, t.before, now, 0); v.verdict != session.SignalChanged {
			errs = append(errs, fmt.Errorf("clock-skew heal on %s: the clock is not back: %s", t.h.Name, v.raw))
		}
	}
	return errors.Join(errs...)
}
