package plan

import (
	"strings"
	"time"

	"github.com/dstgen/dstgen/internal/lazyre"
)

// commandRE is a backticked span: the command line a run-wiring field
// holds (docs/plan-format.md §9.6).
var commandRE = lazyre.New("`([^`]+)`")

// Command is the command line a run-wiring field holds — its first
// backticked span — and whether there is one.
func Command(field string) (string, bool) {
	m := commandRE.FindStringSubmatch(field)
	if m == nil || strings.TrimSpace(m[1]) == "" {
		return "", false
	}
	return strings.TrimSpace(m[1]), true
}

// withinRE is a quiesce field's bound: "within 30s", "within 2 min".
var withinRE = lazyre.New(`(?i)\bwithin\s+(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|seconds?|m|min|mins|minutes?)\b`)

// Within is the bound a Quiesce field states ("within 30s"); 0 when none.
func Within(field string) time.Duration {
	m := withinRE.FindStringSubmatch(field)
	if m == nil {
		return 0
	}
	unit := strings.ToLower(m[2])
	switch {
	case unit == "ms":
		unit = "ms"
	case strings.HasPrefix(unit, "m"):
		unit = "m"
	default:
		unit = "s"
	}
	d, err := time.ParseDuration(m[1] + unit)
	if err != nil {
		return 0
	}
	return d
}

// LeaderQueryOf is the scenario's leader query field, else the plan's.
func (p *Plan) LeaderQueryOf(s *Scenario) string {
	if s.LeaderQuery != "" {
		return s.LeaderQuery
	}
	return p.LeaderQuery
}

// QuiesceOf is the scenario's quiesce field, else the plan's.
func (p *Plan) QuiesceOf(s *Scenario) string {
	if s.Quiesce != "" {
		return s.Quiesce
	}
	return p.Quiesce
}

var goRunRE = lazyre.New(`(^|[\s;&|(])go\s+run\s`)

var localRE = lazyre.New(`(^|[^A-Za-z0-9.-])(127\.0\.0\.1|localhost|\[::1\]|0\.0\.0\.0)([^A-Za-z0-9.-]|$)`)

// LocalCommand says whether cmd can only run on this machine — `go run`
// (it builds from the source tree), or endpoints on this machine's own
// addresses — and why: such a command is never the client hosts' workload.
func LocalCommand(cmd string) (string, bool) {
	switch {
	case goRunRE.MatchString(cmd):
		return "`go run` builds from the source tree on this machine, not on a client host", true
	case localRE.MatchString(cmd):
		return "it names this machine's own addresses, which a client host cannot reach", true
	}
	return "", false
}
