package session

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/internal/fileline"
)

const goodRun = `{
  "schema": "dst-run/1",
  "scenario": "S1",
  "attempted": true,
  "started_at": "2026-06-01T10:00:00Z",
  "ended_at": "2026-06-01T10:10:00Z",
  "seed": 42,
  "tier": "hardening",
  "nodes": 3,
  "clock": "monotonic",
  "workload": {"ops_produced": 10, "planned_rate": 50, "throughput": [{"start_ns": 0, "ops": 50}]},
  "fault_windows": [
    {"fault_epoch": "S1-w1", "nemesis": "leader-isolation", "target": "node-1",
     "scheduled_at_ns": 120000000000, "injected_at_ns": 120004000000, "reverted_at_ns": 165010000000,
     "injector_evidence": {"kind": "iptables_counter", "before": 0, "after": 14712},
     "victim_evidence": {"kind": "metric_delta", "name": "raft_leader_changes_total", "delta": 1},
     "landed": true}
  ],
  "recorder": {"mechanism": "combined"}
}
`

func TestParseRunGood(t *testing.T) {
	r, err := ParseRun("run.json", []byte(goodRun))
	if err != nil {
		t.Fatal(err)
	}
	if r.ID() != "S1" || r.Seed != 42 || r.Duration() != 10*time.Minute || len(r.FaultWindows) != 1 {
		t.Fatalf("decoded %+v", r)
	}
	w := r.FaultWindows[0]
	if *w.InjectedAtNS != 120004000000 || string(w.InjectorEvidence.After) != "14712" || w.AllTargets()[0] != "node-1" {
		t.Fatalf("window %+v", w)
	}
	if r.Line("fault_windows[0].landed") != 17 || r.Line("seed") != 7 {
		t.Fatalf("lines: landed %d seed %d", r.Line("fault_windows[0].landed"), r.Line("seed"))
	}
}

// TestParseRunBad: every malformed or invalid record is a *fileline.Error at the
// line of the offending value.
func TestParseRunBad(t *testing.T) {
	replace := func(old, new string) string {
		if !strings.Contains(goodRun, old) {
			t.Fatalf("fixture lacks %q", old)
		}
		return strings.Replace(goodRun, old, new, 1)
	}
	cases := []struct {
		name, in string
		line     int
		msg      string
	}{
		{"empty", "  \n", 1, "empty run record"},
		{"truncated", goodRun[:200], 10, "unexpected end"},
		{"syntax", replace(`"seed": 42,`, `"seed": 42,,`), 7, "malformed JSON"},
		{"unknown field", replace(`"nodes": 3,`, `"nodes": 3, "colour": "red",`), 9, `unknown field "colour"`},
		{"unknown nested field", replace(`"landed": true}`, `"landed": true, "oops": 1}`), 17, `unknown field "fault_windows[0].oops"`},
		{"wrong type", replace(`"seed": 42`, `"seed": "42"`), 7, "seed: want int64"},
		{"bad time", replace(`"2026-06-01T10:10:00Z"`, `"yesterday"`), 6, "bad RFC 3339 time"},
		{"unknown schema", replace(`"dst-run/1"`, `"dst-run/9"`), 2, `unknown schema "dst-run/9"`},
		{"missing schema", replace(`"schema": "dst-run/1",`, ``), 1, "missing schema"},
		{"bad scenario", replace(`"scenario": "S1"`, `"scenario": "S 1"`), 3, "scenario id"},
		{"arm of another scenario", replace(`"scenario": "S1",`, `"scenario": "S1", "arm": "S2/api",`), 3, "must start with"},
		{"bad clock", replace(`"monotonic"`, `"sundial"`), 10, "clock"},
		{"bad tier", replace(`"hardening"`, `"gold"`), 8, "tier"},
		{"reversed stamps", replace(`10:10:00Z`, `09:00:00Z`), 6, "before started_at"},
		{"negative ops", replace(`"ops_produced": 10`, `"ops_produced": -1`), 11, "ops_produced"},
		{"duplicate epoch", replace(`"landed": true}`, `"landed": true}, {"fault_epoch": "S1-w1", "nemesis": "kill-9"}`), 17, "duplicate fault_epoch"},
		{"window without nemesis", replace(`"nemesis": "leader-isolation", `, ``), 13, "without nemesis"},
		{"reverted before injected", replace(`"reverted_at_ns": 165010000000`, `"reverted_at_ns": 1`), 14, "reverted before"},
		{"bad evidence verdict", replace(`"delta": 1}`, `"delta": 1, "verdict": "maybe"}`), 16, "evidence verdict"},
		{"escaping history path", replace(`"seed": 42,`, `"seed": 42, "history": "../../etc/passwd",`), 7, "inside the artifact dir"},
		{"absolute history path", replace(`"seed": 42,`, `"seed": 42, "history": "/etc/passwd",`), 7, "inside the artifact dir"},
		{"bad recorder", replace(`"combined"`, `"psychic"`), 19, "recorder mechanism"},
		{"trailing data", goodRun + "{}", 21, "trailing data"},
		{"duplicate key", replace(`"seed": 42,`, `"seed": 42, "seed": 43,`), 7, `duplicate field "seed"`},
		{"array root", `[1,2]`, 1, "want session.Run"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseRun("x/run.json", []byte(c.in))
			var e *fileline.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not a *fileline.Error", err)
			}
			if e.File != "x/run.json" || e.Line != c.line || !strings.Contains(e.Reason(), c.msg) {
				t.Fatalf("got %q (line %d), want line %d containing %q", err, e.Line, c.line, c.msg)
			}
			if !strings.HasPrefix(err.Error(), "x/run.json:") {
				t.Fatalf("error %q lacks file:line", err)
			}
		})
	}
}

func TestLoadRunMissing(t *testing.T) {
	_, err := LoadRun(filepath.Join(t.TempDir(), "run.json"))
	var e *fileline.Error
	if !errors.As(err, &e) || e.Line != 0 || !strings.Contains(e.Reason(), "read run record") {
		t.Fatalf("got %v", err)
	}
	// A device never ends: the read is bounded.
	if _, err := LoadRun("/dev/zero"); !errors.Is(err, fileline.ErrTooLarge) || !strings.HasPrefix(err.Error(), "/dev/zero: read run record: file too large") {
		t.Fatalf("/dev/zero: %v", err)
	}
}

func TestRunRoundTrip(t *testing.T) {
	r, err := ParseRun("a", []byte(goodRun))
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := ParseRun("b", data)
	if err != nil {
		t.Fatalf("re-parse of marshalled run: %v\n%s", err, data)
	}
	if r2.Seed != r.Seed || len(r2.FaultWindows) != 1 || r2.Workload.OpsProduced != 10 {
		t.Fatalf("round trip lost data: %+v", r2)
	}
}

func FuzzLoadRun(f *testing.F) {
	f.Add([]byte(goodRun))
	f.Add([]byte(`{"schema":"dst-run/1","scenario":"S1","attempted":false}`))
	f.Add([]byte(`{"schema":"dst-run/1","scenario":"S1","fault_windows":[{"fault_epoch":"a","nemesis":"b","injector_evidence":{"kind":"k","before":{"x":[1]}}}]}`))
	f.Add([]byte(`{"a":`))
	f.Add([]byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRun("fuzz.json", data)
		if err != nil {
			var e *fileline.Error
			if !errors.As(err, &e) || e.Line < 1 || e.File != "fuzz.json" {
				t.Fatalf("error without file:line: %v", err)
			}
			if n := strings.Count(string(data), "\n") + 1; e.Line > n {
				t.Fatalf("line %d beyond the %d lines of the input", e.Line, n)
			}
			return
		}
		if r.Schema != RunSchema || r.Scenario == "" {
			t.Fatalf("accepted an invalid record: %+v", r)
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseRun("again.json", out); err != nil {
			t.Fatalf("accepted record does not re-parse: %v", err)
		}
	})
}

func TestRunFilesAndPaths(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"artifacts/S1/run.json", "artifacts/S1/run-seed-7.json", "artifacts/S4/api/run.json",
		"artifacts/S1/history.jsonl", "artifacts/S1/runner.json", "benchmark/S2/run.json"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, err := RunFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var rel []string
	for _, f := range files {
		r, _ := filepath.Rel(dir, f)
		rel = append(rel, filepath.ToSlash(r))
	}
	want := "artifacts/S1/run-seed-7.json artifacts/S1/run.json artifacts/S4/api/run.json benchmark/S2/run.json"
	if strings.Join(rel, " ") != want {
		t.Fatalf("RunFiles = %v, want %s", rel, want)
	}
	seed := &Run{Path: filepath.Join(dir, "artifacts/S1/run-seed-7.json")}
	if got := HistoryPath(seed); filepath.Base(got) != "history-seed-7.jsonl" {
		t.Errorf("HistoryPath = %s", got)
	}
	if got := FinalPath(seed); filepath.Base(got) != "final-seed-7.json" {
		t.Errorf("FinalPath = %s", got)
	}
	plain := &Run{Path: filepath.Join(dir, "artifacts/S1/run.json"), History: "h/ops.jsonl"}
	if got := HistoryPath(plain); got != filepath.Join(dir, "artifacts/S1/h/ops.jsonl") {
		t.Errorf("HistoryPath override = %s", got)
	}
}

func TestFindAndPrevious(t *testing.T) {
	root := t.TempDir()
	mk := func(p string) string {
		d := filepath.Join(root, p)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	a1 := mk("kv/20260101T000000Z")
	a2 := mk("kv/20260301T000000Z")
	b1 := mk("other/20260201T000000Z")
	mk("kv/notes")
	got, err := Find(root)
	if err != nil || got != a2 {
		t.Fatalf("Find(root) = %q, %v; want %q", got, err, a2)
	}
	if got, _ := Find(filepath.Join(root, "other")); got != b1 {
		t.Fatalf("Find(slug dir) = %q", got)
	}
	if got, _ := Find(a1); got != a1 {
		t.Fatalf("Find(session) = %q", got)
	}
	if prev, _ := Previous(a2); prev != a1 {
		t.Fatalf("Previous(a2) = %q", prev)
	}
	if prev, _ := Previous(a1); prev != "" {
		t.Fatalf("Previous(a1) = %q", prev)
	}
	// real-env-test runs
	r1 := mk("results/run_20260101_120000")
	r2 := mk("results/run_20260102_120000")
	if got, _ := Find(filepath.Join(root, "results")); got != r2 {
		t.Fatalf("Find(results) = %q", got)
	}
	if prev, _ := Previous(r2); prev != r1 {
		t.Fatalf("Previous(run) = %q", prev)
	}
	if _, err := Find(filepath.Join(root, "kv", "notes")); err == nil {
		t.Fatal("a dir without sessions must be an error")
	}
	if _, err := Find(filepath.Join(root, "missing")); err == nil {
		t.Fatal("a missing dir must be an error")
	}
	if d := NewDir("testing/results", "kv", time.Date(2026, 5, 4, 3, 2, 1, 0, time.FixedZone("x", 3600))); d != filepath.Join("testing/results", "kv", "20260504T020201Z") {
		t.Fatalf("newDir = %s", d)
	}
}

func TestReadHeader(t *testing.T) {
	dir := t.TempDir()
	log := "# Session log: kv @ 20260101T000000Z\n\n**SUT:** kv\n**Plan:** `docs/plan.md`\n**Commit under test:** abc123\n**Operator:** agent\n\n## Toolbox discovered\n**Plan:** not-this\n"
	if err := os.WriteFile(filepath.Join(dir, SessionLog), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := ReadHeader(dir)
	if err != nil || h.Plan != "docs/plan.md" || h.Commit != "abc123" || h.SUT != "kv" || h.Title != "Session log: kv @ 20260101T000000Z" {
		t.Fatalf("header %+v, %v", h, err)
	}
	if _, err := ReadHeader(t.TempDir()); err == nil {
		t.Fatal("missing session log must be an error")
	}
}

func FuzzParseHeader(f *testing.F) {
	f.Add("# Session log: kv @ 20260101T000000Z\n**Plan:** `p.md`\n**Commit under test:** abc\n## Toolbox\n")
	f.Add("**Plan:**\n\n\n")
	f.Add(strings.Repeat("x", 70000) + "\n**Plan:** a\n")
	f.Fuzz(func(t *testing.T, in string) {
		h, err := parseHeader(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, v := range []string{h.Plan, h.Commit, h.SUT, h.Operator, h.SessionDir} {
			if strings.Contains(v, "\n") {
				t.Fatalf("header value spans lines: %q", v)
			}
		}
	})
}

// bench:start takes any RUN_ID, so a collected run_<RUN_ID> that is not a
// timestamp is found too (by age), but only when it holds results.
func TestFindRunWithPlainRunID(t *testing.T) {
	root := t.TempDir()
	mk := func(rel string, age time.Duration) string {
		d := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Join(d, BenchmarkDir), 0o755); err != nil {
			t.Fatal(err)
		}
		when := time.Now().Add(-age)
		if err := os.Chtimes(d, when, when); err != nil {
			t.Fatal(err)
		}
		return d
	}
	mk("run_r1", 2*time.Hour)
	r2 := mk("run_r2", time.Hour)
	if err := os.MkdirAll(filepath.Join(root, "run_empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := Find(root)
	if err != nil || got != r2 {
		t.Fatalf("Find = %q, %v; want the newer run_r2 %q", got, err, r2)
	}
}

func TestRunFileNames(t *testing.T) {
	for _, tc := range []struct {
		seed          int64
		multi         bool
		run, hist, fs string
	}{
		{7, false, "run.json", "history.jsonl", "final.json"},
		{7, true, "run-seed-7.json", "history-seed-7.jsonl", "final-seed-7.json"},
	} {
		run := RunFileName(tc.seed, tc.multi)
		if run != tc.run || HistoryName(run) != tc.hist || FinalName(run) != tc.fs {
			t.Errorf("seed %d multi %v: %s %s %s", tc.seed, tc.multi, run, HistoryName(run), FinalName(run))
		}
	}
}
