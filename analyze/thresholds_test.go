package analyze

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/plan"
)

// The fixture plan's S5 is judged by its fairness formula and the SLO its
// Oracle states ("p99 put ≤ 20ms overall"); neither has a §7.M block. Both
// reach the checker through Analyze as the plan typed them, and the verdict
// comes from the threshold that was broken.
func TestThresholdOraclesEndToEnd(t *testing.T) {
	p, err := plan.Parse("testdata/plan.md")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		session   string
		verdict   Verdict
		anomaly   string // in a finding or the evidence
		threshold string // the threshold named in the oracle evidence
	}{
		{"thresholds/20260701T100000Z", FailNondeterministic, "min_group_throughput >= 190 ops/s", "fairness group=tenant: min_group_throughput >= 190 ops/s"},
		{"thresholds/20260702T100000Z", FailNondeterministic, "p99 <= 20ms", "slo p99 <= 20ms"},
	}
	for _, tt := range tests {
		t.Run(tt.session, func(t *testing.T) {
			rep, err := Analyze(context.Background(), filepath.Join("testdata", "sessions", tt.session), p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, pr := range rep.Problems {
				if strings.Contains(pr.Message, "threshold") || strings.Contains(pr.Message, "formula") {
					t.Errorf("problem: %+v", pr)
				}
			}
			var arm *ScenarioResult
			for i := range rep.Scenarios {
				if rep.Scenarios[i].ID == "S5" && len(rep.Scenarios[i].Arms) == 1 {
					arm = &rep.Scenarios[i].Arms[0]
				}
			}
			if arm == nil {
				t.Fatalf("no S5/api arm in %+v", rep.Scenarios)
			}
			if arm.Verdict != tt.verdict {
				t.Errorf("S5/api verdict %s, want %s (reasons %+v)", arm.Verdict, tt.verdict, arm.Reasons)
			}
			if !strings.Contains(arm.OracleEvidence, tt.threshold) {
				t.Errorf("oracle evidence %q does not name the applied threshold %q", arm.OracleEvidence, tt.threshold)
			}
			found := false
			for _, f := range rep.Findings {
				found = found || strings.Contains(f.Title+" "+f.WhatHappened+" "+strings.Join(f.Evidence, " "), tt.anomaly)
			}
			for _, r := range arm.Reasons {
				found = found || strings.Contains(r.Text, tt.anomaly)
			}
			if !found {
				t.Errorf("no finding or reason cites the broken threshold %q; findings %+v", tt.anomaly, rep.Findings)
			}
		})
	}
}
