package scenarios

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/internal/fileline"
)

func loadFull(t *testing.T) *File {
	t.Helper()
	f, err := Load("testdata/full.yml")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func ids(us []Unit) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.ID())
	}
	return out
}

func TestSelect(t *testing.T) {
	f := loadFull(t)
	for _, tc := range []struct {
		id   string
		want []string
		err  string
	}{
		{"S1", []string{"S1"}, ""},
		{"S4", []string{"S4/api", "S4/cli"}, ""}, // a scenario with arms is its arms, in order
		{"S4/cli", []string{"S4/cli"}, ""},
		{"S9", nil, `testdata/full.yml: unknown scenario id "S9"; known ids: S1, S4 (arms S4/api, S4/cli)`},
		{"s1", nil, `unknown scenario id "s1"`},
		{"S4/", nil, `unknown scenario id "S4/"`},
		{"", nil, `unknown scenario id ""`},
	} {
		got, err := f.Select(tc.id)
		if tc.err != "" {
			var fe *fileline.Error
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &fe) {
				t.Errorf("Select(%q) = %v, %v; want error containing %q", tc.id, ids(got), err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(ids(got), tc.want) {
			t.Errorf("Select(%q) = %v, %v; want %v", tc.id, ids(got), err, tc.want)
		}
	}
	// An arm unit points into the file's own scenario, not a copy.
	got, _ := f.Select("S4/api")
	if got[0].Scenario != &f.Scenarios[1] || got[0].Arm != &f.Scenarios[1].Arms[0] {
		t.Errorf("Select(S4/api) does not point into the file")
	}
}

func TestSelectUnknownListIsBounded(t *testing.T) {
	f := &File{}
	for i := range 100 {
		f.Scenarios = append(f.Scenarios, Scenario{ID: "S" + strings.Repeat("x", i%3) + string(rune('a'+i%26))})
	}
	_, err := f.Select("nope")
	if err == nil || !strings.Contains(err.Error(), "(70 more)") {
		t.Errorf("Select on 100 scenarios: %v; want the list cut at %d", err, maxListedIDs)
	}
	if _, err := (&File{}).Select("S1"); err == nil || !strings.Contains(err.Error(), "none (the file has no scenarios)") {
		t.Errorf("Select on an empty file: %v", err)
	}
}

func TestAll(t *testing.T) {
	f := loadFull(t)
	if got := ids(f.All()); !reflect.DeepEqual(got, []string{"S1", "S4/api", "S4/cli"}) {
		t.Errorf("All = %v", got)
	}
	if got := (&File{}).All(); len(got) != 0 {
		t.Errorf("All of an empty file = %v", got)
	}
}

func TestUnitCommand(t *testing.T) {
	f := loadFull(t)
	for _, tc := range []struct{ id, want string }{
		{"S1", "etcd-driver -consistency l"},
		{"S4/api", "api-driver"},                                                 // the arm's own
		{"S4/cli", "TODO(S4.workload.command): command that runs this workload"}, // the scenario's
	} {
		us, err := f.Select(tc.id)
		if err != nil || us[0].Command() != tc.want {
			t.Errorf("%s command = %q, %v; want %q", tc.id, us[0].Command(), err, tc.want)
		}
	}
}

func TestTODOs(t *testing.T) {
	f := loadFull(t)
	var got []string
	for _, err := range f.TODOs() {
		var fe *fileline.Error
		var td *TODO
		if !errors.As(err, &fe) || !errors.As(err, &td) {
			t.Fatalf("%v is not a fileline error wrapping *TODO", err)
		}
		got = append(got, strings.Join([]string{fe.File, strconv.Itoa(fe.Line), td.Path}, ":"))
	}
	want := []string{
		"testdata/full.yml:88:S4.tiers.smoke.text",
		"testdata/full.yml:95:S4.workload.command",
		"testdata/full.yml:120:S4/cli.oracle.checker",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("TODOs = %v\nwant %v", got, want)
	}
	if e := f.TODOs()[1].Error(); e != "testdata/full.yml:95: S4.workload.command is still a TODO: TODO(S4.workload.command): command that runs this workload" {
		t.Errorf("message = %q", e)
	}
	if n := len(f.TODOsOf("S1")); n != 0 {
		t.Errorf("TODOsOf(S1) = %d, want 0", n)
	}
	if n := len(f.TODOsOf("S4")); n != 3 {
		t.Errorf("TODOsOf(S4) = %d, want 3", n)
	}
	if n := len(f.TODOsOf("S4/api")); n != 3 {
		t.Errorf("TODOsOf(S4/api) = %d, want its scenario's 3", n)
	}
	if n := len(f.TODOsOf("S9")); n != 0 {
		t.Errorf("TODOsOf(S9) = %d, want 0", n)
	}
}

// TestTODOsEverywhere: a TODO in any string (top level, a list item, a
// map value, a nested struct) is found, in file order.
func TestTODOsEverywhere(t *testing.T) {
	in := `version: 1
plan: "TODO(plan): which plan"
scenarios:
  - id: S1
    falsifies: ["TODO(S1.falsifies)"]
    faults:
      - nemesis: kill-9
        targets: "  TODO(S1.faults[0].targets): who"
        at: 1s
        for: 0s
        params: {signal: "TODO(S1.signal)"}
        landing: {log: "TODO(S1.landing.log)"}
`
	f, err := Parse("x.yml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, e := range f.TODOs() {
		var fe *fileline.Error
		errors.As(e, &fe)
		lines = append(lines, fe.Line)
	}
	if !reflect.DeepEqual(lines, []int{2, 5, 8, 11, 12}) {
		t.Errorf("TODO lines = %v", lines)
	}
	if n := len(f.TODOsOf("S1")); n != 4 {
		t.Errorf("TODOsOf(S1) = %d, want 4 (the top-level plan TODO is not the scenario's)", n)
	}
	if n := len((&File{}).TODOs()); n != 0 {
		t.Errorf("hand-made File TODOs = %d", n)
	}
}

func TestDuration(t *testing.T) {
	f := loadFull(t)
	s1, s4 := &f.Scenarios[0], &f.Scenarios[1]
	for _, tc := range []struct {
		s    *Scenario
		tier string
		want time.Duration
		err  string
	}{
		{s1, "smoke", 60 * time.Second, ""},
		{s1, "hardening", 10 * time.Minute, ""},
		{s1, "release", 0, "testdata/full.yml:6: S1 tiers.release is not provided (one rack): set workload.duration_s or run another tier"},
		{s1, "nightly", 0, `testdata/full.yml:6: S1 has no tier "nightly": set workload.duration_s or tiers.nightly.duration_s`},
		{s4, "smoke", 2 * time.Minute, ""}, // workload.duration_s wins over the tier
		{s4, "release", 2 * time.Minute, ""},
	} {
		got, err := tc.s.Duration(tc.tier)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s.Duration(%s) = %v, %v; want %q", tc.s.ID, tc.tier, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s.Duration(%s) = %v, %v; want %v", tc.s.ID, tc.tier, got, err, tc.want)
		}
	}
	noLen := &Scenario{ID: "S2", Tiers: map[string]Tier{"smoke": {Text: "3 nodes"}}}
	if _, err := noLen.Duration("smoke"); err == nil || err.Error() != "scenarios.yml: S2 states no run length for tier smoke: set workload.duration_s or tiers.smoke.duration_s" {
		t.Errorf("no run length: %v", err)
	}
}

func TestSeeds(t *testing.T) {
	f := loadFull(t)
	s1 := &f.Scenarios[0]
	for _, tc := range []struct {
		tier string
		want int
	}{{"smoke", 1}, {"hardening", 3}, {"release", 1}, {"nightly", 1}} {
		if got := s1.Seeds(tc.tier); got != tc.want {
			t.Errorf("Seeds(%s) = %d, want %d", tc.tier, got, tc.want)
		}
	}
}
