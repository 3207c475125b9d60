package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
)

// customUndoKind names the undo scripts holding a custom heal command.
const customUndoKind = "custom"

func customNemeses() []Nemesis { return []Nemesis{customNemesis{id: "custom"}} }

// customNemesis runs Fault.Custom's commands on every target, under the id
// of the catalog row it stands for (rolling-upgrade, compaction, …).
type customNemesis struct{ id string }

func (c customNemesis) Info() Info {
	group, summary := "cluster", "inject / heal / evidence commands written in scenarios.yml"
	for _, r := range rows {
		if r.ID == c.id && c.id != "custom" {
			group, summary = r.Group, r.Summary+", through the inject / heal / evidence commands written in scenarios.yml"
		}
	}
	return Info{
		ID: c.id, Group: group, BuiltIn: true,
		Summary: summary + " (faults[].custom: inject required, heal, evidence printing one number)" + "; run on every target as given, with DSTGEN_FAULT_EPOCH, DSTGEN_HOST, DSTGEN_HOST_ADDR and DSTGEN_WORKDIR set; " +
			"heal is armed as the undo script first, so `dstgen heal` runs it after a crash",
		Injector: "custom (the evidence command's number before and now; absent without an evidence command)",
		Victim:   "the fault's landing signal from scenarios.yml (log marker, metric delta, history error rate)",
	}
}

// customEnv is the prologue dstgen puts before a user's command: the
// values dstgen interpolates, quoted, so the command can use them.
func customEnv(h Host, epoch string) string {
	return fmt.Sprintf("DSTGEN_FAULT_EPOCH=%s DSTGEN_HOST=%s DSTGEN_HOST_ADDR=%s DSTGEN_WORKDIR=%s\nexport DSTGEN_FAULT_EPOCH DSTGEN_HOST DSTGEN_HOST_ADDR DSTGEN_WORKDIR\n",
		shell.Quote(epoch), shell.Quote(h.Name), shell.Quote(h.Address), shell.Quote(h.Workdir))
}

// customTarget is one target of a custom fault.
type customTarget struct {
	h      Host
	before *float64 // the evidence number before inject; nil when unreadable
	raw    string   // the evidence command's output then
}

func (c customNemesis) Inject(ctx context.Context, x Exec, f Fault) (Active, error) {
	if f.Custom == nil || strings.TrimSpace(f.Custom.Inject) == "" {
		return nil, fmt.Errorf("%s: no inject command (scenarios.yml faults[].custom.inject)", c.id)
	}
	if len(f.Targets) == 0 {
		return nil, fmt.Errorf("%s: no target hosts", c.id)
	}
	if err := f.checkTag(); err != nil {
		return nil, fmt.Errorf("%s: %w", c.id, err)
	}
	cu := *f.Custom
	a := &customActive{x: x, id: c.id, epoch: f.Epoch, tag: f.tag(), cmd: cu}
	for _, h := range f.Targets {
		t := &customTarget{h: h}
		if cu.Evidence != "" {
			t.before, t.raw = a.read(ctx, h)
		}
		if cu.Heal != "" {
			if err := armUndo(ctx, x, h, f.tag(), customUndoKind, customEnv(h, f.Epoch)+cu.Heal); err != nil {
				return a, fmt.Errorf("%s: %w", c.id, err)
			}
		}
		a.targets = append(a.targets, t)
		if _, err := x.Run(ctx, h.Host, customEnv(h, f.Epoch)+cu.Inject); err != nil {
			return a, fmt.Errorf("%s on %s: inject command: %w", c.id, h.Name, err)
		}
	}
	return a, nil
}

// customActive is a custom fault in effect.
type customActive struct {
	x       Exec
	id      string
	epoch   string
	tag     string // what its undo script carries: <session>.<epoch>
	cmd     scenarios.Custom
	targets []*customTarget
}

// read runs the evidence command: its number, or nil and why not.
func (a *customActive) read(ctx context.Context, h Host) (*float64, string) {
	out, err := a.x.Run(ctx, h.Host, customEnv(h, a.epoch)+a.cmd.Evidence)
	if err != nil {
		return nil, fmt.Sprintf("evidence command failed: %v", err)
	}
	s := strings.TrimSpace(out)
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Sprintf("evidence command printed %q, not one number", s)
	}
	return &n, s
}

// Evidence reads the evidence command again: changed when its number
// differs from before inject, ambiguous when either reading is no number,
// absent when scenarios.yml gives no evidence command (never pretended).
func (a *customActive) Evidence(ctx context.Context) (session.Evidence, error) {
	if a.cmd.Evidence == "" {
		return session.Evidence{Kind: "custom", Verdict: session.SignalAbsent, Raw: "no evidence command in scenarios.yml (faults[].custom.evidence)"}, nil
	}
	var evs []hostEv
	for _, t := range a.targets {
		now, raw := a.read(ctx, t.h)
		v := hostEv{host: t.h.Name, raw: fmt.Sprintf("before %s, now %s", t.raw, raw)}
		if t.before != nil {
			v.before = *t.before
		}
		if now != nil {
			v.after = *now
		}
		switch {
		case t.before == nil || now == nil:
			v.verdict = session.SignalAmbiguous
		case *now != *t.before:
			d := *now - *t.before
			v.delta, v.verdict = &d, session.SignalChanged
		default:
			d := 0.0
			v.delta, v.verdict = &d, session.SignalUnchanged
		}
		evs = append(evs, v)
	}
	return joinEvidence("custom", a.cmd.Evidence, evs), nil
}

// TargetCheck is not applicable: dstgen cannot tell what a user's command
// aims at.
func (a *customActive) TargetCheck(context.Context) (*session.Evidence, error) { return nil, nil }

// Heal runs the heal command on every target through its undo script,
// which is removed once it succeeded: a second Heal finds nothing to do.
// Without a heal command there is nothing dstgen can undo.
func (a *customActive) Heal(ctx context.Context) error {
	if a.cmd.Heal == "" {
		return nil
	}
	var errs []error
	for _, t := range a.targets {
		if err := runUndo(ctx, a.x, t.h, a.tag, customUndoKind); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", a.id, err))
		}
	}
	return errors.Join(errs...)
}
