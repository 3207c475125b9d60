package nemesis

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dstgen/dstgen/internal/bootorder"
	"github.com/dstgen/dstgen/internal/oneline"
	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/internal/wait"
)

// A SUT with sut.bootstrap cannot be restarted one host at a time from a
// script on that host: after a whole-cluster kill every member would find
// no peer and either wait forever or bootstrap a cluster of its own. So
// its members are restarted by the one process that sees all of them —
// the heal of the fault, or HealAll in `dstgen heal` — by bootorder's rule
// (orderedRestart). The undo script a kill arms for such a member is of
// kind orderedUndoKind: HealAll does not run it, it lists the member for
// the ordered restart and removes it once that succeeded.

// orderedUndoKind names the undo of a kill whose SUT starts in order.
const orderedUndoKind = "restart-ordered"

// orderedUndo is the body of that undo script. It is never what brings
// the member back (HealAll restarts it in order); run by hand it says so
// and fails, so it is kept for HealAll.
func orderedUndo(h Host) string {
	return "echo " + shell.Quote("dstgen: the SUT on "+h.Name+" starts in order (sut.bootstrap): run dstgen heal --all, which restarts it by the bootstrap rule") + " >&2\nexit 1\n"
}

// ordered reports whether every host of hs has a SUT that starts in order.
func ordered(hs []Host) bool {
	if len(hs) == 0 {
		return false
	}
	for _, h := range hs {
		if h.SUT == nil || h.SUT.Bootstrap == nil || len(h.SUT.Bootstrap.Cluster) == 0 {
			return false
		}
	}
	return true
}

// orderedBound is how long an ordered restart may take: the bootstrap
// member's health wait, and the others' starts after it.
func orderedBound(hs []Host) time.Duration {
	ready := 60 * time.Second
	if len(hs) > 0 && hs[0].SUT.Bootstrap.Ready > 0 {
		ready = hs[0].SUT.Bootstrap.Ready
	}
	return ready + startWait + killWait
}

// orderedRestart starts the SUT on the hosts of down that run none, by
// bootorder's rule over their cluster (SUT.Bootstrap.Cluster): join while
// a member runs, bootstrap from the highest rank when none does. It
// returns a one-line account of what it did.
func orderedRestart(ctx context.Context, x Exec, down []Host) (string, error) {
	cluster := down[0].SUT.Bootstrap.Cluster
	ms := make([]bootorder.Member, len(cluster))
	for i, h := range cluster {
		ms[i] = bootorder.Member{Name: h.Name, Want: slices.ContainsFunc(down, func(d Host) bool { return d.Name == h.Name })}
	}
	healthOnce := func(ctx context.Context, h Host, first bool) (bool, string) {
		cmds := h.SUT.Bootstrap.Health
		if first && h.SUT.Bootstrap.First != "" {
			cmds = []string{h.SUT.Bootstrap.First}
		}
		for _, c := range cmds {
			out, err := x.Run(ctx, h.Host, "sh -c "+shell.Quote(c)+" 2>&1")
			if err != nil {
				o := oneline.Fold(oneline.First(out))
				if o == "" {
					o = oneline.Fold(err.Error())
				}
				return false, o
			}
		}
		return true, ""
	}
	res, err := bootorder.Start(ctx, ms, "", bootorder.Ops{
		Running: func(ctx context.Context, i int) (bool, error) {
			p, err := lookupSUT(ctx, x, cluster[i])
			return p != nil, err
		},
		Healthy: func(ctx context.Context, i int) bool {
			ok, _ := healthOnce(ctx, cluster[i], false)
			return ok
		},
		Rank: func(ctx context.Context, i int) bootorder.Rank {
			out, err := x.Run(ctx, cluster[i].Host, bootorder.RankScript(cluster[i].SUT.Bootstrap.Rank))
			return bootorder.ParseScript(cluster[i].Name, out, err)
		},
		Start: func(ctx context.Context, i int, bootstrap bool) error {
			s := cluster[i].SUT
			script := s.StartScript
			if bootstrap {
				script = s.Bootstrap.StartScript
			}
			if script == "" {
				return fmt.Errorf("cannot restart: the SUT has no start command dstgen can run (deploy it through dstgen, as a job or a unit)")
			}
			_, err := x.Run(ctx, cluster[i].Host, script)
			return err
		},
		WaitHealthy: func(ctx context.Context, i int) error {
			h := cluster[i]
			limit := h.SUT.Bootstrap.Ready
			if limit <= 0 {
				limit = 60 * time.Second
			}
			deadline := time.Now().Add(limit)
			for {
				ok, last := healthOnce(ctx, h, true)
				if ok {
					return nil
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("not healthy after %s: its health command printed last: %s", limit, shell.Quote(last))
				}
				if err := wait.Sleep(ctx, time.Second); err != nil {
					return fmt.Errorf("wait for health: %w (its health command printed last: %s)", err, shell.Quote(last))
				}
			}
		},
	})
	var ranks []string
	for _, r := range res.Ranks {
		ranks = append(ranks, r.Host+"="+r.String())
	}
	what := res.Why
	if len(ranks) > 0 {
		what += " (ranks " + strings.Join(ranks, ", ") + ")"
	}
	if err != nil {
		if what != "" {
			return what, fmt.Errorf("ordered restart: %w; %s", err, what)
		}
		return what, fmt.Errorf("ordered restart: %w", err)
	}
	return what, nil
}

// waitNewPID waits, bounded by startWait, until h's SUT runs as another
// process than old (nil: any process).
func waitNewPID(ctx context.Context, x Exec, h Host, old *proc) (*proc, error) {
	ctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	t := time.NewTicker(startPoll)
	defer t.Stop()
	for {
		cur, err := lookupSUT(ctx, x, h)
		if err == nil && cur != nil && (old == nil || cur.PID != old.PID || cur.Start != old.Start) {
			return cur, nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return nil, fmt.Errorf("%s: wait for the restarted SUT: %w", h.Name, err)
			}
			return nil, fmt.Errorf("%s: restarted the SUT but %s shows no new process within %s", h.Name, locator(h.SUT), startWait)
		case <-t.C:
		}
	}
}
