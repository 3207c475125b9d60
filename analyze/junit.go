package analyze

// junit.xml in the de-facto schema Jenkins, GitLab and GitHub reporters
// read (testsuites > testsuite > testcase with failure / skipped). PASS-*
// passes, FAIL-* fails, everything else is skipped with its reason so a CI
// dashboard never shows an INCONCLUSIVE scenario as green.

import (
	"encoding/xml"
	"fmt"
	"strings"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	ClassName string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

func junitCaseFor(class string, s ScenarioResult) junitCase {
	name := s.ID
	if s.Name != "" {
		name += " " + s.Name
	}
	// CI dashboards show the name on one line.
	c := junitCase{ClassName: class, Name: strings.Join(strings.Fields(name), " ")}
	reason := s.Why().Text
	msg := string(s.Verdict)
	if reason != "" {
		msg += ": " + reason
	}
	var out []string
	out = append(out, "verdict: "+string(s.Verdict), "tier met: "+tierText(s))
	if s.OracleEvidence != "" {
		out = append(out, "oracle evidence: "+s.OracleEvidence)
	}
	if s.LandingEvidence != "" {
		out = append(out, "landing evidence: "+s.LandingEvidence)
	}
	for _, r := range s.Reasons {
		out = append(out, fmt.Sprintf("[%s] %s", r.Step, r.String()))
	}
	c.SystemOut = strings.Join(out, "\n")
	switch {
	case s.Verdict.IsPass():
	case s.Verdict.IsFail():
		c.Failure = &junitMessage{Message: msg, Type: string(s.Verdict), Body: strings.Join(s.Findings, ", ")}
	default:
		c.Skipped = &junitMessage{Message: msg}
	}
	return c
}

// RenderJUnit renders junit.xml: one testcase per scenario and per arm.
func RenderJUnit(r *Report) ([]byte, error) {
	slug := r.PlanSlug
	if slug == "" {
		slug = "plan"
	}
	suite := junitSuite{Name: slug + " @ " + sessionStamp(r),
		Properties: []junitProperty{
			{Name: "session_verdict", Value: string(r.SessionVerdict)},
			{Name: "headline", Value: r.Headline},
			{Name: "session_dir", Value: r.SessionDir},
		}}
	if !r.GeneratedAt.IsZero() {
		suite.Timestamp = r.GeneratedAt.UTC().Format("2006-01-02T15:04:05")
	}
	class := "dstgen." + slug
	for _, s := range flattenResults(r.Scenarios) {
		c := junitCaseFor(class, s)
		suite.Cases = append(suite.Cases, c)
		suite.Tests++
		if c.Failure != nil {
			suite.Failures++
		}
		if c.Skipped != nil {
			suite.Skipped++
		}
	}
	doc := junitSuites{Name: "dstgen analyze", Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Suites: []junitSuite{suite}}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(append([]byte(xml.Header), out...), '\n'), nil
}
