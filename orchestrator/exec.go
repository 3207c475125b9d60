package orchestrator

import (
	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/nemesis"
)

// byName picks the hosts of hs named in names, in hs's order.
func byName(hs []nemesis.Host, names []string) []nemesis.Host {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []nemesis.Host
	for _, h := range hs {
		if want[h.Name] {
			out = append(out, h)
		}
	}
	return out
}

// toEnv is the env.Host of each host.
func toEnv(hs []nemesis.Host) []env.Host {
	out := make([]env.Host, 0, len(hs))
	for _, h := range hs {
		out = append(out, h.Host)
	}
	return out
}
