package plan

import (
	"fmt"
	"strings"
)

// CapKeys returns the env.yml flag name (dstgen.capabilities.<key>) of
// every §6b requirement, in order: lower-case letters and digits, runs of
// anything else one '_', text from the first '(' on dropped, and "_2",
// "_3", ... on repeats ("" when a requirement has no letter or digit).
// The generator writes env.example.yml with these keys and the probe reads
// env.yml with them, so both must come from here.
func CapKeys(reqs []EnvReq) []string {
	keys := make([]string, len(reqs))
	seen := map[string]int{}
	for i, rq := range reqs {
		k := capKey(rq.Requirement)
		if k == "" {
			continue
		}
		seen[k]++
		if seen[k] > 1 {
			k = fmt.Sprintf("%s_%d", k, seen[k])
		}
		keys[i] = k
	}
	return keys
}

func capKey(req string) string {
	if i := strings.Index(req, "("); i > 0 {
		req = req[:i]
	}
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(req) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			under = false
		} else if !under && b.Len() > 0 {
			b.WriteByte('_')
			under = true
		}
	}
	return strings.TrimRight(b.String(), "_")
}
