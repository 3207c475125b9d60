package analyze

// Stage 2, facts (continued): which budget tier the runs met
// (docs/verdicts.md §4.1).

import (
	"fmt"
	"strings"
	"time"

	"github.com/dstgen/dstgen/plan"
)

// measured holds a unit's run parameters for tier detection.
type measured struct {
	size     map[string]int // "nodes", "tenants", "clients", "keys"
	duration time.Duration
	faults   int
	seeds    int
}

func measure(runs []*loadedRun) measured {
	m := measured{size: map[string]int{}, faults: -1}
	for _, lr := range runs {
		r := lr.run
		sz := map[string]int{"nodes": r.Nodes}
		for k, v := range r.ConfigSize {
			k = strings.TrimSuffix(strings.ToLower(k), "s") + "s"
			sz[k] = v
		}
		for k, v := range sz {
			if old, ok := m.size[k]; !ok || v < old {
				m.size[k] = v
			}
		}
		landed := 0
		for _, w := range r.FaultWindows {
			if ok, _ := windowLanded(w); ok {
				landed++
			}
		}
		if m.faults < 0 || landed < m.faults {
			m.faults = landed
		}
	}
	if m.faults < 0 {
		m.faults = 0
	}
	m.duration = minDuration(runs)
	m.seeds = len(distinctSeeds(runs))
	return m
}

// meets compares measured parameters with one tier's budget; every stated
// dimension must be met (docs/verdicts.md §4.1).
func meets(b plan.Budget, m measured) (ok, parsed bool, why string) {
	t := b.Tier // parsed once by the plan (plan.Budget.Tier)
	if !t.Parsed() {
		return false, false, fmt.Sprintf("budget %q is not parseable", b.Text)
	}
	var short []string
	chk := func(c plan.Count, have int, unit string) {
		if c.Known && have < c.N {
			short = append(short, fmt.Sprintf("%d/%d %s", have, c.N, unit))
		}
	}
	chk(t.Nodes, m.size["nodes"], "nodes")
	chk(t.Tenants, m.size["tenants"], "tenants")
	chk(t.Clients, m.size["clients"], "clients")
	chk(t.Keys, m.size["keys"], "keys")
	if t.Duration.Known && m.duration < t.Duration.D {
		short = append(short, fmt.Sprintf("%s/%s duration", m.duration, t.Duration.D))
	}
	chk(t.Faults, m.faults, "faults landed")
	chk(t.Seeds, m.seeds, "seeds")
	return len(short) == 0, true, strings.Join(short, ", ")
}

// tierMet detects the highest tier whose every stated dimension the runs
// met. An unparseable tier text yields TierUnknown (smoke only) + warning.
func tierMet(u *unit, runs []*loadedRun) (TierLevel, string, bool, string) {
	if u.ps == nil {
		return TierUnknown, "no plan budgets to compare against; treated as smoke only", false, ""
	}
	if len(runs) == 0 {
		return TierNone, "", false, ""
	}
	m := measure(runs)
	rel := u.ps.Release
	relNA := rel.NotProvided
	relText := ""
	if relNA {
		relText = strings.TrimSpace(rel.Text)
	}
	h, hp, hwhy := meets(u.ps.Hardening, m)
	if !hp {
		return TierUnknown, "hardening " + hwhy + "; treated as smoke only", relNA, relText
	}
	if h {
		if relNA {
			return TierHardening, "", true, relText
		}
		r, rp, rwhy := meets(rel, m)
		switch {
		case !rp:
			return TierHardening, "release " + rwhy, false, ""
		case r:
			return TierRelease, "", false, ""
		}
		return TierHardening, "", false, ""
	}
	s, sp, swhy := meets(u.ps.Smoke, m)
	switch {
	case !sp:
		return TierUnknown, "smoke " + swhy + "; treated as smoke only", relNA, relText
	case s:
		return TierSmoke, "", relNA, relText
	}
	return TierNone, "smoke budget not met: " + swhy + "; hardening not met: " + hwhy, relNA, relText
}
