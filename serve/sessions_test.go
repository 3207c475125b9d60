package serve

import (
	"io/fs"
	"reflect"
	"testing"
	"testing/fstest"
	"time"
)

const analyzeBound = 60 * time.Second

func report(schema, slug, verdict string, scen ...string) *fstest.MapFile {
	js := `{"schema":"` + schema + `","plan_slug":"` + slug + `","session_verdict":"` + verdict + `","verdict":"` + verdict + `","headline":"h ` + verdict + `","scenarios":[`
	for i := 0; i+1 < len(scen); i += 2 {
		if i > 0 {
			js += ","
		}
		js += `{"id":"` + scen[i] + `","verdict":"` + scen[i+1] + `"}`
	}
	return &fstest.MapFile{Data: []byte(js + `]}`)}
}

func TestListFindsSessionsNewestFirst(t *testing.T) {
	dir := &fstest.MapFile{Mode: fs.ModeDir | 0o755}
	mtime := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		fsys fstest.MapFS
		want []Session
	}{
		{"plan sessions and runs, newest first, not analyzed kept", fstest.MapFS{
			"p1/20260601T100000Z/findings/report.json": report("dst-report/1", "p1", "DONE", "S1", "PASS-smoke"),
			"p1/20260603T100000Z/session-log.md":       {Data: []byte("x")},
			"p2/20260602T100000Z/findings/report.json": report("dst-report/1", "p2", "FAIL", "S1", "FAIL-reproducible", "S2", "NOT-RUN"),
			"run_20260604_000000/benchmark/b.json":     {Data: []byte("{}")},
			"notes/readme.txt":                         {Data: []byte("not a session")},
		}, []Session{
			{Rel: "run_20260604_000000", Plan: "real-env-test", Time: time.Date(2026, 6, 4, 0, 0, 0, 0, time.UTC), Verdict: NotAnalyzed},
			{Rel: "p1/20260603T100000Z", Plan: "p1", Time: time.Date(2026, 6, 3, 10, 0, 0, 0, time.UTC), Verdict: NotAnalyzed},
			{Rel: "p2/20260602T100000Z", Plan: "p2", Time: time.Date(2026, 6, 2, 10, 0, 0, 0, time.UTC), Analyzed: true, Verdict: "FAIL", Headline: "h FAIL",
				Scenarios: []Badge{{"S1", "FAIL-reproducible"}, {"S2", "NOT-RUN"}}},
			{Rel: "p1/20260601T100000Z", Plan: "p1", Time: time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC), Analyzed: true, Verdict: "DONE", Headline: "h DONE",
				Scenarios: []Badge{{"S1", "PASS-smoke"}}},
		}},
		{"RESULTS is itself a session", fstest.MapFS{
			".":                    {Mode: dir.Mode, ModTime: mtime},
			"session-log.md":       {Data: []byte("x")},
			"findings/report.json": report("dst-report/1", "solo", "INCONCLUSIVE"),
		}, []Session{{Rel: ".", Plan: "solo", Time: mtime, Analyzed: true, Verdict: "INCONCLUSIVE", Headline: "h INCONCLUSIVE"}}},
		{"a run_<RUN_ID> that is no stamp is dated by its mtime; benchmark report", fstest.MapFS{
			"run_smoke":                      {Mode: dir.Mode, ModTime: mtime},
			"run_smoke/benchmark/b.json":     {Data: []byte("{}")},
			"run_smoke/findings/report.json": report("dst-benchrun/1", "", "pass"),
			"run_other":                      {Mode: dir.Mode, ModTime: mtime},
		}, []Session{{Rel: "run_smoke", Plan: "benchmark", Time: mtime, Analyzed: true, Verdict: "pass", Headline: "h pass"}}},
		{"unreadable report is not analyzed, with the reason", fstest.MapFS{
			"p/20260601T100000Z/findings/report.json": {Data: []byte("{garbage")},
			"q/20260602T100000Z/findings/report.json": report("other/9", "q", "DONE"),
		}, []Session{
			{Rel: "q/20260602T100000Z", Plan: "q", Time: time.Date(2026, 6, 2, 10, 0, 0, 0, time.UTC), Verdict: NotAnalyzed,
				Problem: `findings/report.json: unknown schema "other/9" (want dst-report/1 or dst-benchrun/1)`},
			{Rel: "p/20260601T100000Z", Plan: "p", Time: time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC), Verdict: NotAnalyzed,
				Problem: "findings/report.json: invalid character 'g' looking for beginning of object key string"},
		}},
		{"empty RESULTS", fstest.MapFS{}, []Session{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := List(c.fsys)
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("List:\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestFilterMatchesPlanAndSessionOrScenarioVerdict(t *testing.T) {
	done := Session{Plan: "p1", Verdict: "DONE", Scenarios: []Badge{{"S1", "PASS-smoke"}}}
	fail := Session{Plan: "p2", Verdict: "FAIL", Scenarios: []Badge{{"S1", "FAIL-reproducible"}, {"S2", "PASS-smoke"}}}
	raw := Session{Plan: "p1", Verdict: NotAnalyzed}
	all := []Session{done, fail, raw}
	cases := []struct {
		f    Filter
		want []Session
	}{
		{Filter{}, all},
		{Filter{Plan: "p1"}, []Session{done, raw}},
		{Filter{Verdict: "FAIL"}, []Session{fail}},
		{Filter{Verdict: "PASS-smoke"}, []Session{done, fail}},
		{Filter{Plan: "p1", Verdict: "PASS-smoke"}, []Session{done}},
		{Filter{Verdict: NotAnalyzed}, []Session{raw}},
		{Filter{Plan: "nope"}, nil},
		{Filter{Verdict: "pass-smoke"}, nil}, // exact, as the form offers them
	}
	for _, c := range cases {
		if got := c.f.Apply(all); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%+v.Apply = %+v, want %+v", c.f, got, c.want)
		}
	}
}

func TestBadgeClassColoursEveryVerdict(t *testing.T) {
	cases := map[string]string{
		"DONE": "pass", "PASS-smoke": "pass", "PASS-hardening": "pass", "pass": "pass",
		"FAIL": "fail", "FAIL-reproducible": "fail", "FAIL-nondeterministic": "fail", "fail": "fail",
		"DONE_WITH_CONCERNS": "part", "INCONCLUSIVE": "inc", "BLOCKED": "inc", "inconclusive": "inc",
		"PARTIAL-surface": "part", "PARTIAL-model": "part", "INCONCLUSIVE-env": "inc", "INCONCLUSIVE-oracle-too-weak": "inc", "INCONCLUSIVE-fault-not-proven": "inc",
		NotAnalyzed: "none", "NOT-RUN": "none", "whatever": "none",
	}
	for v, want := range cases {
		if got := badgeClass(v); got != want {
			t.Errorf("badgeClass(%q) = %q, want %q", v, got, want)
		}
	}
	for _, v := range verdictsOf() {
		if badgeClass(v) == "" {
			t.Errorf("verdict %q has no class", v)
		}
	}
}
