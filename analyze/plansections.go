package analyze

// Stage 5, findings (continued): the plan-derived report sections
// (hypothesis and surface coverage, disclosures, adequacy, confidence).

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dstgen/dstgen/plan"
)

// planSections fills the plan-derived report sections: hypothesis
// coverage, surface coverage, release disclosures, adequacy, confidence.
func planSections(rep *Report, p *plan.Plan) {
	byID := map[string]*ScenarioResult{}
	for i := range rep.Scenarios {
		s := &rep.Scenarios[i]
		byID[s.ID] = s
		for j := range s.Arms {
			byID[s.Arms[j].ID] = &s.Arms[j]
		}
	}
	hypothesisCoverage(rep, p, byID)
	surfaceCoverage(rep, p, byID)
	releaseDisclosures(rep, p, byID)
	adequacy(rep, p, byID)
	confidenceDelta(rep, p, byID)
}

// hypothesisCoverage is the hypothesis-coverage table: which scenarios close each
// hypothesis and whether any of them ran.
func hypothesisCoverage(rep *Report, p *plan.Plan, byID map[string]*ScenarioResult) {
	for _, h := range p.Hypotheses {
		row := HypothesisCoverage{ID: h.ID, Title: h.Title}
		for _, s := range p.Scenarios {
			if slices.Contains(s.Closes, h.ID) {
				row.Scenarios = append(row.Scenarios, s.ID)
				if r := byID[s.ID]; r != nil {
					row.Verdicts = append(row.Verdicts, r.Verdict)
					if r.Verdict != NotRun {
						row.Exercised = true
					}
				}
			}
		}
		switch {
		case len(row.Scenarios) == 0:
			row.Reason = "out of scope — no scenario closes it"
		case !row.Exercised:
			row.Reason = "deferred — every scenario that closes it was NOT-RUN"
		}
		rep.Hypotheses = append(rep.Hypotheses, row)
	}
}

// surfaceCoverage is the surface-coverage table of armed scenarios: one row per
// arm and one for the aggregate, and the surfaces that never ran.
func surfaceCoverage(rep *Report, p *plan.Plan, byID map[string]*ScenarioResult) {
	for _, s := range p.Scenarios {
		if len(s.Arms) == 0 {
			continue
		}
		r := byID[s.ID]
		for _, arm := range s.Arms {
			ar := byID[arm.ID]
			row := SurfaceRow{ID: arm.ID, Surface: arm.Surface, Planned: true}
			if ar != nil {
				row.Executed = ar.Verdict != NotRun
				row.Verdict = ar.Verdict
				if !ar.Verdict.IsPass() {
					row.DowngradeReason = ar.Why().Text
				}
				if !row.Executed {
					why := "not attempted"
					if len(ar.Reasons) > 0 {
						why = ar.Reasons[0].Text
					}
					rep.MissingSurfaces = append(rep.MissingSurfaces, fmt.Sprintf("%s (%s): %s", arm.ID, arm.Surface, why))
				}
			}
			rep.Surfaces = append(rep.Surfaces, row)
		}
		if r != nil {
			agg := SurfaceRow{ID: s.ID, Surface: "(aggregate)", Planned: true, Executed: r.Verdict != NotRun, Verdict: r.Verdict}
			if len(r.Reasons) > 0 && !r.Verdict.IsPass() {
				agg.DowngradeReason = r.Reasons[0].Text
			}
			rep.Surfaces = append(rep.Surfaces, agg)
		}
	}
}

// releaseDisclosures copies the plan's release "not provided" disclosures verbatim.
func releaseDisclosures(rep *Report, p *plan.Plan, byID map[string]*ScenarioResult) {
	for _, s := range p.Scenarios {
		if s.Release.NotProvided {
			rep.Disclosures = append(rep.Disclosures, Disclosure{Scenario: s.ID, Reason: s.Release.Reason, RevisitWhen: s.Release.RevisitWhen, Text: s.Release.Text})
		}
	}
}

// adequacy sets each adequacy argument of the plan against what ran.
func adequacy(rep *Report, p *plan.Plan, byID map[string]*ScenarioResult) {
	for _, ad := range p.Adequacy {
		row := AdequacyRow{Claim: ad.Claim, PlanArgument: strings.TrimSpace(ad.Why + " (" + ad.Scenarios + ")")}
		var ran, weak []string
		for _, id := range ad.ScenarioIDs { // parsed by plan, ranges ("S1–S3") expanded
			r := byID[id]
			if r == nil {
				weak = append(weak, id+" not in the plan")
				continue
			}
			ran = append(ran, fmt.Sprintf("%s %s", id, r.Verdict))
			if r.Verdict != PassHardening {
				weak = append(weak, fmt.Sprintf("%s %s", id, r.Verdict))
			}
		}
		row.WhatRan = strings.Join(ran, ", ")
		if len(weak) == 0 && len(ran) > 0 {
			row.Adequacy = "as argued"
		} else {
			row.CalledOut = true
			row.Adequacy = "weaker than argued — residual uncertainty larger than the plan declared: " + strings.Join(weak, ", ")
		}
		rep.Adequacy = append(rep.Adequacy, row)
	}
}

// confidenceDelta sorts the plan's claims into more, less and unchanged confidence.
func confidenceDelta(rep *Report, p *plan.Plan, byID map[string]*ScenarioResult) {
	rep.Confidence.Plan = p.Confidence
	for _, c := range p.Claims {
		var vs []string
		best, fail := Verdict(""), false
		for _, s := range p.Scenarios {
			if !slices.Contains(s.Falsifies, c.ID) {
				continue
			}
			r := byID[s.ID]
			if r == nil {
				continue
			}
			vs = append(vs, fmt.Sprintf("%s %s", s.ID, r.Verdict))
			if r.Verdict.IsFail() {
				fail = true
			}
			if best == "" || r.Verdict.Strength() > best.Strength() {
				best = r.Verdict
			}
		}
		line := fmt.Sprintf("%s: %s", c.ID, strings.Join(vs, ", "))
		switch {
		case len(vs) == 0:
			rep.Confidence.Unchanged = append(rep.Confidence.Unchanged, c.ID+": no scenario exercised it")
		case fail:
			rep.Confidence.Less = append(rep.Confidence.Less, line+" — violation observed")
		case best.IsPass():
			rep.Confidence.More = append(rep.Confidence.More, line)
		default:
			rep.Confidence.Less = append(rep.Confidence.Less, line+" — not validated as the plan hoped")
		}
	}
}
