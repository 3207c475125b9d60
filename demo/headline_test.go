package demo

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReadHeadlines: a pass shows its landing evidence, a FAIL its first
// anomaly, and a PARTIAL or INCONCLUSIVE line leads with what took the
// verdict down, so the line never reads like a pass.
func TestReadHeadlines(t *testing.T) {
	for _, tc := range []struct {
		name, scenario, want string
	}{
		{"pass", `{"id":"S2","verdict":"PASS-smoke","landing_evidence":"counter 1→1",
			"reasons":[{"to":"PASS-hardening","text":"clean"},{"to":"PASS-smoke","text":"tier not met"}]}`,
			"counter 1→1"},
		{"fail", `{"id":"S2","verdict":"FAIL-reproducible","oracle_evidence":"4000 ops","landing_evidence":"counter 1→1",
			"checkers":[{"anomalies":[{"message":"op 3 not linearizable"}]}]}`,
			"4000 ops; op 3 not linearizable"},
		{"partial", `{"id":"S2","verdict":"PARTIAL-surface","landing_evidence":"counter 1→1",
			"reasons":[{"to":"PASS-hardening","text":"clean"},{"to":"PARTIAL-surface","text":"red flag 1 failed: 5 ops/s at +14s"}]}`,
			"red flag 1 failed: 5 ops/s at +14s; counter 1→1"},
		{"inconclusive without landing", `{"id":"S2","verdict":"INCONCLUSIVE-fault-not-proven",
			"reasons":[{"to":"INCONCLUSIVE-fault-not-proven","text":"no window landed"}]}`,
			"no window landed"},
		{"reason for another verdict", `{"id":"S2","verdict":"PARTIAL-model","landing_evidence":"counter 1→1",
			"reasons":[{"to":"PASS-smoke","text":"tier not met"}]}`,
			"counter 1→1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess := t.TempDir()
			if err := os.MkdirAll(filepath.Join(sess, "findings"), 0o755); err != nil {
				t.Fatal(err)
			}
			doc := `{"scenarios":[` + tc.scenario + `]}`
			if err := os.WriteFile(filepath.Join(sess, "findings", "report.json"), []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			hs, err := readHeadlines(sess, "safe")
			if err != nil {
				t.Fatal(err)
			}
			if len(hs) != 1 || hs[0].evidence != tc.want {
				t.Fatalf("headlines %+v, want one with evidence %q", hs, tc.want)
			}
		})
	}
}
