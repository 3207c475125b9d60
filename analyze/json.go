package analyze

// report.json is the Report itself plus two derived blocks: "verdicts"
// (the verdicts.json shape of docs/verdicts.md §11, so one file serves both
// readers) and "changes" (the comparison with the previous session).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dstgen/dstgen/analyze/render"
	"github.com/dstgen/dstgen/session"
)

type reportJSON struct {
	*Report
	Verdicts verdictsDoc `json:"verdicts"`
	Changes  *Comparison `json:"changes,omitempty"`
}

// verdictsDoc is docs/verdicts.md §11.
type verdictsDoc struct {
	SessionVerdict SessionVerdict     `json:"session_verdict"`
	Scenarios      []verdictsScenario `json:"scenarios"`
}

type verdictsScenario struct {
	ID              string             `json:"id"`
	Verdict         Verdict            `json:"verdict"`
	TierMet         TierLevel          `json:"tier_met,omitempty"`
	DowngradeReason string             `json:"downgrade_reason,omitempty"`
	Reason          string             `json:"reason,omitempty"`
	Arms            []verdictsScenario `json:"arms,omitempty"`
	RedFlags        map[string]string  `json:"red_flags,omitempty"`
	WeakOracle      map[string]string  `json:"weak_oracle,omitempty"`
	OracleEvidence  string             `json:"oracle_evidence,omitempty"`
	LandingEvidence string             `json:"landing_evidence,omitempty"`
}

func toVerdictsScenario(s ScenarioResult) verdictsScenario {
	v := verdictsScenario{ID: s.ID, Verdict: s.Verdict, TierMet: s.TierMet,
		OracleEvidence: s.OracleEvidence, LandingEvidence: s.LandingEvidence}
	var down []string
	for _, r := range s.Reasons {
		if (strings.HasPrefix(r.Step, "gate:") || r.Step == "arms") && r.Text != "" {
			down = append(down, r.Text)
		}
	}
	v.DowngradeReason = strings.Join(down, "; ")
	if !s.Verdict.IsPass() {
		v.Reason = s.Why().Text
	}
	if len(s.RedFlags) > 0 {
		v.RedFlags = map[string]string{}
		for _, c := range s.RedFlags {
			v.RedFlags[strconv.Itoa(c.N)] = c.Status
		}
	}
	if len(s.WeakOracle) > 0 {
		v.WeakOracle = map[string]string{}
		for _, w := range s.WeakOracle {
			st := w.Status
			switch st {
			case ItemChecked:
				st = CheckPass
			case ItemUnchecked:
				st = CheckFail
			}
			v.WeakOracle[strconv.Itoa(w.N)] = st
		}
	}
	for _, a := range s.Arms {
		v.Arms = append(v.Arms, toVerdictsScenario(a))
	}
	return v
}

func toVerdictsDoc(r *Report) verdictsDoc {
	d := verdictsDoc{SessionVerdict: r.SessionVerdict, Scenarios: []verdictsScenario{}}
	for _, s := range r.Scenarios {
		d.Scenarios = append(d.Scenarios, toVerdictsScenario(s))
	}
	return d
}

// RenderJSON renders report.json (indented, trailing newline).
func RenderJSON(r *Report, cmp *Comparison) ([]byte, error) {
	out, err := json.MarshalIndent(reportJSON{Report: r, Verdicts: toVerdictsDoc(r), Changes: cmp}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// RenderVerdictsJSON renders verdicts.json (docs/verdicts.md §11) alone.
func RenderVerdictsJSON(r *Report) ([]byte, error) {
	out, err := json.MarshalIndent(toVerdictsDoc(r), "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// LoadReportJSON reads a report.json written by WriteReport, for comparing
// a later session against it.
func LoadReportJSON(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read previous report: %w", err)
	}
	var env reportJSON
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("%s:%d: previous report: %w", path, render.JSONErrorLine(data, err), err)
	}
	if env.Report == nil || env.Schema != ReportSchema {
		return nil, fmt.Errorf("%s:1: previous report: schema %q, want %q", path, schemaOf(env.Report), ReportSchema)
	}
	return env.Report, nil
}

func schemaOf(r *Report) string {
	if r == nil {
		return ""
	}
	return r.Schema
}

// PreviousReportPath is where the previous session keeps its report.json.
func PreviousReportPath(prevSessionDir string) string {
	return filepath.Join(prevSessionDir, session.FindingsDir, ReportJSONFile)
}
