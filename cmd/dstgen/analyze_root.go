package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dstgen/dstgen/analyze"
	"github.com/dstgen/dstgen/analyze/bench"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/session"
)

// rollUp is the rest of `dstgen analyze <results root>` once the newest
// session was judged (newest, j): every other session is judged too —
// quietly, one judged= line each — unless its report is newer than
// everything it reads, and then each scenario's latest verdict and the
// newest benchmark run's: latest.<ID>=<verdict> session=<dir>
// (docs/report-format.md §1.1). A user who ran S1, S2 and S3 one task at a
// time gets all three judged by one command.
func rollUp(cmd *cobra.Command, root, newest string, j judged, p *plan.Plan, f analyzeFlags) error {
	stdout := cmd.OutOrStdout()
	type seen struct {
		dir string
		j   judged
	}
	all := []seen{{newest, j}}
	for _, dir := range session.List(root) {
		if dir == newest {
			continue
		}
		oj, ok := reusedReport(dir)
		if !ok {
			var err error
			if oj, err = analyzeSession(cmd, dir, p, f, io.Discard, io.Discard); err != nil {
				return err
			}
			fmt.Fprintln(stdout, runner.FormatKV([][2]string{{"judged", underRoot(root, dir)}, {"session_verdict", string(oj.verdict)}}))
		}
		all = append(all, seen{dir, oj})
	}
	// Newest first: the first session that ran a scenario has its latest
	// verdict; a NOT-RUN says only that this session did not run it.
	type latest struct {
		v   analyze.Verdict
		dir string
	}
	got := map[string]latest{}
	var order []string
	benchDone := false
	for _, s := range all {
		if s.j.bench {
			if !benchDone {
				benchDone = true
				fmt.Fprintln(stdout, runner.FormatKV([][2]string{{"latest.benchmark", string(s.j.verdict)}, {"session", underRoot(root, s.dir)}}))
			}
			continue
		}
		for _, sc := range s.j.scenarios {
			if _, ok := got[sc.ID]; !ok {
				order = append(order, sc.ID)
				got[sc.ID] = latest{}
			}
			if got[sc.ID].dir == "" && sc.Verdict != analyze.NotRun {
				got[sc.ID] = latest{sc.Verdict, s.dir}
			}
		}
	}
	slices.SortStableFunc(order, byScenarioID)
	for _, id := range order {
		l := got[id]
		kv := [][2]string{{"latest." + id, string(analyze.NotRun)}}
		if l.dir != "" {
			kv = [][2]string{{"latest." + id, string(l.v)}, {"session", underRoot(root, l.dir)}}
		}
		fmt.Fprintln(stdout, runner.FormatKV(kv))
	}
	return nil
}

// underRoot is dir as the user named the root: root/… when dir is under it.
func underRoot(root, dir string) string {
	if r, err := filepath.Rel(root, dir); err == nil && filepath.IsLocal(r) {
		return filepath.Join(root, r)
	}
	return dir
}

// reusedReport reads a session's findings/report.json when it is newer
// than every record, history, log and metric the analysis reads (what
// `dstgen analyze` wrote last time still holds); ok is false when the
// session must be judged again.
func reusedReport(dir string) (judged, bool) {
	rp := filepath.Join(dir, session.FindingsDir, analyze.ReportJSONFile)
	fi, err := os.Stat(rp)
	if err != nil || newerInputs(dir, fi.ModTime()) {
		return judged{}, false
	}
	data, err := os.ReadFile(rp)
	if err != nil {
		return judged{}, false
	}
	var r struct {
		SessionVerdict analyze.SessionVerdict `json:"session_verdict"`
		Scenarios      []judgedScenario       `json:"scenarios"`
	}
	if json.Unmarshal(data, &r) != nil || r.SessionVerdict == "" {
		return judged{}, false
	}
	isBench := false
	if bench.IsRunDir(dir) {
		runs, _ := session.RunFiles(dir)
		isBench = len(runs) == 0
	}
	return judged{verdict: r.SessionVerdict, scenarios: r.Scenarios, bench: isBench}, true
}

// newerInputs reports whether a file the analysis reads (under artifacts/,
// benchmark/, logs/, metrics/) changed after t. The walk is bounded: past
// maxInputs files the session counts as changed.
func newerInputs(dir string, t time.Time) bool {
	const maxInputs = 100000
	n, newer := 0, false
	for _, sub := range []string{session.ArtifactsDir, session.BenchmarkDir, session.LogsDir, session.MetricsDir} {
		_ = filepath.WalkDir(filepath.Join(dir, sub), func(_ string, d fs.DirEntry, err error) error {
			if err != nil || newer {
				return fs.SkipAll
			}
			if d.IsDir() {
				return nil
			}
			if n++; n > maxInputs {
				newer = true
				return fs.SkipAll
			}
			if info, err := d.Info(); err == nil && info.ModTime().After(t) {
				newer = true
				return fs.SkipAll
			}
			return nil
		})
	}
	return newer
}

// byScenarioID orders scenario ids as a plan numbers them: S2 before S10,
// a scenario before its arms.
func byScenarioID(a, b string) int {
	na, ra := idNumber(a)
	nb, rb := idNumber(b)
	if na != nb {
		return cmp.Compare(na, nb)
	}
	return cmp.Compare(ra, rb)
}

// idNumber splits "S12/api" into 12 and "/api" (-1 and the id when it is
// not S<n>…).
func idNumber(id string) (int, string) {
	i := 1
	for i < len(id) && id[i] >= '0' && id[i] <= '9' {
		i++
	}
	n, err := strconv.Atoi(id[min(1, len(id)):i])
	if !strings.HasPrefix(id, "S") || err != nil {
		return -1, id
	}
	return n, id[i:]
}
