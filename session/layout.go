package session

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/dstgen/dstgen/internal/lazyre"
)

// Names inside a session directory.
const (
	SessionLog   = "session-log.md"
	LogsDir      = "logs"
	MetricsDir   = "metrics"
	ArtifactsDir = "artifacts"
	FindingsDir  = "findings"
	// BenchmarkDir is where real-env-test run_<ts>/ trees keep results.
	BenchmarkDir = "benchmark"
	// BenchParamsFile, in BenchmarkDir, records as key=value lines what a
	// benchmark run was started with (run_id, host, rate, duration_s,
	// mode, dataset, seed); `dstgen bench start` writes it.
	BenchParamsFile = "bench.params"
)

// Timestamp layouts of session directory names.
const (
	StampLayout    = "20060102T150405Z" // <plan-slug>/<stamp>/
	RunStampLayout = "20060102_150405"  // run_<stamp>/ (real-env-test)
)

// NewDir is the session directory of a plan run started at t under a
// results root: <root>/<slug>/<UTC stamp> (slug "scenarios" when there is
// no plan). It does not create it.
func NewDir(root, slug string, t time.Time) string {
	if slug == "" {
		slug = "scenarios"
	}
	return filepath.Join(root, slug, t.UTC().Format(StampLayout))
}

// namedRE is a session name: what `dstgen run --session NAME` adds to.
var namedRE = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// NamedDir is the directory of the named session name of a plan under a
// results root: <root>/<slug>/<name>, the same for every run that names
// it, so the runs of one scenario at a time add up to one session. A name
// is 1–64 letters, digits, '.', '_', '-', not starting with '.', '_' or
// '-'. It does not create it.
func NamedDir(root, slug, name string) (string, error) {
	if !namedRE.MatchString(name) {
		return "", fmt.Errorf("session name %q: want 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	if slug == "" {
		slug = "scenarios"
	}
	return filepath.Join(root, slug, name), nil
}

// stamp parses a session directory's name; ok is false for other names.
func stamp(name string) (time.Time, bool) {
	if t, err := time.Parse(StampLayout, name); err == nil {
		return t, true
	}
	if s, found := strings.CutPrefix(name, "run_"); found {
		if t, err := time.Parse(RunStampLayout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// IsSession reports whether dir looks like a session: its name is a session
// stamp, or it holds a session log, an artifacts/ or a benchmark/ dir.
func IsSession(dir string) bool {
	if _, ok := stamp(filepath.Base(filepath.Clean(dir))); ok {
		return true
	}
	for _, n := range []string{SessionLog, ArtifactsDir, BenchmarkDir} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

type candidate struct {
	dir string
	t   time.Time
}

// sessionsIn lists the session dirs directly inside dir: stamped ones and
// named ones (NamedDir) that hold a session log.
func sessionsIn(dir string) []candidate {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []candidate
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		if t, ok := stamp(e.Name()); ok {
			out = append(out, candidate{sub, t})
		} else if namedRE.MatchString(e.Name()) {
			// A named session (NamedDir): its age is when a run last
			// wrote to its log, so the one just added to is the newest.
			if fi, err := os.Stat(filepath.Join(sub, SessionLog)); err == nil {
				out = append(out, candidate{sub, fi.ModTime().UTC()})
			}
		}
	}
	return out
}

// Find returns the session to analyze under root: root itself when it is a
// session, else the newest stamped session in root (run_<ts>/ dirs) or one
// level below it (<plan-slug>/<ts>/).
func Find(root string) (string, error) {
	st, err := os.Stat(root)
	if err != nil {
		return "", fmt.Errorf("find session in %s: %w", root, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("find session in %s: not a directory", root)
	}
	if IsSession(root) {
		return root, nil
	}
	all := List(root)
	if len(all) == 0 {
		return "", fmt.Errorf("find session in %s: no session directory (<plan-slug>/%s, run_%s or a run_<RUN_ID> with results)", root, StampLayout, RunStampLayout)
	}
	return all[0], nil
}

// List is every session under root, newest first: the stamped run_<ts>/
// dirs in it, a run_<RUN_ID> with results (its age is its mtime), and the
// <plan-slug>/<ts>/ and named <plan-slug>/<name>/ dirs one level below (a
// named one is as old as its session log's last line). Find, `run --rerun` and `dstgen
// serve` walk results/ through it.
func List(root string) []string {
	// One listing of root serves both levels.
	var cands []candidate
	if ents, err := os.ReadDir(root); err == nil {
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			sub := filepath.Join(root, e.Name())
			if t, ok := stamp(e.Name()); ok {
				cands = append(cands, candidate{sub, t})
			} else if strings.HasPrefix(e.Name(), "run_") && IsSession(sub) {
				// A run named by a RUN_ID that is not a timestamp
				// (bench:start takes any): its age is its mtime.
				if fi, err := e.Info(); err == nil {
					cands = append(cands, candidate{sub, fi.ModTime().UTC()})
				}
			}
			cands = append(cands, sessionsIn(sub)...)
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		if !cands[i].t.Equal(cands[j].t) {
			return cands[i].t.After(cands[j].t)
		}
		return cands[i].dir > cands[j].dir
	})
	out := make([]string, len(cands))
	for i, c := range cands {
		out[i] = c.dir
	}
	return out
}

// Previous returns the newest session of the same plan older than dir, or
// "" when there is none. Sessions of a plan are the stamped siblings of dir.
func Previous(dir string) (string, error) {
	dir = filepath.Clean(dir)
	t, ok := stamp(filepath.Base(dir))
	if !ok {
		return "", nil
	}
	real := strings.HasPrefix(filepath.Base(dir), "run_")
	var best candidate
	for _, c := range sessionsIn(filepath.Dir(dir)) {
		if _, stamped := stamp(filepath.Base(c.dir)); !stamped || strings.HasPrefix(filepath.Base(c.dir), "run_") != real || !c.t.Before(t) {
			continue
		}
		if best.dir == "" || c.t.After(best.t) {
			best = c
		}
	}
	return best.dir, nil
}

var runFileRE = lazyre.New(`^run(-seed-(-?[0-9]+))?\.json$`)

// RunFiles lists every run record of a session, sorted: files named
// run.json or run-seed-<n>.json anywhere under artifacts/ or benchmark/.
func RunFiles(sessionDir string) ([]string, error) {
	var out []string
	for _, sub := range []string{ArtifactsDir, BenchmarkDir} {
		root := filepath.Join(sessionDir, sub)
		if _, err := os.Stat(root); err != nil {
			continue
		}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && runFileRE.MatchString(d.Name()) {
				out = append(out, p)
			}
			return nil
		})
		if err != nil {
			return out, fmt.Errorf("list run records in %s: %w", root, err)
		}
	}
	sort.Strings(out)
	return out, nil
}

// RunFileName is the run record's name for a seed: run.json for the only
// or first seed of a unit, run-seed-<n>.json when the unit runs several
// (RunFiles reads both).
func RunFileName(seed int64, multi bool) string {
	if multi {
		return fmt.Sprintf("run-seed-%d.json", seed)
	}
	return "run.json"
}

// HistoryName is the history beside a run file of that name (HistoryPath's
// default): history.jsonl or history-seed-<n>.jsonl.
func HistoryName(runFile string) string { return filepath.Base(sibling(runFile, "history", ".jsonl")) }

// FinalName is the final-state dump beside a run file of that name.
func FinalName(runFile string) string { return filepath.Base(sibling(runFile, "final", ".json")) }

// sibling maps run.json → <base>.<ext> and run-seed-<n>.json →
// <base>-seed-<n>.<ext> in the same directory.
func sibling(runPath, base, ext string) string {
	m := runFileRE.FindStringSubmatch(filepath.Base(runPath))
	name := base + ext
	if m != nil && m[1] != "" {
		name = base + m[1] + ext
	}
	return filepath.Join(filepath.Dir(runPath), name)
}

// HistoryPath is the history file of a run: its "history" field relative to
// the run file's directory, else history.jsonl (history-seed-<n>.jsonl for
// run-seed-<n>.json).
func HistoryPath(r *Run) string {
	if r.History != "" {
		return filepath.Join(filepath.Dir(r.Path), filepath.FromSlash(r.History))
	}
	return sibling(r.Path, "history", ".jsonl")
}

// FinalPath is the final-state dump of a run, resolved like HistoryPath
// (final.json / final-seed-<n>.json).
func FinalPath(r *Run) string {
	if r.FinalState != "" {
		return filepath.Join(filepath.Dir(r.Path), filepath.FromSlash(r.FinalState))
	}
	return sibling(r.Path, "final", ".json")
}

// Header is the bold-label header of session-log.md (docs/report-format.md §2).
type Header struct {
	Title      string
	SUT        string
	Plan       string
	Commit     string
	SessionDir string
	Operator   string
}

var headerRE = lazyre.New(`^\*\*([A-Za-z ]+):\*\*\s*(.*?)\s*$`)

// ReadHeader reads the header of dir/session-log.md. A missing log is an
// error the caller may ignore (real-env-test runs have none).
func ReadHeader(dir string) (Header, error) {
	var h Header
	f, err := os.Open(filepath.Join(dir, SessionLog))
	if err != nil {
		return h, fmt.Errorf("read session log: %w", err)
	}
	defer f.Close()
	return parseHeader(f)
}

// parseHeader reads the title and bold-label lines before the first
// "## " section.
func parseHeader(r io.Reader) (Header, error) {
	var h Header
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 0; sc.Scan() && n < 200; n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			break
		}
		if t, ok := strings.CutPrefix(line, "# "); ok && h.Title == "" {
			h.Title = strings.TrimSpace(t)
			continue
		}
		m := headerRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v := strings.Trim(m[2], "`")
		switch m[1] {
		case "SUT":
			h.SUT = v
		case "Plan":
			h.Plan = v
		case "Commit under test":
			h.Commit = v
		case "Session dir":
			h.SessionDir = v
		case "Operator":
			h.Operator = v
		}
	}
	if err := sc.Err(); err != nil {
		return h, fmt.Errorf("read session log: %w", err)
	}
	return h, nil
}
