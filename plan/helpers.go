package plan

import "strings"

// Claim returns the §1b claim with the id, or nil.
func (p *Plan) Claim(id string) *Claim {
	for i := range p.Claims {
		if p.Claims[i].ID == id {
			return &p.Claims[i]
		}
	}
	return nil
}

// hypothesis returns the §4 hypothesis with the id, or nil.
func (p *Plan) hypothesis(id string) *Hypothesis {
	for i := range p.Hypotheses {
		if p.Hypotheses[i].ID == id {
			return &p.Hypotheses[i]
		}
	}
	return nil
}

// Scenario returns the scenario with the id ("S1"), or nil. An arm id
// ("S4/api") returns the scenario that owns the arm.
func (p *Plan) Scenario(id string) *Scenario {
	id = scenarioOf(id)
	for i := range p.Scenarios {
		if p.Scenarios[i].ID == id {
			return &p.Scenarios[i]
		}
	}
	return nil
}

// arm returns the scenario and arm for an arm id ("S4/api"); both are nil
// when there is no such arm.
func (p *Plan) arm(id string) (*Scenario, *Arm) {
	s := p.Scenario(id)
	if s == nil {
		return nil, nil
	}
	if a := s.Arm(id); a != nil {
		return s, a
	}
	return nil, nil
}

// Arm returns the scenario's arm with the id, or nil.
func (s *Scenario) Arm(id string) *Arm {
	for i := range s.Arms {
		if s.Arms[i].ID == id {
			return &s.Arms[i]
		}
	}
	return nil
}

// Categories returns the categories of the claims the scenario falsifies,
// in Falsifies order, skipping unknown claim ids.
func (p *Plan) Categories(s *Scenario) []string {
	var out []string
	for _, id := range s.Falsifies {
		if c := p.Claim(id); c != nil {
			out = append(out, c.Category)
		}
	}
	return out
}

// Serious reports whether the scenario falsifies a claim whose category is
// in GATED_MODEL (docs/plan-format.md §4.3): then its §7.M block is mandatory.
func (p *Plan) Serious(s *Scenario) bool {
	for _, c := range p.Categories(s) {
		if GatedModel(c) {
			return true
		}
	}
	return false
}

// needsSurface reports whether the scenario falsifies a boundary or
// fairness claim, so it must carry a §7.M.S block.
func (p *Plan) needsSurface(s *Scenario) bool {
	for _, c := range p.Categories(s) {
		if GatedSurface(c) {
			return true
		}
	}
	return false
}

// fairness reports whether the scenario falsifies a fairness claim, so its
// §7.M.S block must declare a Fairness formula.
func (p *Plan) fairness(s *Scenario) bool {
	for _, c := range p.Categories(s) {
		if c == CatFairness {
			return true
		}
	}
	return false
}

// FaultsPlanned reports whether the scenario schedules any fault: its Faults
// field is neither empty nor "none" (smoke-only scenarios write "none").
func (s *Scenario) FaultsPlanned() bool {
	t := strings.ToLower(strings.Trim(strings.TrimSpace(s.Faults), "`*_."))
	if t == "" {
		return false
	}
	for _, none := range []string{"none", "n/a", "no faults", "no fault", "-", "—"} {
		// The word must end there: "none: smoke only" and "`none` (smoke)"
		// plan nothing, "nonexistent-node restart" does.
		if rest, ok := strings.CutPrefix(t, none); ok && (rest == "" || strings.IndexByte(" ,;:(`*_", rest[0]) >= 0) {
			return false
		}
	}
	return true
}

// authorMode reports whether the scenario carries what author mode needs: a
// target test file and a skeleton.
func (s *Scenario) authorMode() bool {
	return strings.TrimSpace(s.TargetTestFile) != "" && s.SkeletonLine > 0
}

// model returns the §7.M block that governs an arm: the arm's own block, or
// the scenario's when the arm has none (armID "" asks for the scenario's).
func (s *Scenario) model(armID string) *ModelBlock {
	if armID != "" {
		if a := s.Arm(armID); a != nil && a.M != nil {
			return a.M
		}
	}
	return s.M
}

// filled reports whether every one of the six §7.M fields has a value.
func (m *ModelBlock) filled() bool {
	if m == nil {
		return false
	}
	for _, f := range ModelFields() {
		if strings.TrimSpace(m.Value(f)) == "" {
			return false
		}
	}
	return true
}

// ScenarioIDs is every scenario's id, in plan order (what runs when
// env.yml selects none).
func (p *Plan) ScenarioIDs() []string {
	var ids []string
	for _, s := range p.Scenarios {
		if s.ID != "" {
			ids = append(ids, s.ID)
		}
	}
	return ids
}
