package env

import (
	"fmt"
	"sort"
	"strings"
)

// Select resolves a target to hosts, in env.yml order: a host name, role:R,
// all, or a comma-separated list of those. An unknown target is an error
// listing what is valid, so a typo never silently runs on nothing.
func (e *Env) Select(target string) ([]Host, error) {
	if strings.TrimSpace(target) == "" {
		return nil, fmt.Errorf("empty target; valid: %s", e.validTargets())
	}
	want := make([]bool, len(e.Hosts))
	for _, t := range strings.Split(target, ",") {
		t = strings.TrimSpace(t)
		matched := false
		switch {
		case t == "all":
			for i := range want {
				want[i] = true
			}
			matched = len(e.Hosts) > 0
		case strings.HasPrefix(t, "role:"):
			role := strings.TrimPrefix(t, "role:")
			for i, h := range e.Hosts {
				for _, r := range h.Roles {
					if r == role {
						want[i] = true
						matched = true
					}
				}
			}
		default:
			for i, h := range e.Hosts {
				if h.Name == t {
					want[i] = true
					matched = true
				}
			}
		}
		if !matched {
			return nil, fmt.Errorf("unknown target %q; valid: %s", t, e.validTargets())
		}
	}
	var hs []Host
	for i, ok := range want {
		if ok {
			hs = append(hs, e.Hosts[i])
		}
	}
	return hs, nil
}

func (e *Env) validTargets() string {
	names := []string{"all"}
	roles := map[string]bool{}
	for _, h := range e.Hosts {
		for _, r := range h.Roles {
			roles[r] = true
		}
	}
	var rs []string
	for r := range roles {
		rs = append(rs, "role:"+r)
	}
	sort.Strings(rs)
	names = append(names, rs...)
	for _, h := range e.Hosts {
		names = append(names, h.Name)
	}
	return strings.Join(names, ", ")
}
