package plan

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dstgen/dstgen/internal/lazyre"
)

// durationRE finds "<number> <unit>" in lower-cased prose; the unit must end
// at a word boundary and not start a rate ("ops/s" has no number before it,
// "5 s/op" is refused by the caller).
var durationRE = lazyre.New(`(\d+(?:\.\d+)?)\s*(ms|msec|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?)\b`)

// runLengthLead ends the text before a duration that the plan states as the
// run's length: "run for 5 min", "duration: 60 s", "lasting 10 min", and a
// plain "for 5 min".
var runLengthLead = lazyre.New(`(?:\brun(?:s|ning)?\s+for|\bduration(?:\s+of)?\s*[:=]?|\blasting|\btotal\s+(?:run\s+)?time\s*[:=]?|\b(for))\s*$`)

// perOpWords mark a clause about one operation's timing (a request
// timeout, a lock hold, a retry back-off, a latency bound), where a "for N s"
// is not the run length.
var perOpWords = lazyre.New(`\b(?:timeouts?|ttl|lease|hold|holds|holding|sleep|sleeps|wait|waits|pause|retry|retries|retried|backoff|back-off|latency|within|deadline|interval|every|delay|think|heartbeat|window|p\d+)\b`)

// bareFollowers are the words that may follow a duration standing at the
// start of a clause for it to still be the run length: "10 min",
// "10 min after 1 min warm-up", "5 min total". Anything else ("1 s request
// timeout", "5s TTL") qualifies the number as something other than the run.
var bareFollowers = map[string]bool{
	"after": true, "of": true, "total": true, "run": true, "runs": true, "long": true, "wall": true,
	"at": true, "with": true, "then": true, "plus": true, "followed": true, "in": true,
}

// WorkloadDuration returns the run length a scenario's Workload prose states
// explicitly, if it does: a clause that is only a duration ("…, 10 min",
// "…, 10 min after 1 min warm-up") or a duration introduced as the run's
// length ("for 5 min", "run for 120 s", "duration 60 s"). A per-request
// timeout, a lock TTL, a latency bound, a polling period or "within N s" is
// never the run length. When the prose states none, the run length is the
// budget tier's (smoke / hardening / release) and ok is false.
func WorkloadDuration(text string) (d time.Duration, ok bool) {
	for _, clause := range clauses(strings.ToLower(text)) {
		if d, ok := clauseRunLength(clause); ok {
			return d, true
		}
	}
	return 0, false
}

// clauses splits prose on ',' and ';' outside parentheses and backticks;
// a digit-grouping comma ("1,000") does not split.
func clauses(s string) []string {
	var out []string
	depth, tick, start := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '`':
			tick = !tick
		case tick:
		case c == '(' || c == '[':
			depth++
		case (c == ')' || c == ']') && depth > 0:
			depth--
		case depth == 0 && (c == ';' || c == ',' && !(i > 0 && isDigit(s[i-1]) && i+3 < len(s) && isDigit(s[i+1]) && isDigit(s[i+3]))):
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func clauseRunLength(clause string) (time.Duration, bool) {
	c := strings.TrimSpace(clause)
	for _, lead := range []string{"and ", "then ", "plus "} {
		c = strings.TrimSpace(strings.TrimPrefix(c, lead))
	}
	for _, m := range durationRE.FindAllStringSubmatchIndex(c, -1) {
		i, j := m[0], m[1]
		if i > 0 && (isWordByte(c[i-1]) || c[i-1] == '.' || c[i-1] == '+') {
			continue // "T+30s", "v1.5s", "x10s" are not durations here
		}
		if j < len(c) && c[j] == '/' {
			continue // "5 s/op" is a rate
		}
		d, ok := spanOf(c[m[2]:m[3]], c[m[4]:m[5]])
		if !ok {
			continue
		}
		before := strings.TrimSpace(c[:i])
		if before == "" {
			next := strings.Fields(c[j:])
			if len(next) == 0 || bareFollowers[strings.Trim(next[0], ".:")] {
				return d, true
			}
			continue
		}
		lm := runLengthLead.FindStringSubmatchIndex(before)
		if lm == nil {
			continue
		}
		// A plain "for" is the run length only in a clause that is not
		// about one operation's timing: "hold the lock for 200 ms" is not.
		if lm[2] >= 0 && perOpWords.MatchString(before[:lm[2]]) {
			continue
		}
		return d, true
	}
	return 0, false
}

func spanOf(num, unit string) (time.Duration, bool) {
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, false
	}
	u, ok := durationUnit(unit)
	if !ok || v*float64(u) >= math.MaxInt64 {
		return 0, false
	}
	return time.Duration(v * float64(u)), true
}
