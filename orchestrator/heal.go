package orchestrator

import (
	"context"
	"time"

	"github.com/dstgen/dstgen/nemesis"
	"github.com/dstgen/dstgen/session"
)

// healer heals every host of a unit: after the schedule, and again —
// deferred, on a context of its own — on every way out, so an error,
// SIGINT/SIGTERM, a timeout or a panic never leaves a fault behind. errs
// collects every heal failure of the unit, a window's included.
type healer struct {
	r        *unitRun
	hosts    []nemesis.Host
	errs     []string
	unhealed bool // the last HealAll did not succeed on every host
}

// now runs HealAll on every host, recording in run.json what it removed.
func (h *healer) now(ctx context.Context) {
	r := h.r
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.o.b.heal)
	defer cancel()
	// The run's own workload keeps running through the heal and the
	// quiesce; its stop (stopWorkload) removes the guard.
	var keep []string
	if p := r.progress.place.Load(); p != nil {
		keep = append(keep, r.workloadTag(*p))
	}
	removed, err := nemesis.HealAll(hctx, r.o.hosts, h.hosts, keep...)
	run := r.rec.run
	if run.Heal == nil {
		run.Heal = &session.HealRecord{}
	}
	run.Heal.At = time.Now().UTC()
	for _, rm := range removed {
		run.Heal.Removed = append(run.Heal.Removed, rm.Host+": "+rm.What)
		r.logf("heal host=%s removed=%q", rm.Host, rm.What)
	}
	h.unhealed = err != nil
	if err != nil {
		run.Heal.Errors = append(run.Heal.Errors, err.Error())
		h.errs = append(h.errs, err.Error())
		r.logf("heal error=%q", err.Error())
	}
}

// final is the deferred heal, and the record written after it.
func (h *healer) final() {
	h.now(context.Background())
	_ = h.r.rec.write()
}
