package generator

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/dstgen/dstgen/internal/fileline"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/scenarios"
)

// FaultDrift refuses a scenarios.yml whose scenario injects a fault its
// plan's scenario of the same id does not state: its run would be judged
// and reported under the plan's name for a test the plan never asked for
// (a leader isolation swapped for a follower partition). It compares what
// `dstgen init` reads from the plan (PlanNemeses) with the scenarios to
// run: id (an arm "S4/api" is its scenario's), or every one with all. A
// plan that cannot be read, a scenario the plan lacks, prose init cannot
// read, or a custom nemesis (the plan's fault done by hand) is not judged.
func FaultDrift(sf *scenarios.File, id string, all bool) error {
	if sf.Plan == "" {
		return nil
	}
	pp := sf.Plan
	if !filepath.IsAbs(pp) {
		pp = filepath.Join(filepath.Dir(sf.Path), pp)
	}
	p, err := plan.Parse(pp)
	if err != nil {
		return nil
	}
	want, _, _ := strings.Cut(id, "/")
	for _, sc := range sf.Scenarios {
		if !all && !strings.EqualFold(sc.ID, want) {
			continue
		}
		var ps *plan.Scenario
		for i := range p.Scenarios {
			if strings.EqualFold(p.Scenarios[i].ID, sc.ID) {
				ps = &p.Scenarios[i]
			}
		}
		if ps == nil {
			continue
		}
		planned := PlanNemeses(*ps)
		var got []string
		custom := false
		for _, fa := range sc.Faults {
			custom = custom || fa.Nemesis == "custom"
			if !slices.Contains(got, fa.Nemesis) {
				got = append(got, fa.Nemesis)
			}
		}
		if len(planned) == 0 || custom {
			continue
		}
		// Fewer of the plan's faults is a smaller test of the same
		// claim; a fault the plan does not state is another test.
		for _, n := range got {
			if !slices.Contains(planned, n) {
				return fileline.Errorf(sf.Path, sc.Line, "drift: %s injects %s, but the plan's %s (%s) states %s; its run would be judged and reported as the plan's %s: restore the plan's fault, or change the plan and re-run dstgen init",
					sc.ID, n, ps.ID, pp, strings.Join(planned, ", "), ps.ID)
			}
		}
	}
	return nil
}
