package generator

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/dstgen/dstgen/plan"
)

// TestFixturePlansLintClean: every plan shipped with a fixture SUT or the
// etcd example parses and lints with no errors and no warnings, and has the
// shape its SUT's tests rely on (serious scenarios with a full §7.M, the
// sentinel elsewhere, at least one release "not provided" disclosure).
func TestFixturePlansLintClean(t *testing.T) {
	tests := []struct {
		path      string
		scenarios []string
		serious   []string // scenarios with a §7.M block
		notProv   []string // scenarios whose release budget is "not provided"
		models    map[string]string
	}{
		{"testdata/sut/goservice/docs/testing-plans/tallyd-ledger-guarantees.md",
			[]string{"S1", "S2", "S3"}, []string{"S1"}, []string{"S1"}, map[string]string{"S1": "ledger"}},
		{"testdata/sut/rustservice/docs/testing-plans/ringlog-ordering-and-durability.md",
			[]string{"S1", "S2", "S3"}, []string{"S1", "S2"}, []string{"S2"}, map[string]string{"S1": "log", "S2": "log"}},
		{"testdata/sut/chaostoolbox/docs/testing-plans/lockd-mutual-exclusion.md",
			[]string{"S1", "S2"}, []string{"S1"}, []string{"S2"}, map[string]string{"S1": "lock"}},
		{"../examples/etcd/docs/testing-plans/etcd-kv-guarantees.md",
			[]string{"S1", "S2", "S3"}, []string{"S1", "S2"}, []string{"S2"}, map[string]string{"S1": "register", "S2": "map"}},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			p, err := plan.Parse(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			for _, pr := range plan.Lint(p) {
				t.Errorf("lint: %s", pr)
			}
			var ids, serious, notProv []string
			for _, s := range p.Scenarios {
				ids = append(ids, s.ID)
				if s.M != nil {
					serious = append(serious, s.ID)
					if s.M.Model != tc.models[s.ID] {
						t.Errorf("%s model = %q, want %q", s.ID, s.M.Model, tc.models[s.ID])
					}
				} else if !s.MNotApplicable {
					t.Errorf("%s has neither §7.M nor the sentinel", s.ID)
				}
				if s.Release.NotProvided {
					notProv = append(notProv, s.ID)
					if s.Release.Reason == "" || s.Release.RevisitWhen == "" {
						t.Errorf("%s disclosure lacks reason or revisit: %+v", s.ID, s.Release)
					}
				}
			}
			for name, pair := range map[string][2][]string{
				"scenarios": {ids, tc.scenarios}, "serious": {serious, tc.serious}, "not provided": {notProv, tc.notProv},
			} {
				if !slices.Equal(pair[0], pair[1]) {
					t.Errorf("%s = %v, want %v", name, pair[0], pair[1])
				}
			}
		})
	}
}
