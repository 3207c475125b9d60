package analyze

// Stage 0, shared vocabulary: the names of the numbered checks and the
// nemesis groups every stage reads, and small text helpers. It calls no
// other file of the package.

import "strings"

// redFlagNames are the ten checks of docs/verdicts.md §6.
var redFlagNames = [11]string{"",
	"Workload produced the intended load",
	"Oracle ran on every intended cycle",
	"Fault actually injected",
	"Fault did not silently no-op",
	"Clock skew did not mask a timing assertion",
	"Run duration met the exit criterion / claimed tier",
	"No silent error suppression",
	"Recovery completed",
	"Baseline comparison is fair",
	"One PASS is not PASS",
}

// weakItems are the fourteen items of docs/verdicts.md §7 with the docs/verdicts.md §4.2 kind.
var weakItems = [15]struct{ name, kind string }{{},
	{"Oracle is not \"final state only\"", KindSurface},
	{"Oracle is not \"logs only\"", KindSurface},
	{"Oracle is not \"health checks only\"", KindSurface},
	{"Failover exercised more than once", KindBreadth},
	{"Not \"no-error metrics\" alone", KindSurface},
	{"Not \"short runs\" alone", KindBreadth},
	{"≥ 1 asymmetric partition variant", KindBreadth},
	{"Recorder caught library-hidden retries", KindBreadth},
	{"Timestamps monotonic, not wall-clock", KindBreadth},
	{"More than one cluster topology", KindBreadth},
	{"≥ 3 PRNG seeds for statistical claims", KindBreadth},
	{"Not single-surface only", KindSurface},
	{"Negative controls present", KindSurface},
	{"Fairness oracle is per-group", KindSurface},
}

// Nemesis groups (docs/nemesis.md) the audits need.
var (
	networkNemeses = map[string]bool{"partition-full": true, "partition-asym": true, "packet-loss": true,
		"latency": true, "bandwidth": true, "partition-minority": true, "partition-majority": true,
		"leader-isolation": true, "packet-dup": true, "packet-reorder": true, "metadata-outage": true,
		"split-brain": true, "slow-follower": true}
	failoverNemeses = map[string]bool{"kill-9": true, "kill-term": true, "container-restart": true,
		"leader-isolation": true, "partition-minority": true, "partition-majority": true,
		"restart-wrong-order": true, "split-brain": true, "rolling-upgrade": true}
)

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if x != "" && !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func minus(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[strings.ToLower(x)] = true
	}
	var out []string
	for _, x := range a {
		if !in[strings.ToLower(x)] {
			out = append(out, x)
		}
	}
	return out
}

func appendText(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func orText(s, alt string) string {
	if s != "" {
		return s
	}
	return alt
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Why is the reason that set the verdict, for one-line reports (the results
// table, `reason.<ID>=` of `dstgen analyze`, JUnit): the last one that moved
// it, skipping tier warnings and "also:" notes, which explain nothing about
// why the verdict is what it is (a tier warning once stood in for "landing
// signal absent" in the results table, and in `reason.<ID>=` after an
// interrupted run).
func (s ScenarioResult) Why() Reason {
	var fallback Reason
	for i := len(s.Reasons) - 1; i >= 0; i-- {
		r := s.Reasons[i]
		r.Text = strings.TrimSpace(r.Text)
		if r.Text == "" {
			continue
		}
		if strings.HasPrefix(r.Text, "warning: ") || strings.HasPrefix(r.Text, "also: ") {
			if fallback.Text == "" {
				fallback = r
			}
			continue
		}
		return r
	}
	return fallback
}
