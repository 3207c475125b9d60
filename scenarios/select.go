package scenarios

import (
	"fmt"
	"strings"

	"github.com/dstgen/dstgen/internal/fileline"
)

// Unit is one thing `dstgen run` runs: a scenario, or one §7.M.S arm of
// it (Arm non-nil), each with its own history, run.json and verdict.
type Unit struct {
	Scenario *Scenario
	Arm      *Arm // nil = the scenario itself
}

// ID is the unit's id: the arm's ("S4/api") or the scenario's ("S1").
func (u Unit) ID() string {
	if u.Arm != nil {
		return u.Arm.ID
	}
	return u.Scenario.ID
}

// Command is the workload command the unit runs: the arm's own when it
// sets one, else the scenario's (docs/scenarios-yml.md §3.6).
func (u Unit) Command() string {
	if u.Arm != nil && strings.TrimSpace(u.Arm.Workload) != "" {
		return u.Arm.Workload
	}
	return u.Scenario.Workload.Command
}

// All is every unit of the file in plan order, a scenario with arms
// standing for its arms in their order.
func (f *File) All() []Unit {
	var out []Unit
	for i := range f.Scenarios {
		out = append(out, units(&f.Scenarios[i])...)
	}
	return out
}

func units(s *Scenario) []Unit {
	if len(s.Arms) == 0 {
		return []Unit{{Scenario: s}}
	}
	out := make([]Unit, 0, len(s.Arms))
	for j := range s.Arms {
		out = append(out, Unit{Scenario: s, Arm: &s.Arms[j]})
	}
	return out
}

// maxListedIDs bounds the ids an unknown-id error lists, so the reason
// stays one readable line for a plan of hundreds of scenarios.
const maxListedIDs = 30

// Select resolves a run's ID: "S4" is the scenario (every arm of it, in
// order, when it has arms), "S4/api" that one arm. An unknown id is an
// error listing the ids the file has.
func (f *File) Select(id string) ([]Unit, error) {
	for i := range f.Scenarios {
		s := &f.Scenarios[i]
		if s.ID == id {
			return units(s), nil
		}
		for j := range s.Arms {
			if s.Arms[j].ID == id {
				return []Unit{{Scenario: s, Arm: &s.Arms[j]}}, nil
			}
		}
	}
	var known []string
	for i := range f.Scenarios {
		s := &f.Scenarios[i]
		k := s.ID
		if len(s.Arms) > 0 {
			arms := make([]string, len(s.Arms))
			for j := range s.Arms {
				arms[j] = s.Arms[j].ID
			}
			k += " (arms " + strings.Join(arms, ", ") + ")"
		}
		known = append(known, k)
	}
	list := "none (the file has no scenarios)"
	if len(known) > maxListedIDs {
		list = strings.Join(known[:maxListedIDs], ", ") + fmt.Sprintf(", … (%d more)", len(known)-maxListedIDs)
	} else if len(known) > 0 {
		list = strings.Join(known, ", ")
	}
	file := f.Path
	if file == "" {
		file = "scenarios.yml"
	}
	return nil, fileline.Errorf(file, 0, "unknown scenario id %s; known ids: %s", shown(id), list)
}
