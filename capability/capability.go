// Package capability holds a plan's §6b environment requirements against
// the hosts' capability matrices that runner.Probe measures: which
// capability or binary each requirement names, whether every host meets
// it (version floor included), and which scenarios a missing one leaves
// without what they need — the rows `dstgen probe` and `task validate`
// print and the session log records. It sits above the runner: the runner
// measures hosts and knows nothing of the plan (docs/plan-format.md §6b).
package capability

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/runner"
)

// capKeywords maps §6b requirement text to a capability, first match wins,
// so the specific (netem) is tried before the general (tc, root). Keywords
// match whole words only: "etc" is not tc and "MongoDB" is not Go.
var capKeywords = []struct {
	cap  string
	keys []string
}{
	{"netem", []string{"netem"}},
	{"htb", []string{"htb", "bandwidth"}},
	{"iptables", []string{"iptables", "nftables", "cap_net_admin"}},
	{"netns", []string{"netns", "network namespace", "network namespaces", "net namespace"}},
	{"tc", []string{"tc", "traffic control"}},
	{"faketime", []string{"faketime", "libfaketime"}},
	{"systemd", []string{"systemd", "systemctl"}},
	{"stress-ng", []string{"stress-ng", "stress ng"}},
	{"container-runtime", []string{"docker", "podman", "container runtime", "compose"}},
	{"go", []string{"go toolchain", "golang", "go compiler", "go"}},
	{"dmsetup", []string{"dm-flakey", "dm-error", "device-mapper", "device mapper", "dmsetup"}},
	{"cgroup-io", []string{"cgroup", "cgroups", "cgroup v2", "cgroup v1"}},
	{"toxiproxy", []string{"toxiproxy"}},
	{"root", []string{"root", "sudo"}},
}

// capKeywordRes compiles on first use: every dstgen start would pay for
// it otherwise (internal/lazyre).
var capKeywordRes = sync.OnceValue(func() [][]*regexp.Regexp {
	out := make([][]*regexp.Regexp, len(capKeywords))
	for i, k := range capKeywords {
		for _, key := range k.keys {
			out[i] = append(out[i], regexp.MustCompile(`(?i)(^|[^a-z0-9_-])`+regexp.QuoteMeta(key)+`($|[^a-z0-9_-])`))
		}
	}
	return out
})

// CapabilityFor returns the capability a §6b requirement names, or "" when
// no probe covers it.
func CapabilityFor(requirement string) string {
	for i, res := range capKeywordRes() {
		for _, re := range res {
			if re.MatchString(requirement) {
				return capKeywords[i].cap
			}
		}
	}
	return ""
}

// binaryName is what a requirement may name as a binary: one safe shell
// word, so it can be spliced into the probe script.
var binaryName = lazyre.New(`^[a-z0-9][a-z0-9._+-]{0,63}$`)

// parenName is a parenthesised name in a requirement: "etcd-client (etcdctl)".
var parenName = lazyre.New(`\(\s*([A-Za-z0-9][A-Za-z0-9._+-]*)\s*\)`)

// packageBinaries maps a distro package a §6b row may name to the binary
// it installs, where the two differ.
var packageBinaries = map[string]string{
	"etcd-server": "etcd",
	"etcd-client": "etcdctl",
}

// BinaryFor returns the binary a §6b requirement names, for requirements
// no capability probe covers: the parenthesised name, else the binary of
// the package it names (etcd-server → etcd), else its first word.
// explicit is false for the first-word guess, which a host that lacks the
// binary leaves unknown rather than missing ("MinIO" need not be a binary
// called minio). "" when nothing could be a binary name.
func BinaryFor(requirement string) (bin string, explicit bool) {
	if m := parenName.FindStringSubmatch(requirement); m != nil && binaryName.MatchString(m[1]) {
		return m[1], true
	}
	f := strings.Fields(strings.ToLower(requirement))
	if len(f) == 0 {
		return "", false
	}
	w := strings.Trim(f[0], ",;:/")
	if b, ok := packageBinaries[w]; ok {
		return b, true
	}
	if binaryName.MatchString(w) {
		return w, false
	}
	return "", false
}

// RequirementBinaries lists, once each, the binaries Probe must look for
// so that MapRequirements can decide reqs no capability covers.
func RequirementBinaries(reqs []plan.EnvReq) []string {
	var out []string
	for _, rq := range reqs {
		if rq.BroughtUpBySUT || CapabilityFor(rq.Requirement) != "" {
			continue
		}
		if b, _ := BinaryFor(rq.Requirement); b != "" && !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// Requirement presence values in a ReqRow.
const (
	ReqPresent = "yes"
	ReqMissing = "no"
	ReqUnknown = "unknown" // no probe covers it; the operator must confirm
	ReqBySUT   = "by-sut"  // brought up by the SUT, not an operator install
)

// ReqRow is one plan §6b requirement checked on one host: the row the
// session log's capability matrix and the analyzer's INCONCLUSIVE-env
// decision read.
type ReqRow struct {
	Host         string   `json:"host"`
	Requirement  string   `json:"requirement"`
	Key          string   `json:"key,omitempty"` // dstgen.capabilities.<key> in env.yml
	VersionFloor string   `json:"version_floor,omitempty"`
	Capability   string   `json:"capability,omitempty"`
	Present      string   `json:"present"` // yes | no | unknown | by-sut
	Version      string   `json:"version,omitempty"`
	Source       string   `json:"source"`
	InstallHint  string   `json:"install_hint,omitempty"`
	UsedBy       []string `json:"used_by,omitempty"`
	// InconclusiveEnv lists the scenarios this row makes INCONCLUSIVE-env
	// (its UsedBy) when Present is no; empty otherwise.
	InconclusiveEnv []string `json:"inconclusive_env,omitempty"`
	Line            int      `json:"line,omitempty"`
}

// Fields returns the row as key=value pairs.
func (r ReqRow) Fields() [][2]string {
	return [][2]string{{"host", r.Host}, {"requirement", r.Requirement}, {"key", r.Key}, {"capability", r.Capability},
		{"present", r.Present}, {"version", r.Version}, {"source", r.Source}, {"floor", r.VersionFloor},
		{"used_by", strings.Join(r.UsedBy, ",")}, {"hint", r.InstallHint},
		{"inconclusive_env", strings.Join(r.InconclusiveEnv, ",")}, {"line", strconv.Itoa(r.Line)}}
}

// MapRequirements checks each §6b requirement against each reachable
// host's matrix. A requirement is present on a host when its capability is
// present and its version meets the floor (when both carry a number). A
// requirement no capability covers is checked as the binary it names (see
// BinaryFor), when Probe was asked to look for it.
func MapRequirements(reqs []plan.EnvReq, hosts []runner.HostCaps) []ReqRow {
	var rows []ReqRow
	keys := plan.CapKeys(reqs)
	for _, h := range hosts {
		for i, rq := range reqs {
			r := ReqRow{Host: h.Host, Requirement: rq.Requirement, Key: keys[i], VersionFloor: rq.VersionFloor,
				InstallHint: rq.InstallHint, UsedBy: rq.UsedBy, Line: rq.Line, Capability: CapabilityFor(rq.Requirement)}
			explicit := true
			if r.Capability == "" && !rq.BroughtUpBySUT {
				if b, ex := BinaryFor(rq.Requirement); b != "" {
					if _, probed := h.Cap(runner.BinaryCap(b)); probed {
						r.Capability, explicit = runner.BinaryCap(b), ex
					}
				}
			}
			switch {
			case rq.BroughtUpBySUT:
				r.Present, r.Source = ReqBySUT, "brought up by SUT (not an operator install)"
			case !h.Reachable:
				r.Present, r.Source = ReqUnknown, "host unreachable: "+h.Err
			case r.Capability == "":
				r.Present, r.Source = ReqUnknown, "no probe for this requirement; confirm by hand"
			default:
				c, _ := h.Cap(r.Capability)
				r.Version, r.Source = c.Version, c.Source
				r.Present = ReqMissing
				if c.Present {
					r.Present = ReqPresent
				} else if c.Message != "" {
					r.Source += ": " + c.Message
				}
				if r.Present == ReqMissing && !explicit {
					// Only a guess at the binary's name: not finding it
					// proves nothing.
					r.Present, r.Source = ReqUnknown, r.Source+"; confirm by hand"
				}
				if r.Present == ReqPresent && !meetsFloor(c.Version, rq.VersionFloor) {
					r.Present = ReqMissing
					r.Source += fmt.Sprintf(": version %q below floor %q", c.Version, rq.VersionFloor)
				}
			}
			if r.Present == ReqMissing {
				r.InconclusiveEnv = rq.UsedBy
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// MissingReq is one requirement missing on at least one host, and the
// selected scenarios it leaves without what they need.
type MissingReq struct {
	Key         string   `json:"key"`
	Requirement string   `json:"requirement"`
	Hosts       []string `json:"hosts"`
	UsedBy      []string `json:"used_by,omitempty"`
	InstallHint string   `json:"install_hint,omitempty"`
	Line        int      `json:"line,omitempty"`
	// Disabled: dstgen.capabilities.<key> is false (the user says the
	// environment lacks it; its scenarios will be INCONCLUSIVE-env).
	Disabled bool `json:"disabled,omitempty"`
	// Unselected: none of UsedBy is in dstgen.scenarios.
	Unselected bool `json:"unselected,omitempty"`
	// Selected are the selected scenarios that need it (every selected
	// scenario when the plan names none).
	Selected []string `json:"selected,omitempty"`
}

// CapSummary is the requirement verdict of a probe: counts over the
// plan's §6b requirements (one requirement counts once, however many
// hosts), the missing ones, the selected scenarios that can run and those
// a missing requirement makes INCONCLUSIVE-env before they start. Only
// "nothing can run" blocks (docs/dst-run.md §2, validate).
type CapSummary struct {
	Present      int          `json:"present"`
	Missing      int          `json:"missing"`
	Unknown      int          `json:"unknown"`
	BySUT        int          `json:"by_sut"`
	Details      []MissingReq `json:"missing_requirements,omitempty"`
	Runnable     []string     `json:"runnable"`
	Inconclusive []string     `json:"inconclusive_env,omitempty"`
	// Blocking: a requirement is missing and no selected scenario can
	// run.
	Blocking bool `json:"blocking"`
}

// Summarize folds rows into a CapSummary. A requirement is missing when
// it is missing on any host, unknown when it is unknown on any other, and
// present only when present on every host. capabilities is env.yml's
// dstgen.capabilities (false = disabled); selected is dstgen.scenarios,
// and all is every scenario of the plan (what runs when selected is
// empty).
func Summarize(rows []ReqRow, capabilities map[string]bool, selected, all []string) CapSummary {
	type agg struct {
		row     ReqRow
		state   string
		missing []string
	}
	var order []string
	by := map[string]*agg{}
	for _, r := range rows {
		id := r.Key + "\x00" + r.Requirement + "\x00" + strconv.Itoa(r.Line)
		a := by[id]
		if a == nil {
			a = &agg{row: r, state: r.Present}
			by[id] = a
			order = append(order, id)
		}
		switch r.Present {
		case ReqMissing:
			a.state = ReqMissing
			a.missing = append(a.missing, r.Host)
		case ReqUnknown:
			if a.state != ReqMissing {
				a.state = ReqUnknown
			}
		}
	}
	runs := all
	if len(selected) > 0 {
		runs = selected
	}
	blocked := map[string]bool{}
	var s CapSummary
	for _, id := range order {
		a := by[id]
		switch a.state {
		case ReqPresent:
			s.Present++
		case ReqUnknown:
			s.Unknown++
		case ReqBySUT:
			s.BySUT++
		case ReqMissing:
			s.Missing++
			m := MissingReq{Key: a.row.Key, Requirement: a.row.Requirement, Hosts: a.missing, UsedBy: a.row.UsedBy,
				InstallHint: a.row.InstallHint, Line: a.row.Line}
			if v, ok := capabilities[m.Key]; ok && !v {
				m.Disabled = true
			}
			for _, sc := range runs {
				if len(m.UsedBy) == 0 || slices.ContainsFunc(m.UsedBy, func(u string) bool { return sameScenario(sc, u) }) {
					m.Selected = append(m.Selected, sc)
					blocked[sc] = true
				}
			}
			m.Unselected = len(m.UsedBy) > 0 && len(m.Selected) == 0
			s.Details = append(s.Details, m)
		}
	}
	s.Runnable = []string{}
	for _, sc := range runs {
		if blocked[sc] {
			s.Inconclusive = append(s.Inconclusive, sc)
		} else {
			s.Runnable = append(s.Runnable, sc)
		}
	}
	s.Blocking = s.Missing > 0 && len(s.Runnable) == 0 && len(s.Inconclusive) > 0
	return s
}

// MissingFor is the first row of rows (one scenario's requirements,
// checked on the hosts it runs on) that is missing and that scenario id
// needs — its UsedBy names id, or names no scenario at all — else nil:
// the requirement that makes its run INCONCLUSIVE-env before it starts.
func MissingFor(rows []ReqRow, id string) *ReqRow {
	for i, r := range rows {
		if r.Present != ReqMissing {
			continue
		}
		if len(r.UsedBy) == 0 || slices.ContainsFunc(r.UsedBy, func(u string) bool { return sameScenario(id, u) }) {
			return &rows[i]
		}
	}
	return nil
}

// sameScenario: a and b name the same scenario, or one is an arm of the
// other ("S3" and "S3a" or "S3.a"; never "S1" and "S10").
func sameScenario(a, b string) bool {
	if a == b {
		return true
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	if !strings.HasPrefix(b, a) {
		return false
	}
	c := b[len(a)]
	return c < '0' || c > '9'
}

// Line is the summary line probe ends with, e.g.
// "capabilities: 3 present, 1 missing: systemd (h1) → S2, S3 INCONCLUSIVE-env; runnable: S1".
func (s CapSummary) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "capabilities: %d present, %d missing", s.Present, s.Missing)
	if s.Unknown > 0 {
		fmt.Fprintf(&b, ", %d unknown", s.Unknown)
	}
	if s.BySUT > 0 {
		fmt.Fprintf(&b, ", %d by-sut", s.BySUT)
	}
	for i, m := range s.Details {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s (%s)", m.name(), strings.Join(m.Hosts, ","))
		switch {
		case m.Unselected:
			b.WriteString(" → its scenarios not selected")
		case len(m.Selected) > 0:
			fmt.Fprintf(&b, " → %s INCONCLUSIVE-env", strings.Join(m.Selected, ", "))
		}
		if m.Disabled {
			b.WriteString(", disabled in env.yml")
		}
	}
	if s.Missing > 0 {
		if len(s.Runnable) == 0 {
			b.WriteString("; nothing can run, BLOCKING")
		} else {
			fmt.Fprintf(&b, "; runnable: %s", strings.Join(s.Runnable, ", "))
		}
	}
	return b.String()
}

// name is how the summary names the requirement: its env.yml key.
func (m MissingReq) name() string {
	if m.Key != "" {
		return m.Key
	}
	return m.Requirement
}

// Problem is the one line a validate prints for m: what is missing where,
// the scenarios it makes INCONCLUSIVE-env, and the fix.
func (m MissingReq) Problem(envPath string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s missing on %s", m.Requirement, strings.Join(m.Hosts, ","))
	switch {
	case m.Unselected:
		b.WriteString(" (its scenarios are not selected in dstgen.scenarios)")
	case len(m.Selected) > 0:
		fmt.Fprintf(&b, " → %s INCONCLUSIVE-env", strings.Join(m.Selected, ", "))
	}
	if m.Disabled {
		fmt.Fprintf(&b, "; dstgen.capabilities.%s: false in %s says so", m.Key, envPath)
		return b.String()
	}
	b.WriteString("; fix: ")
	if m.InstallHint != "" {
		b.WriteString(strings.TrimSpace(strings.ReplaceAll(m.InstallHint, "`", "")) + ", or ")
	} else {
		b.WriteString("install it, or ")
	}
	fmt.Fprintf(&b, "set dstgen.capabilities.%s: false in %s to say the hosts lack it", m.Key, envPath)
	return b.String()
}

var versionNum = lazyre.New(`\d+(\.\d+)+`)

// meetsFloor compares the first dotted number of version against floor's;
// a floor without one ("any") or an unparseable version passes.
func meetsFloor(version, floor string) bool {
	f := versionNum.FindString(floor)
	v := versionNum.FindString(version)
	if f == "" || v == "" {
		return true
	}
	fs, vs := strings.Split(f, "."), strings.Split(v, ".")
	for i := range max(len(fs), len(vs)) {
		var a, b int
		if i < len(vs) {
			a, _ = strconv.Atoi(vs[i])
		}
		if i < len(fs) {
			b, _ = strconv.Atoi(fs[i])
		}
		if a != b {
			return a > b
		}
	}
	return true
}
