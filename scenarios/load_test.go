package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/internal/fileline"
)

// minimal is a valid file; the error cases below edit one line of it, so
// each names the line it breaks. Line numbers are 1-based:
//
//	1 version  5 name  9 faults item  10 targets  11 at  12 for
const minimal = `version: 1
plan: ""
scenarios:
  - id: S1
    name: n
    workload:
      command: run
      duration_s: 60
    faults:
      - nemesis: kill-9
        targets: leader
        at: 30s
        for: 0s
    oracle:
      model: register
      timeout_s: 300
`

func edit(old, new string) string {
	if !strings.Contains(minimal, old) {
		panic("edit: " + old + " not in minimal")
	}
	return strings.Replace(minimal, old, new, 1)
}

func TestParseMinimal(t *testing.T) {
	f, err := Parse("scenarios.yml", []byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Scenarios) != 1 || f.Scenarios[0].Line != 4 || f.Scenarios[0].Faults[0].Line != 10 || f.Path != "scenarios.yml" {
		t.Errorf("got %+v", f)
	}
}

// TestParseErrors: each bad input is one *fileline.Error at the line of
// the offending node, with a reason saying what is wanted.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", "scenarios.yml:1: empty file; want version: 1 and scenarios:"},
		{"comment only", "# nothing\n", "scenarios.yml:1: empty file; want version: 1 and scenarios:"},
		{"top level list", "- a\n", "scenarios.yml:1: top level: want a mapping"},
		{"two documents", minimal + "---\nversion: 1\n", "scenarios.yml:17: a second YAML document; scenarios.yml holds one"},
		{"unclosed flow", edit("    name: n\n", "    name: [n\n"), "scenarios.yml:5: unclosed flow sequence (yaml then failed at line 6: did not find expected ',' or ']')"},
		{"unclosed quote", edit("    name: n\n", "    name: \"n\n"), "scenarios.yml:5: unclosed quoted scalar (yaml then failed at line 17: found unexpected end of stream)"},
		{"bad indent", edit("    name: n\n", "   name: n\n"), "scenarios.yml:5: did not find expected '-' indicator (while parsing a block collection at line 4)"},
		{"version missing", edit("version: 1\n", "\n"), "scenarios.yml:2: version: missing; want version: 1"},
		{"version 2", edit("version: 1", "version: 2"), "scenarios.yml:1: version 2: want 1 (the only schema version)"},
		{"version text", edit("version: 1", "version: one"), `scenarios.yml:1: version "one": want a whole number`},
		{"unknown top key", edit("plan: \"\"", "plann: x"), `scenarios.yml:2: unknown key "plann"; known keys: version, plan, plan_sha256, scenarios`},
		{"unknown scenario key", edit("    name: n", "    nmae: n"), `scenarios.yml:5: unknown key "S1.nmae"`},
		{"unknown fault key", edit("        for: 0s", "        fro: 0s"), `scenarios.yml:13: unknown key "S1.faults[0].fro"`},
		{"duplicate key", edit("    name: n", "    name: n\n    name: m"), "scenarios.yml:6: S1.name: duplicate key"},
		{"scenarios not a list", "version: 1\nscenarios: 3\n", "scenarios.yml:2: scenarios: want a list"},
		{"bad at", edit("at: 30s", "at: 3x"), `scenarios.yml:12: S1.faults[0].at "3x": want a duration like 30s or 1m30s`},
		{"negative at", edit("at: 30s", "at: -5s"), `scenarios.yml:12: S1.faults[0].at "-5s": want a duration ≥ 0`},
		{"negative bare at", edit("at: 30s", "at: -5"), `scenarios.yml:12: S1.faults[0].at "-5": want seconds between 0 and 2592000`},
		{"missing for", edit("        for: 0s\n", ""), "scenarios.yml:10: S1.faults[0].for is missing: want a duration like 30s or 1m30s"},
		{"bad every", edit("for: 0s", "for: 0s\n        every: soon"), `scenarios.yml:14: S1.faults[0].every "soon": want a duration like 30s or 1m30s`},
		{"bad jitter", edit("for: 0s", "for: 0s\n        jitter: 1d"), `scenarios.yml:14: S1.faults[0].jitter "1d": want a duration like 30s or 1m30s`},
		{"negative times", edit("for: 0s", "for: 0s\n        times: -1"), "scenarios.yml:14: S1.faults[0].times -1: want ≥ 0"},
		{"times without every", edit("for: 0s", "for: 0s\n        times: 3"), "scenarios.yml:14: S1.faults[0].times 3: repeated windows need every:"},
		{"times not a number", edit("for: 0s", "for: 0s\n        times: many"), `scenarios.yml:14: S1.faults[0].times "many": want a whole number`},
		{"overlapping windows", edit("for: 0s", "for: 90s\n        every: 60s"), `scenarios.yml:13: S1.faults[0].for "90s" is longer than every "60s": the windows would overlap`},
		{"nemesis missing", edit("      - nemesis: kill-9\n        targets", "      - targets"), "scenarios.yml:10: S1.faults[0].nemesis is missing"},
		{"custom without inject", edit("nemesis: kill-9", "nemesis: custom"), "scenarios.yml:10: S1.faults[0].custom nemesis custom needs custom: {inject"},
		{"custom block without inject", edit("for: 0s", "for: 0s\n        custom: {heal: x}"), "scenarios.yml:14: S1.faults[0].custom.inject is missing"},
		{"landing expect", edit("for: 0s", "for: 0s\n        landing:\n          expect: up"), `scenarios.yml:15: S1.faults[0].landing.expect "up": want rise, fall, change`},
		{"landing within", edit("for: 0s", "for: 0s\n        landing: {within: later}"), `scenarios.yml:14: S1.faults[0].landing.within "later": want a duration`},
		{"landing log regexp", edit("for: 0s", "for: 0s\n        landing: {log: \"(unclosed\"}"), `scenarios.yml:14: S1.faults[0].landing.log "(unclosed" is not a regular expression`},
		{"landing unknown key", edit("for: 0s", "for: 0s\n        landing: {lgo: x}"), `scenarios.yml:14: unknown key "S1.faults[0].landing.lgo"`},
		{"params not a map", edit("for: 0s", "for: 0s\n        params: [a]"), "scenarios.yml:14: S1.faults[0].params: want a mapping"},
		{"params nested", edit("for: 0s", "for: 0s\n        params: {a: {b: c}}"), "scenarios.yml:14: S1.faults[0].params.a: want a string"},
		{"empty id", edit("  - id: S1", "  - id: \"\""), "scenarios.yml:4: scenarios[0]: id is missing or empty"},
		{"slash in id", edit("  - id: S1", "  - id: S1/x"), `scenarios.yml:4: id "S1/x": a scenario id has no '/'`},
		{"duplicate id", minimal + "  - id: S1\n    name: again\n", `scenarios.yml:17: id "S1" is used twice (first at line 4)`},
		{"arm id outside its scenario", edit("    name: n", "    name: n\n    arms:\n      - id: S2/api"), `scenarios.yml:7: S1.arms[0].id "S2/api": want S1/<arm>`},
		{"duplicate arm", edit("    name: n", "    name: n\n    arms:\n      - id: S1/api\n      - id: S1/api"), `scenarios.yml:8: id "S1/api" is used twice (first at line 7)`},
		{"unknown tier", edit("    name: n", "    name: n\n    tiers:\n      nightly: {text: x}"), "scenarios.yml:7: S1.tiers.nightly is not a tier: want smoke, hardening, release"},
		{"fractional seeds", edit("    name: n", "    name: n\n    tiers:\n      smoke: {text: x, seeds: 1.5}"), "scenarios.yml:7: S1.tiers.smoke.seeds 1.5: want a whole number ≥ 1"},
		{"negative tier duration", edit("    name: n", "    name: n\n    tiers:\n      smoke: {text: x, duration_s: -1}"), "scenarios.yml:7: S1.tiers.smoke.duration_s -1: want a number ≥ 0"},
		{"zero workload duration", edit("duration_s: 60", "duration_s: 0"), "scenarios.yml:8: S1.workload.duration_s 0: want seconds > 0"},
		{"negative rate", edit("duration_s: 60", "duration_s: 60\n      rate: -3"), "scenarios.yml:9: S1.workload.rate -3: want a number ≥ 0"},
		{"rate text", edit("duration_s: 60", "duration_s: 60\n      rate: fast"), `scenarios.yml:9: S1.workload.rate "fast": want a number`},
		{"negative timeout_s", edit("timeout_s: 300", "timeout_s: -1"), "scenarios.yml:16: S1.oracle.timeout_s -1: want ≥ 0"},
		{"quiesce without command", edit("    name: n", "    name: n\n    quiesce: {timeout: 30s}"), "scenarios.yml:6: S1.quiesce.command is missing"},
		{"quiesce timeout", edit("    name: n", "    name: n\n    quiesce: {command: x, timeout: long}"), `scenarios.yml:6: S1.quiesce.timeout "long": want a duration`},
		{"serious not bool", edit("    name: n", "    name: n\n    serious: maybe"), `scenarios.yml:6: S1.serious "maybe": want true or false`},
		{"command a list", edit("command: run", "command: [run]"), "scenarios.yml:7: S1.workload.command: want a string"},
		{"alias without anchor", edit("command: run", "command: *nope"), "scenarios.yml:7:"},
		{"long value cut short", edit("at: 30s", "at: "+strings.Repeat("x", 500)), `scenarios.yml:12: S1.faults[0].at "` + strings.Repeat("x", 60) + `…": want a duration`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("scenarios.yml", []byte(tc.in))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			var fe *fileline.Error
			if !errors.As(err, &fe) || fe.Line < 1 {
				t.Errorf("error %q (%T) is not a fileline error with a line", err, err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error\n  %s\nwant prefix\n  %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is more than one line: %q", err)
			}
		})
	}
}

// TestParseAccepts: what the schema allows, incl. YAML numbers for times,
// TODO values in any field, null optional fields and aliases.
func TestParseAccepts(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"bare seconds", edit("at: 30s", "at: 30")},
		{"fractional seconds", edit("at: 30s", "at: 1.5")},
		{"compound duration", edit("at: 30s", "at: 1m30s")},
		{"todo time", edit("at: 30s", `at: "TODO(S1.faults[0].at): the plan's Faults text does not say"`)},
		{"todo nemesis", edit("nemesis: kill-9", `nemesis: "TODO(S1.faults[0].nemesis): name one"`)},
		{"todo every with times", edit("for: 0s", "for: 0s\n        times: 5\n        every: \"TODO(S1.faults[0].every): how often\"")},
		{"null optional", edit("    name: n", "    name: n\n    quiesce: null\n    arms: null")},
		{"empty faults", edit("    faults:\n      - nemesis: kill-9\n        targets: leader\n        at: 30s\n        for: 0s\n", "    faults: []\n")},
		{"alias", edit("command: run", "command: &c run\n      host: *c")},
		{"custom on another nemesis", edit("for: 0s", "for: 0s\n        custom: {inject: upgrade.sh}")},
		{"windows back to back", edit("for: 0s", "for: 60s\n        every: 60s\n        times: 3")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse("scenarios.yml", []byte(tc.in)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestParseAliasBomb: aliases of lists of aliases stand for far more
// values than the file holds; the decoder stops at its bound with a line
// instead of walking them all.
func TestParseAliasBomb(t *testing.T) {
	var c strings.Builder
	c.WriteString("version: 1\nscenarios:\n  - id: S0\n    faults: &fs\n")
	c.WriteString("      - &f {nemesis: kill-9, at: 1s, for: 0s, params: {a: b, c: d}}\n")
	for range 2000 {
		c.WriteString("      - *f\n")
	}
	for i := range 2000 {
		c.WriteString("  - {id: T" + strconv.Itoa(i) + ", faults: *fs}\n")
	}
	// 2000 scenarios each aliasing the 2001 faults of S0: ~4M faults
	// from a file of under 100 kB.
	_, err := Parse("scenarios.yml", []byte(c.String()))
	if err == nil || !strings.Contains(err.Error(), "more than 200000 values") {
		t.Fatalf("got %v", err)
	}
}

func TestLoadFull(t *testing.T) {
	f, err := Load("testdata/full.yml")
	if err != nil {
		t.Fatal(err)
	}
	s := f.Scenarios[0]
	if s.Line != 6 || s.LeaderQuery == "" || s.FinalState != "etcd-driver -final" || s.Workload.Host != "role:client" {
		t.Errorf("S1 = %+v", s)
	}
	if q := s.Quiesce; q == nil || !q.All || q.Timeout != "30s" {
		t.Errorf("quiesce = %+v", q)
	}
	f0, f1 := s.Faults[0], s.Faults[1]
	if f0.Line != 43 || f0.Jitter != "5" || f0.Params["hook"] != "INPUT" || f0.Landing == nil || !f0.Landing.LeaderChange || f0.Landing.Within != "10s" {
		t.Errorf("fault 0 = %+v (landing %+v)", f0, f0.Landing)
	}
	if f1.At != "100" || f1.Custom == nil || f1.Custom.Evidence == "" || f1.Landing.Expect != "change" || !f1.Landing.History {
		t.Errorf("fault 1 = %+v", f1)
	}
	if a := f.Scenarios[1].Arms[0]; a.Workload != "api-driver" || a.Oracle.History != "artifacts/S4/api/history.jsonl" {
		t.Errorf("arm = %+v", a)
	}
	if tr := s.Tiers["release"]; !tr.NotProvided || tr.DurationS != nil {
		t.Errorf("release = %+v", tr)
	}
}

func TestLoadBounded(t *testing.T) {
	if _, err := Load("/dev/zero"); !errors.Is(err, fileline.ErrTooLarge) {
		t.Errorf("Load(/dev/zero) = %v, want ErrTooLarge", err)
	}
	missing := filepath.Join(t.TempDir(), "nope.yml")
	_, err := Load(missing)
	var fe *fileline.Error
	if !errors.As(err, &fe) || fe.File != missing || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want a fileline error wrapping ErrNotExist", err)
	}
}

// TestGeneratedGoldensParse: every scenarios.yml `dstgen init` renders in
// the generator's golden trees loads cleanly (the generator's own tests
// hold freshly rendered files to the same loader).
func TestGeneratedGoldensParse(t *testing.T) {
	paths, err := filepath.Glob("../generator/testdata/golden/*/scenarios.yml")
	if err != nil || len(paths) < 5 {
		t.Fatalf("golden scenarios.yml files: %v, %v", paths, err)
	}
	for _, p := range paths {
		f, err := Load(p)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, u := range f.All() {
			got, err := f.Select(u.ID())
			if err != nil || len(got) == 0 {
				t.Errorf("%s: Select(%s) = %v, %v", p, u.ID(), got, err)
			}
		}
	}
}

func TestParseSeconds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"30s", 30 * time.Second, ""},
		{"1m30s", 90 * time.Second, ""},
		{"45", 45 * time.Second, ""},
		{"0s", 0, ""},
		{"0", 0, ""},
		{" 2.5 ", 2500 * time.Millisecond, ""},
		{"250ms", 250 * time.Millisecond, ""},
		{"720h", 720 * time.Hour, ""},
		{"", 0, "want a duration like 30s or 1m30s"},
		{"3x", 0, "want a duration like 30s or 1m30s"},
		{"0x10", 0, "want a duration like 30s or 1m30s"},
		{"1_0", 0, "want a duration like 30s or 1m30s"},
		{"-1s", 0, "want a duration ≥ 0"},
		{"-1", 0, "want seconds between 0 and 2592000"},
		{"NaN", 0, "want seconds between 0 and 2592000"},
		{"Inf", 0, "want seconds between 0 and 2592000"},
		{"1e300", 0, "want seconds between 0 and 2592000"},
		{"721h", 0, "longer than 720h0m0s"},
		{"9999999999h", 0, "want a duration like 30s or 1m30s"},
	} {
		got, err := ParseSeconds(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseSeconds(%q) = %v, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSeconds(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
