package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/internal/fileline"
	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/nemesis"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/session"
)

// collectIn is what the stages before collect hand it: when the workload
// started (zero: it never did), the windows, the hosts whose samplers
// run, and when quiesce held (control wall ns; 0 = not seen).
type collectIn struct {
	started   time.Time
	wins      []windowRec
	metrics   []nemesis.Host
	nominalAt int64
}

// collect copies the history, final state, job outputs, SUT logs and
// metrics into the session, then puts the windows on the history's clock,
// stamps fault_epoch and fills the workload fields from the history. It
// runs on a context of its own: an interrupted run still keeps what the
// hosts have.
func (r *unitRun) collect(cl cluster, p placement, in collectIn) {
	ctx, cancel := context.WithTimeout(context.Background(), r.o.b.collect)
	defer cancel()
	locals := r.fetchHistory(ctx, p)
	r.fetchLogs(ctx, cl, p)
	r.fetchMetrics(ctx, p, in.metrics)
	r.stamp(ctx, locals, p, in)
	r.driverCount(p)
}

// fetchHistory copies each share's history (and the driver's final-state
// dump) next to the run record and returns the local histories, one per
// share in share order ("" for a share whose history is missing).
func (r *unitRun) fetchHistory(ctx context.Context, p placement) []string {
	stage := filepath.Join(r.a.Dir, ".collect-"+strings.TrimSuffix(r.a.RunFile, ".json"))
	_ = os.RemoveAll(stage)
	defer os.RemoveAll(stage)
	var locals []string
	for i, sh := range p.shares {
		remotes := []string{sh.history}
		if i == 0 && r.u.Scenario.FinalState != "" {
			remotes = append(remotes, p.final)
		}
		into := filepath.Join(stage, strconv.Itoa(i))
		res, err := r.o.hosts.Fetch(ctx, sh.host.Host, remotes, into)
		r.logCollect(res, err)
		local := filepath.Join(r.a.Dir, session.HistoryName(r.a.RunFile))
		if len(p.shares) > 1 {
			local = filepath.Join(r.a.Dir, "shares", sh.host.Name, session.HistoryName(r.a.RunFile))
			_ = os.MkdirAll(filepath.Dir(local), 0o755)
		}
		if err := os.Rename(filepath.Join(into, "history.jsonl"), local); err != nil {
			r.logf("collect host=%s history=missing", sh.host.Name)
			local = ""
		}
		locals = append(locals, local)
		if i == 0 {
			if err := os.Rename(filepath.Join(into, "final.json"), filepath.Join(r.a.Dir, session.FinalName(r.a.RunFile))); err == nil {
				r.rec.run.FinalState = "" // the default sibling name
			} else if r.u.Scenario.FinalState != "" && r.rec.run.FinalStateError == "" {
				r.rec.run.FinalStateError = "the final_state command ran but wrote no " + p.final
			}
		}
	}
	if session.HistoryName(r.a.RunFile) != "history.jsonl" && len(locals) > 0 && locals[0] != "" {
		r.rec.run.History = session.HistoryName(r.a.RunFile)
	}
	return locals
}

// fetchLogs copies the workload job's stdout and stderr and, for a SUT
// dstgen deployed, each SUT host's logs (its unit's journal since the run
// started, or the job's files), then scans them for crash markers.
func (r *unitRun) fetchLogs(ctx context.Context, cl cluster, p placement) {
	sdir := r.o.session.Dir
	logsDir := func(h string) string { return filepath.Join(sdir, session.LogsDir, filepath.FromSlash(r.u.ID()), h) }
	for _, sh := range p.shares {
		jobDir := path.Join(sh.host.Workdir, "jobs", p.jobID)
		res, err := r.o.hosts.Fetch(ctx, sh.host.Host, []string{path.Join(jobDir, "stdout"), path.Join(jobDir, "stderr")}, logsDir(sh.host.Name))
		r.logCollect(res, err)
	}
	if !r.o.sut.Deployed() {
		return // no SUT of dstgen's: no SUT logs of its own
	}
	var dirs []string
	for _, h := range cl.sut {
		remotes := h.SUT.Logs
		if h.SUT.Unit != "" {
			j := path.Join(p.dir, "sut-"+h.Name+".log")
			since := r.start.Add(-time.Second).Unix()
			if _, err := r.o.hosts.Run(ctx, h.Host, fmt.Sprintf("mkdir -p %s && journalctl -u %s --since @%d --no-pager > %s 2>&1 || true",
				shell.Quote(p.dir), shell.Quote(h.SUT.Unit), since, shell.Quote(j))); err == nil {
				remotes = []string{j}
			}
		}
		if len(remotes) > 0 {
			res, err := r.o.hosts.Fetch(ctx, h.Host, remotes, filepath.Join(logsDir(h.Name), "sut"))
			r.logCollect(res, err)
		}
		dirs = append(dirs, filepath.Join(logsDir(h.Name), "sut"))
	}
	ls, err := scanLogs(sdir, dirs)
	if err != nil {
		r.logf("log_scan error=%q", err.Error())
	}
	if ls != nil {
		r.rec.run.LogScan = ls
		r.logf("log_scan markers=%d found=%d", len(ls.Markers), ls.Found)
	}
}

// fetchMetrics stops each sampler and copies its CSVs into metrics/<host>/.
func (r *unitRun) fetchMetrics(ctx context.Context, p placement, hosts []nemesis.Host) {
	for _, h := range hosts {
		script := path.Join(h.Workdir, "scripts", "collect-metrics.sh")
		dir := r.metricsDir(h, p)
		_, _ = r.o.hosts.Run(ctx, h.Host, "bash "+shell.Quote(script)+" stop "+shell.Quote(dir)+" >/dev/null 2>&1 || true")
		res, err := r.o.hosts.Fetch(ctx, h.Host, []string{dir}, filepath.Join(r.o.session.Dir, session.MetricsDir, h.Name))
		r.logCollect(res, err)
	}
}

// unboundedNS stands for "the offset is not known": an uncertainty wider
// than any run, so no op can be placed inside or outside a window.
const unboundedNS = int64(1) << 61

// driverClock is a driver host's offset and the uncertainty the windows
// go onto its history's clock with: the pre-flight measurement widened by
// the drift a second measurement after the run shows; known is false when
// the offset was never measured (docs/dst-run.md §7, stamp).
func (r *unitRun) driverClock(ctx context.Context, h nemesis.Host) (drv session.HostClock, u int64, end *session.HostClock, known bool) {
	for _, c := range r.rec.run.Timeline.Hosts {
		if c.Host == h.Name && c.Samples > 0 {
			drv, known = c, true
		}
	}
	if !known {
		r.logf("clock driver=%s offset=unknown: no op is stamped, every op near a window is ambiguous", h.Name)
		return session.HostClock{Host: h.Name}, unboundedNS, nil, false
	}
	u = drv.UncertaintyNS
	cctx, cancel := r.bounded(ctx, r.o.b.call)
	cs, err := r.o.hosts.Clock(cctx, h.Host)
	cancel()
	if err != nil {
		r.logf("clock driver=%s end_error=%q: the drift since pre-flight is unknown", h.Name, err.Error())
		return drv, u, nil, true
	}
	e := session.HostClock{Host: drv.Host, OffsetNS: int64(cs.Offset), UncertaintyNS: int64(cs.Uncertainty), Samples: cs.Samples}
	drift := e.OffsetNS - drv.OffsetNS
	if drift < 0 {
		drift = -drift
	}
	return drv, max(u, e.UncertaintyNS) + drift, &e, true
}

// onOneClock is the history a unit's check reads: the only share's as it
// came, or every share's merged onto the control node's clock
// (mergeShares) into histLocal; the driver clock the windows go onto it
// with, and the uncertainty of that. "" when there is no history to check.
func (r *unitRun) onOneClock(ctx context.Context, locals []string, p placement) (histLocal string, drv session.HostClock, u int64) {
	tl := r.rec.run.Timeline
	if len(p.shares) == 1 {
		d, u, end, known := r.driverClock(ctx, p.driver)
		tl.DriverEnd, tl.DriverClockUnknown = end, !known
		if known {
			tl.StampUncertaintyNS = u
		}
		return locals[0], d, u
	}
	var in []shareHistory
	for i, sh := range p.shares {
		d, u, _, known := r.driverClock(ctx, sh.host)
		if !known || locals[i] == "" {
			why := "its clock offset was never measured"
			if locals[i] == "" {
				why = "its history is missing"
			}
			// Without every share on one clock, an order between two
			// hosts' ops would be a guess: no history is better than a
			// false anomaly.
			r.logf("collect shares=%d merged=false reason=%q", len(p.shares), sh.host.Name+": "+why)
			r.rec.run.Notes = appendNote(r.rec.run.Notes, fmt.Sprintf("the histories of %d client hosts were not merged: %s: %s", len(p.shares), sh.host.Name, why))
			return "", session.HostClock{}, 0
		}
		in = append(in, shareHistory{host: sh.host.Name, path: locals[i], offsetNS: d.OffsetNS, uncertaintyNS: u})
	}
	histLocal = filepath.Join(r.a.Dir, session.HistoryName(r.a.RunFile))
	n, u, err := mergeShares(in, histLocal)
	if err != nil {
		r.logf("collect shares=%d merged=false error=%q", len(p.shares), err.Error())
		r.rec.run.Notes = appendNote(r.rec.run.Notes, "the client hosts' histories were not merged: "+err.Error())
		return "", session.HostClock{}, 0
	}
	tl.Drivers = nil
	for _, sh := range p.shares {
		tl.Drivers = append(tl.Drivers, sh.host.Name)
	}
	tl.StampUncertaintyNS = u
	r.logf("collect shares=%d merged=true ops=%d uncertainty_ns=%d", len(p.shares), n, u)
	// The merged history is on the control node's clock: offset 0.
	return histLocal, session.HostClock{Host: "control"}, u
}

func appendNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// stamp puts the windows (and the quiesce time) on the history's clock,
// reads the history victims, stamps fault_epoch into the history and
// fills the workload fields from it: the one timeline.
func (r *unitRun) stamp(ctx context.Context, locals []string, p placement, in collectIn) {
	run := r.rec.run
	histLocal, drv, u := r.onOneClock(ctx, locals, p)
	var origin int64
	var ops []history.Op
	if histLocal != "" {
		meta, o, _, err := history.ReadFile(histLocal)
		if err == nil {
			origin, ops = meta.OriginUnixNS, o
			if meta.Clock != "" {
				run.Clock = meta.Clock
			}
			if meta.Recorder != "" {
				// How the history was taken, as its header says: the
				// hidden-retries item of the audit reads it.
				run.Recorder = &session.Recorder{Mechanism: meta.Recorder, HidesRetries: meta.HidesRetries}
			}
		}
	}
	run.Timeline.OriginUnixNS = origin
	run.FaultWindows = windowsOn(in.wins, func(ns int64) int64 { return toHistory(ns, drv, origin) })
	if in.nominalAt != 0 && run.Recovery != nil {
		v := toHistory(in.nominalAt, drv, origin)
		run.Recovery.NominalAtNS = &v
	}
	for i, rec := range in.wins {
		if rec.historyVictim && len(ops) > 0 {
			ev := historySignal(ops, run.FaultWindows, i)
			if run.Timeline.DriverClockUnknown {
				ev = unknownEvidence(kindHistoryErrorRate, ev.Name, errors.New("the driver host's clock offset was never measured: the history cannot be put against the window"))
			}
			run.FaultWindows[i].VictimEvidence = &ev
			run.FaultWindows[i].Landed = landed(run.FaultWindows[i])
		}
	}
	run.Failovers = r.failovers(run.FaultWindows)
	if histLocal != "" {
		stamped, ambiguous, err := stampFile(histLocal, run.FaultWindows, u)
		if err != nil {
			r.logf("stamp error=%q", err.Error())
		}
		run.Timeline.StampedOps, run.Timeline.AmbiguousOps = stamped, ambiguous
		w := throughput(ops, time.Second, run.Timeline.Drivers)
		w.Command, w.ExitStatus, w.PlannedRate = run.Workload.Command, run.Workload.ExitStatus, run.Workload.PlannedRate
		run.Workload = w
	}
	r.logf("collect history=%s ops=%d stamped=%d ambiguous=%d", histLocal, run.Workload.OpsProduced, run.Timeline.StampedOps, run.Timeline.AmbiguousOps)
}

// failovers counts the windows that saw a new leader (their leader_change
// evidence changed): the failovers of the run, at least — nil when the
// scenario has no leader query, so none could be seen.
func (r *unitRun) failovers(ws []session.FaultWindow) *int {
	if r.u.Scenario.LeaderQuery == "" {
		return nil
	}
	n := 0
	for _, w := range ws {
		if ev := w.VictimEvidence; ev != nil && ev.Kind == kindLeaderChange && ev.Verdict == session.SignalChanged {
			n++
		}
	}
	return &n
}

// driverSummary is the prefix of the summary line a driver prints on
// stdout as it exits (docs/driver-contract.md): "dstgen-driver:
// ops_produced=N ok=… fail=… unknown=…".
const driverSummary = "dstgen-driver:"

// driverCount sets ops_produced from the driver's own summary line in its
// collected stdout, the last one printed: the count of ops it issued, not
// the history's lines, so ops the history lost are ops the checker never
// consumed (docs/verdicts.md §3.1 step 6). Without one it stays the
// history's count, and ops_produced_by says so.
func (r *unitRun) driverCount(p placement) {
	w := &r.rec.run.Workload
	w.OpsProducedBy = "history"
	total := 0
	for _, sh := range p.shares {
		n, ok := r.sharedCount(sh.host.Name)
		if !ok {
			return
		}
		total += n
	}
	w.OpsProduced, w.OpsProducedBy = total, "driver"
	r.logf("workload ops_produced=%d (the driver's own count)", total)
}

// sharedCount is the ops_produced of the last summary line in host's
// collected driver stdout.
func (r *unitRun) sharedCount(host string) (int, bool) {
	out := filepath.Join(r.o.session.Dir, session.LogsDir, filepath.FromSlash(r.u.ID()), host, "stdout")
	data, err := fileline.ReadBounded(out, 64<<20)
	if err != nil {
		return 0, false
	}
	var last string
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), driverSummary); ok {
			last = rest
		}
	}
	for _, f := range strings.Fields(last) {
		if v, ok := strings.CutPrefix(f, "ops_produced="); ok {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				return n, true
			}
		}
	}
	return 0, false
}

func (r *unitRun) logCollect(res []runner.FileResult, err error) {
	if err != nil {
		r.logf("collect error=%q", err.Error())
	}
	for _, f := range res {
		if f.Status != runner.FileOK {
			r.logf("collect host=%s source=%s status=%s reason=%q", f.Host, f.Source, f.Status, f.Reason)
		}
	}
}
