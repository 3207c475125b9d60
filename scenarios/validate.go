package scenarios

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/dstgen/dstgen/internal/fileline"
)

// tierNames are the budget tiers a scenario may state (docs/scenarios-yml.md §3.1).
var tierNames = []string{"smoke", "hardening", "release"}

// line is the line of the key at positional path key, or of its nearest
// ancestor that has one, so every error points somewhere.
func (d *decoder) line(key string) int {
	for key != "" {
		if l, ok := d.lines[key]; ok {
			return l
		}
		i := strings.LastIndexAny(key, ".[")
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return 1
}

// check is one scenario's validation context: the positional prefix of its
// entry and the name errors call it by.
type check struct {
	d         *decoder
	key, show string
}

func (c check) errf(field, format string, args ...any) *fileline.Error {
	return c.d.errf(c.d.line(join(c.key, field)), "%s", join(c.show, field)+" "+fmt.Sprintf(format, args...))
}

// isTODO reports a value the plan did not state yet; it is listed by
// TODOs, not rejected, so a freshly generated file parses.
func isTODO(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), "TODO(") }

// duration checks an optional duration field; required ones say so when
// empty.
func (c check) duration(field, v string, required bool) error {
	if isTODO(v) {
		return nil
	}
	if strings.TrimSpace(v) == "" {
		if required {
			return c.errf(field, "is missing: want a duration like 30s or 1m30s")
		}
		return nil
	}
	if _, err := ParseSeconds(v); err != nil {
		return c.errf(field, "%s: %v", shown(v), err)
	}
	return nil
}

func (d *decoder) validate(f *File, root *yaml.Node) error {
	if f.Version != 1 {
		if _, ok := d.lines["version"]; !ok {
			return d.errf(root.Line, "version: missing; want version: 1")
		}
		return d.errf(d.line("version"), "version %d: want 1 (the only schema version)", f.Version)
	}
	firstAt := map[string]int{} // id → line it was first seen at
	unique := func(id string, line int) error {
		if prev, ok := firstAt[id]; ok {
			return d.errf(line, "id %s is used twice (first at line %d)", shown(id), prev)
		}
		firstAt[id] = line
		return nil
	}
	for i := range f.Scenarios {
		s := &f.Scenarios[i]
		key := fmt.Sprintf("scenarios[%d]", i)
		if strings.TrimSpace(s.ID) == "" {
			return d.errf(s.Line, "%s: id is missing or empty", key)
		}
		if strings.ContainsAny(s.ID, "/ \t") {
			return d.errf(d.line(key+".id"), "id %s: a scenario id has no '/' or blank (arms are S4/api under arms:)", shown(s.ID))
		}
		if err := unique(s.ID, d.line(key+".id")); err != nil {
			return err
		}
		for j := range s.Arms {
			a := &s.Arms[j]
			akey := fmt.Sprintf("%s.arms[%d]", key, j)
			name, ok := strings.CutPrefix(a.ID, s.ID+"/")
			if !ok || strings.TrimSpace(name) == "" {
				return d.errf(d.line(akey+".id"), "%s.arms[%d].id %s: want %s/<arm>", s.ID, j, shown(a.ID), s.ID)
			}
			if err := unique(a.ID, d.line(akey+".id")); err != nil {
				return err
			}
		}
	}
	for i := range f.Scenarios {
		c := check{d: d, key: fmt.Sprintf("scenarios[%d]", i), show: f.Scenarios[i].ID}
		if err := c.scenario(&f.Scenarios[i]); err != nil {
			return err
		}
	}
	return nil
}

func (c check) scenario(s *Scenario) error {
	for name, t := range s.Tiers {
		if !slices.Contains(tierNames, name) {
			return c.errf("tiers."+name, "is not a tier: want %s", strings.Join(tierNames, ", "))
		}
		for _, n := range []struct {
			field string
			v     *float64
		}{{"size", t.Size}, {"duration_s", t.DurationS}, {"faults", t.Faults}, {"seeds", t.Seeds}} {
			if n.v == nil {
				continue
			}
			if err := c.nonNegative("tiers."+name+"."+n.field, *n.v); err != nil {
				return err
			}
		}
		if t.Seeds != nil && (*t.Seeds < 1 || *t.Seeds != math.Trunc(*t.Seeds)) {
			return c.errf("tiers."+name+".seeds", "%v: want a whole number ≥ 1", *t.Seeds)
		}
	}
	if w := s.Workload; w.Rate != nil {
		if err := c.nonNegative("workload.rate", *w.Rate); err != nil {
			return err
		}
	}
	if w := s.Workload; w.DurationS != nil && (*w.DurationS <= 0 || *w.DurationS > maxSeconds) {
		return c.errf("workload.duration_s", "%v: want seconds > 0 and at most %d", *w.DurationS, maxSeconds)
	}
	for j := range s.Faults {
		if err := c.fault(j, &s.Faults[j]); err != nil {
			return err
		}
	}
	if s.Oracle.TimeoutS < 0 {
		return c.errf("oracle.timeout_s", "%d: want ≥ 0", s.Oracle.TimeoutS)
	}
	if q := s.Quiesce; q != nil {
		if strings.TrimSpace(q.Command) == "" {
			return c.errf("quiesce.command", "is missing: quiesce needs the command that exits 0 once the system is nominal")
		}
		if err := c.duration("quiesce.timeout", q.Timeout, false); err != nil {
			return err
		}
	}
	return nil
}

func (c check) nonNegative(field string, v float64) error {
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return c.errf(field, "%v: want a number ≥ 0", v)
	}
	return nil
}

var expects = []string{"rise", "fall", "change"}

func (c check) fault(j int, f *Fault) error {
	p := fmt.Sprintf("faults[%d].", j)
	if strings.TrimSpace(f.Nemesis) == "" {
		return c.errf(p+"nemesis", "is missing: want an id of `dstgen nemesis list`")
	}
	if err := c.duration(p+"at", f.At, true); err != nil {
		return err
	}
	if err := c.duration(p+"for", f.For, true); err != nil {
		return err
	}
	if err := c.duration(p+"every", f.Every, false); err != nil {
		return err
	}
	if err := c.duration(p+"jitter", f.Jitter, false); err != nil {
		return err
	}
	if f.Times < 0 {
		return c.errf(p+"times", "%d: want ≥ 0", f.Times)
	}
	every, everyOK := known(f.Every)
	if f.Times > 1 && f.Every == "" {
		return c.errf(p+"times", "%d: repeated windows need every: (the period between them)", f.Times)
	}
	if length, ok := known(f.For); ok && everyOK && length > every {
		return c.errf(p+"for", "%s is longer than every %s: the windows would overlap", shown(f.For), shown(f.Every))
	}
	if f.Nemesis == "custom" && (f.Custom == nil || strings.TrimSpace(f.Custom.Inject) == "") {
		return c.errf(p+"custom", "nemesis custom needs custom: {inject: <command>, heal: <command>, evidence: <command>}")
	}
	if f.Custom != nil && strings.TrimSpace(f.Custom.Inject) == "" {
		return c.errf(p+"custom.inject", "is missing: a custom fault needs the command that injects it")
	}
	if l := f.Landing; l != nil {
		if l.Expect != "" && !slices.Contains(expects, l.Expect) {
			return c.errf(p+"landing.expect", "%s: want %s", shown(l.Expect), strings.Join(expects, ", "))
		}
		if l.Log != "" && !isTODO(l.Log) {
			if _, err := regexp.Compile(l.Log); err != nil {
				return c.errf(p+"landing.log", "%s is not a regular expression: %v", shown(l.Log), err)
			}
		}
		if err := c.duration(p+"landing.within", l.Within, false); err != nil {
			return err
		}
	}
	return nil
}

// known parses a duration that is set and not a TODO.
func known(v string) (float64, bool) {
	if isTODO(v) || strings.TrimSpace(v) == "" {
		return 0, false
	}
	d, err := ParseSeconds(v)
	return d.Seconds(), err == nil
}
