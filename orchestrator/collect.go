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
	histLocal := r.fetchHistory(ctx, p)
	r.fetchLogs(ctx, cl, p)
	r.fetchMetrics(ctx, p, in.metrics)
	r.stamp(ctx, histLocal, p, in)
	r.driverCount(p)
}

// fetchHistory copies the history and the final-state dump next to the
// run record and returns the local history ("" when there is none).
func (r *unitRun) fetchHistory(ctx context.Context, p placement) string {
	stage := filepath.Join(r.a.Dir, ".collect-"+strings.TrimSuffix(r.a.RunFile, ".json"))
	_ = os.RemoveAll(stage)
	defer os.RemoveAll(stage)
	remotes := []string{p.history}
	if r.u.Scenario.FinalState != "" {
		remotes = append(remotes, p.final)
	}
	res, err := r.o.hosts.Fetch(ctx, p.driver.Host, remotes, stage)
	r.logCollect(res, err)
	histLocal := filepath.Join(r.a.Dir, session.HistoryName(r.a.RunFile))
	if err := os.Rename(filepath.Join(stage, "history.jsonl"), histLocal); err != nil {
		r.logf("collect history=missing")
		histLocal = ""
	}
	if err := os.Rename(filepath.Join(stage, "final.json"), filepath.Join(r.a.Dir, session.FinalName(r.a.RunFile))); err == nil {
		r.rec.run.FinalState = "" // the default sibling name
	} else if r.u.Scenario.FinalState != "" && r.rec.run.FinalStateError == "" {
		r.rec.run.FinalStateError = "the final_state command ran but wrote no " + p.final
	}
	if session.HistoryName(r.a.RunFile) != "history.jsonl" && histLocal != "" {
		r.rec.run.History = session.HistoryName(r.a.RunFile)
	}
	return histLocal
}

// fetchLogs copies the workload job's stdout and stderr and, for a SUT
// dstgen deployed, each SUT host's logs (its unit's journal since the run
// started, or the job's files), then scans them for crash markers.
func (r *unitRun) fetchLogs(ctx context.Context, cl cluster, p placement) {
	sdir := r.o.session.Dir
	logsDir := func(h string) string { return filepath.Join(sdir, session.LogsDir, filepath.FromSlash(r.u.ID()), h) }
	jobDir := path.Join(p.driver.Workdir, "jobs", p.jobID)
	res, err := r.o.hosts.Fetch(ctx, p.driver.Host, []string{path.Join(jobDir, "stdout"), path.Join(jobDir, "stderr")}, logsDir(p.driver.Name))
	r.logCollect(res, err)
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

// driverClock is the driver host's offset and the uncertainty the windows
// go onto the history's clock with: the pre-flight measurement widened by
// the drift a second measurement after the run shows, or unbounded when
// the offset was never measured (docs/dst-run.md §7, stamp).
func (r *unitRun) driverClock(ctx context.Context, p placement) (session.HostClock, int64) {
	tl := r.rec.run.Timeline
	var drv session.HostClock
	known := false
	for _, c := range tl.Hosts {
		if c.Host == p.driver.Name && c.Samples > 0 {
			drv, known = c, true
		}
	}
	if !known {
		tl.DriverClockUnknown = true
		r.logf("clock driver=%s offset=unknown: no op is stamped, every op near a window is ambiguous", p.driver.Name)
		return session.HostClock{Host: p.driver.Name}, unboundedNS
	}
	u := drv.UncertaintyNS
	cctx, cancel := r.bounded(ctx, r.o.b.call)
	cs, err := r.o.hosts.Clock(cctx, p.driver.Host)
	cancel()
	if err != nil {
		r.logf("clock driver=%s end_error=%q: the drift since pre-flight is unknown", p.driver.Name, err.Error())
	} else {
		end := session.HostClock{Host: drv.Host, OffsetNS: int64(cs.Offset), UncertaintyNS: int64(cs.Uncertainty), Samples: cs.Samples}
		tl.DriverEnd = &end
		drift := end.OffsetNS - drv.OffsetNS
		if drift < 0 {
			drift = -drift
		}
		u = max(u, end.UncertaintyNS) + drift
	}
	tl.StampUncertaintyNS = u
	return drv, u
}

// stamp puts the windows (and the quiesce time) on the history's clock,
// reads the history victims, stamps fault_epoch into the history and
// fills the workload fields from it: the one timeline.
func (r *unitRun) stamp(ctx context.Context, histLocal string, p placement, in collectIn) {
	run := r.rec.run
	var origin int64
	var ops []history.Op
	if histLocal != "" {
		meta, o, _, err := history.ReadFile(histLocal)
		if err == nil {
			origin, ops = meta.OriginUnixNS, o
			if meta.Clock != "" {
				run.Clock = meta.Clock
			}
		}
	}
	drv, u := r.driverClock(ctx, p)
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
	if histLocal != "" {
		stamped, ambiguous, err := stampFile(histLocal, run.FaultWindows, u)
		if err != nil {
			r.logf("stamp error=%q", err.Error())
		}
		run.Timeline.StampedOps, run.Timeline.AmbiguousOps = stamped, ambiguous
		w := throughput(ops, time.Second)
		w.Command, w.ExitStatus, w.PlannedRate = run.Workload.Command, run.Workload.ExitStatus, run.Workload.PlannedRate
		run.Workload = w
	}
	r.logf("collect history=%s ops=%d stamped=%d ambiguous=%d", histLocal, run.Workload.OpsProduced, run.Timeline.StampedOps, run.Timeline.AmbiguousOps)
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
	out := filepath.Join(r.o.session.Dir, session.LogsDir, filepath.FromSlash(r.u.ID()), p.driver.Name, "stdout")
	data, err := fileline.ReadBounded(out, 64<<20)
	if err != nil {
		return
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
				w.OpsProduced, w.OpsProducedBy = n, "driver"
				r.logf("workload ops_produced=%d (the driver's own count)", n)
			}
		}
	}
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
