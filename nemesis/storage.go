package nemesis

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"

	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/session"
)

// The storage row of docs/nemesis.md §3 that needs no SUT-specific
// machinery: disk-full, a tagged fill file in the SUT's data dir.

const (
	// defaultFillMax is the largest free space disk-full agrees to fill:
	// dstgen never fills a real big disk by accident (the testbed mounts a
	// small tmpfs on each data dir).
	defaultFillMax = "1GiB"
	// fullMargin is how much free space still counts as full: file system
	// metadata can leave a few blocks no file gets.
	fullMargin = 1 << 20
	// diskUndoKind names disk-full's undo scripts.
	diskUndoKind = "disk-full"
)

func storageNemeses() []Nemesis { return []Nemesis{diskFullNemesis{}} }

// diskFullNemesis fills the file system of each target's SUT data dir.
type diskFullNemesis struct{}

func (diskFullNemesis) Info() Info {
	return Info{
		ID: "disk-full", Group: "storage", BuiltIn: true,
		Summary: "fills the file system of the SUT's data dir with the tagged file <data dir>/.dstgen-fill-<epoch> (fallocate, else dd until ENOSPC); " +
			"refused when that file system has more free space than max; heal removes the file",
		Params:   []string{"max=" + defaultFillMax + ": refuse (nothing written) when the data dir's file system has more free space than this"},
		Injector: "free_bytes (df free space of the data dir: before, after ≈ 0; raw has the df line and a write probe's ENOSPC)",
		Victim:   "write errors (ENOSPC) in the SUT's log; the history's error rate",
	}
}

// fillPath is the fill file of one fault: the name HealAll's sweep knows.
func fillPath(dataDir, epoch string) string {
	return path.Join(dataDir, "."+Tag+"-fill-"+epoch)
}

// filled is one target of a disk-full.
type filled struct {
	h      Host
	file   string
	before int64 // free bytes before the fill
	enospc bool  // a write probe after the fill failed
}

func (diskFullNemesis) Inject(ctx context.Context, x Exec, f Fault) (Active, error) {
	if len(f.Targets) == 0 {
		return nil, errors.New("disk-full: no target hosts")
	}
	if err := f.checkTag(); err != nil {
		return nil, fmt.Errorf("disk-full: %w", err)
	}
	maxS := defaultFillMax
	if v, ok := f.Params["max"]; ok {
		maxS = v
	}
	limit, err := humanize.ParseBytes(maxS)
	if err != nil {
		return nil, fmt.Errorf("disk-full: params max %q: want a size such as 64MiB or 1GiB", maxS)
	}
	// Every target is measured and checked before anything is written, so
	// a refusal leaves no host half filled.
	var ts []*filled
	for _, h := range f.Targets {
		if h.SUT == nil || h.SUT.DataDir == "" {
			return nil, fmt.Errorf("disk-full on %s: the host's SUT has no data dir (env.yml sut data_dir)", h.Name)
		}
		free, _, err := freeBytes(ctx, x, h, h.SUT.DataDir)
		if err != nil {
			return nil, fmt.Errorf("disk-full: %w", err)
		}
		if uint64(free) > limit {
			return nil, fmt.Errorf("disk-full on %s: %s has %s free, more than max %s; refusing to fill a real disk (mount a small file system there, or raise params max)",
				h.Name, h.SUT.DataDir, humanize.IBytes(uint64(free)), maxS)
		}
		ts = append(ts, &filled{h: h, file: fillPath(h.SUT.DataDir, f.tag()), before: free})
	}
	a := &diskFullActive{x: x, epoch: f.tag()}
	for _, t := range ts {
		if err := armUndo(ctx, x, t.h, f.tag(), diskUndoKind, "rm -f "+shell.Quote(t.file)+" "+shell.Quote(t.file+".probe")); err != nil {
			return a, fmt.Errorf("disk-full: %w", err)
		}
		a.targets = append(a.targets, t)
		out, err := x.Run(ctx, t.h.Host, fillScript(t.file, t.before))
		if err != nil {
			return a, fmt.Errorf("disk-full on %s: fill %s: %w", t.h.Name, t.file, err)
		}
		t.enospc = strings.Contains(out, "enospc=yes")
	}
	return a, nil
}

// fillScript fills the file system holding file: fallocate of the free
// space at once where the file system has it, then dd appending until
// ENOSPC for what is left (reserved blocks root may still use, or a file
// system without fallocate). A one-block write probe then says whether a
// new write really fails.
func fillScript(file string, free int64) string {
	f := shell.Quote(file)
	p := shell.Quote(file + ".probe")
	return fmt.Sprintf(`f=%s
fallocate -l %d "$f" 2>/dev/null || :
dd if=/dev/zero of="$f" bs=1M oflag=append conv=notrunc 2>/dev/null || :
dd if=/dev/zero of="$f" bs=4k oflag=append conv=notrunc 2>/dev/null || :
[ -e "$f" ] || { echo "no fill file written" >&2; exit 1; }
if dd if=/dev/zero of=%s bs=4k count=1 2>/dev/null; then echo enospc=no; else echo enospc=yes; fi
rm -f %s
`, f, max(free, 1), p, p)
}

// freeBytes is df's free space of the file system holding dir, and df's
// line for the record.
func freeBytes(ctx context.Context, x Exec, h Host, dir string) (int64, string, error) {
	out, err := x.Run(ctx, h.Host, "df -Pk "+shell.Quote(dir)+" | tail -n 1")
	if err != nil {
		return 0, "", fmt.Errorf("%s: df %s: %w", h.Name, dir, err)
	}
	line := strings.TrimSpace(out)
	fs := strings.Fields(line)
	if len(fs) < 6 {
		return 0, line, fmt.Errorf("%s: df %s: unreadable line %q", h.Name, dir, line)
	}
	kb, err := strconv.ParseInt(fs[3], 10, 64)
	if err != nil {
		return 0, line, fmt.Errorf("%s: df %s: unreadable free space %q", h.Name, dir, fs[3])
	}
	return kb * 1024, line, nil
}

// diskFullActive is a disk-full in effect.
type diskFullActive struct {
	x       Exec
	epoch   string
	targets []*filled
}

// Evidence is the free space now against before: changed when it fell to
// at most fullMargin.
func (a *diskFullActive) Evidence(ctx context.Context) (session.Evidence, error) {
	var evs []hostEv
	for _, t := range a.targets {
		free, line, err := freeBytes(ctx, a.x, t.h, t.h.SUT.DataDir)
		if err != nil {
			return session.Evidence{}, fmt.Errorf("disk-full evidence: %w", err)
		}
		d := float64(free - t.before)
		v := hostEv{host: t.h.Name, before: t.before, after: free, delta: &d, verdict: session.SignalUnchanged,
			raw: fmt.Sprintf("df: %s; write probe after the fill: %s", line, map[bool]string{true: "ENOSPC", false: "succeeded"}[t.enospc])}
		if free < t.before && free <= fullMargin {
			v.verdict = session.SignalChanged
		}
		evs = append(evs, v)
	}
	name := ""
	if len(a.targets) > 0 {
		name = a.targets[0].h.SUT.DataDir
	}
	return joinEvidence("free_bytes", name, evs), nil
}

// TargetCheck proves the fill file sits in the SUT's data dir and holds
// the space: its size there, changed when it is not empty.
func (a *diskFullActive) TargetCheck(ctx context.Context) (*session.Evidence, error) {
	var evs []hostEv
	for _, t := range a.targets {
		out, err := a.x.Run(ctx, t.h.Host, "stat -c %s "+shell.Quote(t.file)+" 2>/dev/null || echo 0")
		if err != nil {
			return nil, fmt.Errorf("disk-full target check on %s: %w", t.h.Name, err)
		}
		size, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("disk-full target check on %s: unreadable size %q of %s", t.h.Name, strings.TrimSpace(out), t.file)
		}
		v := hostEv{host: t.h.Name, before: 0, after: size, verdict: session.SignalUnchanged, raw: fmt.Sprintf("%s holds %d bytes", t.file, size)}
		if size > 0 {
			v.verdict = session.SignalChanged
		}
		evs = append(evs, v)
	}
	e := joinEvidence("fill_file", "."+Tag+"-fill-"+a.epoch, evs)
	return &e, nil
}

// Heal removes each fill file (the undo script) and checks the free space
// came back.
func (a *diskFullActive) Heal(ctx context.Context) error {
	var errs []error
	for _, t := range a.targets {
		if err := runUndo(ctx, a.x, t.h, a.epoch, diskUndoKind); err != nil {
			errs = append(errs, fmt.Errorf("disk-full heal: %w", err))
			continue
		}
		free, line, err := freeBytes(ctx, a.x, t.h, t.h.SUT.DataDir)
		if err != nil {
			errs = append(errs, fmt.Errorf("disk-full heal: %w", err))
			continue
		}
		if free <= fullMargin && t.before > fullMargin {
			errs = append(errs, fmt.Errorf("disk-full heal on %s: %s removed but the file system is still full (%s)", t.h.Name, t.file, line))
		}
	}
	return errors.Join(errs...)
}
