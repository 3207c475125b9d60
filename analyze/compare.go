package analyze

// Stage 6, report — 6.1 comparison: what changed since the previous
// session's report.

// Comparison is what changed per scenario between two sessions.
type Comparison struct {
	Previous        string           `json:"previous_session"` // directory name of the earlier session
	VerdictBefore   SessionVerdict   `json:"session_verdict_before"`
	VerdictAfter    SessionVerdict   `json:"session_verdict_after"`
	Changes         []ScenarioChange `json:"scenarios"`
	ChangedVerdicts int              `json:"changed_verdicts"`
}

// ScenarioChange is one scenario's (or arm's) before → after. Metric
// pointers are nil when that session had no figure.
type ScenarioChange struct {
	ID               string   `json:"id"`
	Before           Verdict  `json:"verdict_before,omitempty"` // "" when the scenario is new
	After            Verdict  `json:"verdict_after,omitempty"`  // "" when it was dropped from the plan
	ThroughputBefore *float64 `json:"throughput_before,omitempty"`
	ThroughputAfter  *float64 `json:"throughput_after,omitempty"`
	P99Before        *float64 `json:"p99_ms_before,omitempty"`
	P99After         *float64 `json:"p99_ms_after,omitempty"`
}

// Compare lists every scenario and arm of cur (and those only prev had) in
// cur's order, with verdict, throughput and p99 before and after.
func Compare(prev, cur *Report) *Comparison {
	if prev == nil || cur == nil {
		return nil
	}
	c := &Comparison{Previous: sessionStamp(prev), VerdictBefore: prev.SessionVerdict, VerdictAfter: cur.SessionVerdict}
	before := map[string]ScenarioResult{}
	var prevOrder []string
	for _, s := range flattenResults(prev.Scenarios) {
		before[s.ID] = s
		prevOrder = append(prevOrder, s.ID)
	}
	seen := map[string]bool{}
	add := func(id string, b, a *ScenarioResult) {
		ch := ScenarioChange{ID: id}
		if b != nil {
			ch.Before = b.Verdict
			ch.ThroughputBefore, ch.P99Before = metricPtrs(b.Metrics)
		}
		if a != nil {
			ch.After = a.Verdict
			ch.ThroughputAfter, ch.P99After = metricPtrs(a.Metrics)
		}
		if ch.Before != ch.After {
			c.ChangedVerdicts++
		}
		c.Changes = append(c.Changes, ch)
	}
	for _, s := range flattenResults(cur.Scenarios) {
		seen[s.ID] = true
		if b, ok := before[s.ID]; ok {
			add(s.ID, &b, &s)
		} else {
			add(s.ID, nil, &s)
		}
	}
	for _, id := range prevOrder {
		if !seen[id] {
			b := before[id]
			add(id, &b, nil)
		}
	}
	return c
}

func fptr(v float64) *float64 { return &v }

func metricPtrs(m *Metrics) (tput, p99 *float64) {
	if m == nil || m.Ops == 0 {
		return nil, nil
	}
	return fptr(m.Throughput), fptr(m.P99Ms)
}
