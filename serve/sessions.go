package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/dstgen/dstgen/analyze"
	"github.com/dstgen/dstgen/analyze/bench"
	"github.com/dstgen/dstgen/session"
)

// MaxSessions bounds how many sessions one listing collects, so a huge or
// pathological results tree cannot make a page load unbounded.
const MaxSessions = 5000

// NotAnalyzed is the verdict shown (and filtered on) for a session that has
// no findings/report.json yet.
const NotAnalyzed = "not analyzed"

// Badge is one scenario's verdict on the index.
type Badge struct {
	ID      string
	Verdict string
}

// Session is one session directory under RESULTS as the index shows it.
type Session struct {
	// Rel is the session's path relative to RESULTS, slash-separated
	// ("." when RESULTS itself is the session).
	Rel string
	// Plan is the plan slug: report.json's plan_slug, else the parent
	// directory of a <plan-slug>/<stamp>/ session, else "real-env-test"
	// for a run_<id>/ directory.
	Plan string
	// Time is when the session started: its directory stamp, or the
	// directory's mtime for a run_<RUN_ID> that is no timestamp.
	Time time.Time
	// Analyzed is true when findings/report.json was read.
	Analyzed bool
	// Verdict is the session verdict (DONE, FAIL, …), a benchmark run's
	// result (pass, fail, inconclusive) or NotAnalyzed.
	Verdict string
	// Headline is the report's one-line summary.
	Headline string
	// Scenarios are the scenario verdicts, in report order.
	Scenarios []Badge
	// Problem says why report.json could not be read, when it exists but
	// is unreadable; the session is then listed as not analyzed.
	Problem string
}

// Filter selects sessions on the index; an empty field matches everything.
type Filter struct {
	// Plan matches the session's plan slug exactly.
	Plan string
	// Verdict matches the session verdict or any scenario verdict
	// exactly ("FAIL-reproducible" finds the sessions that have one).
	Verdict string
}

// Match reports whether s passes the filter.
func (f Filter) Match(s Session) bool {
	if f.Plan != "" && s.Plan != f.Plan {
		return false
	}
	if f.Verdict == "" || s.Verdict == f.Verdict {
		return true
	}
	return slices.ContainsFunc(s.Scenarios, func(b Badge) bool { return b.Verdict == f.Verdict })
}

// Apply returns the sessions that pass the filter, in their order.
func (f Filter) Apply(all []Session) []Session {
	var out []Session
	for _, s := range all {
		if f.Match(s) {
			out = append(out, s)
		}
	}
	return out
}

// stamp parses a session directory name (session.StampLayout, or run_
// followed by session.RunStampLayout).
func stamp(name string) (time.Time, bool) {
	if t, err := time.Parse(session.StampLayout, name); err == nil {
		return t, true
	}
	if s, ok := strings.CutPrefix(name, "run_"); ok {
		if t, err := time.Parse(session.RunStampLayout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// isSession mirrors session.IsSession inside fsys: a stamped name, or a
// session log, artifacts/ or benchmark/ inside.
func isSession(fsys fs.FS, rel string) bool {
	if _, ok := stamp(path.Base(rel)); ok && rel != "." {
		return true
	}
	for _, n := range []string{session.SessionLog, session.ArtifactsDir, session.BenchmarkDir} {
		if _, err := fs.Stat(fsys, path.Join(rel, n)); err == nil {
			return true
		}
	}
	return false
}

// List finds the sessions under fsys (RESULTS) the way session.Find looks
// for them — RESULTS itself when it is a session, else run_<id>/ and
// <stamp>/ directories in it and <plan-slug>/<stamp>/ one level below —
// reads each one's findings/report.json, and returns them newest first.
// Symlinked directories are not followed. Errors name what could not be
// listed; the sessions found so far are still returned.
func List(fsys fs.FS) ([]Session, error) {
	var rels []string
	var times []time.Time
	add := func(rel string, t time.Time) {
		rels, times = append(rels, rel), append(times, t)
	}
	if isSession(fsys, ".") {
		t := time.Time{}
		if fi, err := fs.Stat(fsys, "."); err == nil {
			t = fi.ModTime().UTC()
		}
		add(".", t)
	} else {
		ents, err := fs.ReadDir(fsys, ".")
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		var errs []error
		for _, e := range ents {
			if len(rels) >= MaxSessions {
				break
			}
			if !e.IsDir() {
				continue
			}
			name := e.Name()
			if t, ok := stamp(name); ok {
				add(name, t)
				continue
			}
			if strings.HasPrefix(name, "run_") && isSession(fsys, name) {
				// A RUN_ID that is no timestamp: its age is its mtime.
				if fi, err := e.Info(); err == nil {
					add(name, fi.ModTime().UTC())
				}
				continue
			}
			sub, err := fs.ReadDir(fsys, name)
			if err != nil {
				errs = append(errs, fmt.Errorf("list sessions in %s: %w", name, err))
				continue
			}
			for _, se := range sub {
				if len(rels) >= MaxSessions {
					break
				}
				if t, ok := stamp(se.Name()); ok && se.IsDir() {
					add(name+"/"+se.Name(), t)
				}
			}
		}
		if len(errs) > 0 {
			return load(fsys, rels, times), errors.Join(errs...)
		}
	}
	return load(fsys, rels, times), nil
}

// load reads each session's report and sorts newest first (ties: the path,
// descending, as session.Find breaks them).
func load(fsys fs.FS, rels []string, times []time.Time) []Session {
	out := make([]Session, 0, len(rels))
	for i, rel := range rels {
		out = append(out, readSession(fsys, rel, times[i]))
	}
	slices.SortStableFunc(out, func(a, b Session) int {
		if c := b.Time.Compare(a.Time); c != 0 {
			return c
		}
		return strings.Compare(b.Rel, a.Rel)
	})
	return out
}

// reportHead is the part of report.json the index needs, for both the
// plan-session schema (analyze.ReportSchema) and the benchmark-run one
// (bench.Schema).
type reportHead struct {
	Schema         string `json:"schema"`
	PlanSlug       string `json:"plan_slug"`
	SessionVerdict string `json:"session_verdict"`
	Verdict        string `json:"verdict"`
	Headline       string `json:"headline"`
	Scenarios      []struct {
		ID      string `json:"id"`
		Verdict string `json:"verdict"`
	} `json:"scenarios"`
}

// ReportFile is where a session's report.json sits, relative to the session.
const ReportFile = session.FindingsDir + "/" + analyze.ReportJSONFile

// readSession builds the index row of the session at rel.
func readSession(fsys fs.FS, rel string, t time.Time) Session {
	s := Session{Rel: rel, Time: t, Verdict: NotAnalyzed}
	if dir := path.Dir(rel); dir != "." {
		s.Plan = dir
	} else if strings.HasPrefix(path.Base(rel), "run_") {
		s.Plan = "real-env-test"
	}
	data, err := fs.ReadFile(fsys, path.Join(rel, ReportFile))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.Problem = fmt.Sprintf("read %s: %v", ReportFile, err)
		}
		return s
	}
	var h reportHead
	if err := json.Unmarshal(data, &h); err != nil {
		s.Problem = fmt.Sprintf("%s: %v", ReportFile, err)
		return s
	}
	switch h.Schema {
	case analyze.ReportSchema:
		s.Verdict = h.SessionVerdict
	case bench.Schema:
		s.Verdict = h.Verdict
		if s.Plan == "" || s.Plan == "real-env-test" {
			s.Plan = "benchmark"
		}
	default:
		s.Problem = fmt.Sprintf("%s: unknown schema %q (want %s or %s)", ReportFile, h.Schema, analyze.ReportSchema, bench.Schema)
		return s
	}
	s.Analyzed = true
	s.Headline = h.Headline
	if h.PlanSlug != "" {
		s.Plan = h.PlanSlug
	}
	for _, sc := range h.Scenarios {
		s.Scenarios = append(s.Scenarios, Badge{ID: sc.ID, Verdict: sc.Verdict})
	}
	return s
}

// badgeClass maps a verdict to the CSS class that colours its badge.
func badgeClass(v string) string {
	switch sv := analyze.Verdict(v); {
	case v == string(analyze.Done) || v == bench.Pass:
		return "pass"
	case v == string(analyze.Fail) || v == bench.Fail:
		return "fail"
	case v == string(analyze.DoneWithConcerns):
		return "part"
	case v == string(analyze.Inconclusive) || v == string(analyze.Blocked) || v == bench.Inconclusive:
		return "inc"
	case v == NotAnalyzed:
		return "none"
	case sv.IsPass():
		return "pass"
	case sv.IsFail():
		return "fail"
	case sv.IsPartial():
		return "part"
	case sv.IsInconclusive():
		return "inc"
	}
	return "none"
}

// plansOf lists the distinct plans of the sessions, sorted, for the filter form.
func plansOf(all []Session) []string {
	var out []string
	for _, s := range all {
		if s.Plan != "" && !slices.Contains(out, s.Plan) {
			out = append(out, s.Plan)
		}
	}
	slices.Sort(out)
	return out
}

// verdictsOf lists every verdict a filter can match: the session verdicts,
// then the ten scenario verdicts, then NotAnalyzed.
func verdictsOf() []string {
	out := []string{string(analyze.Done), string(analyze.DoneWithConcerns), string(analyze.Inconclusive), string(analyze.Fail), string(analyze.Blocked)}
	for _, v := range analyze.Verdicts {
		out = append(out, string(v))
	}
	return append(out, bench.Pass, bench.Fail, bench.Inconclusive, NotAnalyzed)
}

// osRootFS is the read-only view of RESULTS that every read goes through:
// os.Root refuses any name that resolves outside it (.., absolute paths,
// symlinks pointing out).
func osRootFS(dir string) (*os.Root, fs.FS, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("open results %s: %w", dir, err)
	}
	return r, r.FS(), nil
}
