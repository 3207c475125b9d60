package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/dstgen/dstgen/internal/oneline"
)

// Resolve turns a target expression into hosts of cluster (the SUT hosts,
// env.yml order). The result is always in cluster order, without repeats.
//
//	NAME                 the host of that name
//	role:R               every host with role R (env.Host.Roles)
//	leader               the host leader() names (its name, address or URL)
//	random, one          one host, chosen by pick
//	minority             floor((n-1)/2) hosts chosen by pick (n = len(cluster))
//	majority             the other n − floor((n-1)/2) hosts: with the same
//	                     pick, minority and majority are complements
//	all                  every host
//	#N                   the N-th host (1-based, cluster order): "node 3"
//	A,B,…                a comma list of names, role:R and #N items
//
// pick is the schedule's seed-derived number, so a re-run resolves the
// same hosts. An unknown name or role, an empty result (the minority of a
// 1- or 2-host cluster), or a leader that names no host is an error naming
// what is known. ctx bounds the leader query.
func Resolve(ctx context.Context, expr string, cluster []Host, pick int64, leader func(context.Context) (string, error)) ([]Host, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, fmt.Errorf("empty target expression (%s)", knownTargets(cluster))
	}
	if len(cluster) == 0 {
		return nil, fmt.Errorf("target %q: the cluster has no hosts", expr)
	}
	n := len(cluster)
	switch expr {
	case "all":
		return slices.Clone(cluster), nil
	case "random", "one":
		return []Host{cluster[permutation(pick, n)[0]]}, nil
	case "minority", "majority":
		k := (n - 1) / 2
		if k == 0 {
			return nil, fmt.Errorf("target %q: a cluster of %d hosts has no minority", expr, n)
		}
		perm := permutation(pick, n)
		in := make([]bool, n)
		for _, i := range perm[:k] {
			in[i] = true
		}
		var out []Host
		for i, h := range cluster {
			if in[i] == (expr == "minority") {
				out = append(out, h)
			}
		}
		return out, nil
	case "leader":
		if leader == nil {
			return nil, fmt.Errorf("target leader needs the scenario's leader_query")
		}
		out, err := leader(ctx)
		if err != nil {
			return nil, fmt.Errorf("target leader: run the leader query: %w", err)
		}
		h, ok := MatchHost(out, cluster)
		if !ok {
			return nil, fmt.Errorf("target leader: the leader query printed %q, which names none of the hosts %s", oneline.Cut(out, 120), strings.Join(hostNames(cluster), ", "))
		}
		return []Host{h}, nil
	}
	want := make([]bool, n)
	for _, item := range strings.Split(expr, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("target %q: empty item in the comma list", expr)
		}
		if ord, ok := strings.CutPrefix(item, "#"); ok {
			k, err := strconv.Atoi(ord)
			if err != nil || k < 1 || k > n {
				return nil, fmt.Errorf("target %q: %q is not a place in a cluster of %d hosts (#1..#%d)", expr, item, n, n)
			}
			want[k-1] = true
			continue
		}
		if role, ok := strings.CutPrefix(item, "role:"); ok {
			found := false
			for i, h := range cluster {
				if slices.Contains(h.Roles, role) {
					want[i], found = true, true
				}
			}
			if !found {
				return nil, fmt.Errorf("target %q: no host has role %q (roles: %s)", expr, role, strings.Join(roles(cluster), ", "))
			}
			continue
		}
		i := slices.IndexFunc(cluster, func(h Host) bool { return h.Name == item })
		if i < 0 {
			return nil, fmt.Errorf("target %q: unknown host %q (%s)", expr, item, knownTargets(cluster))
		}
		want[i] = true
	}
	var out []Host
	for i, h := range cluster {
		if want[i] {
			out = append(out, h)
		}
	}
	return out, nil
}

// permutation is a pick-seeded order of 0..n-1.
func permutation(pick int64, n int) []int {
	return rand.New(rand.NewPCG(uint64(pick), 0x9e3779b97f4a7c15)).Perm(n)
}

func knownTargets(cluster []Host) string {
	return "hosts: " + strings.Join(hostNames(cluster), ", ") + "; or role:R, leader, random, one, minority, majority, all"
}

func hostNames(hs []Host) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Name
	}
	return out
}

func roles(hs []Host) []string {
	var out []string
	for _, h := range hs {
		for _, r := range h.Roles {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

// MatchHost finds the host a leader query's output names: the first token
// of out that equals a host's name or address, or a URL/host:port whose host
// part does. Tokens are separated by white space and by , ; " ' = ( ) { }
// (the separators of etcdctl's and JSON output), so "http://10.0.0.2:2379,"
// and {"leader":"n2"} both name their host.
func MatchHost(out string, hosts []Host) (Host, bool) {
	tokens := strings.FieldsFunc(out, func(r rune) bool {
		switch r {
		case ',', ';', '"', '\'', '=', '(', ')', '{', '}', '`':
			return true
		}
		return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
	})
	for _, tok := range tokens {
		for _, cand := range hostParts(tok) {
			for _, h := range hosts {
				if cand != "" && (cand == h.Name || cand == h.Address) {
					return h, true
				}
			}
		}
	}
	return Host{}, false
}

// hostParts is what a token may name a host by: itself, the host of a URL,
// the host of host:port, and the token without trailing punctuation.
func hostParts(tok string) []string {
	out := []string{tok}
	trimmed := strings.TrimRight(tok, ".:/]")
	if trimmed != tok {
		out = append(out, trimmed)
	}
	if strings.Contains(tok, "://") {
		if u, err := url.Parse(tok); err == nil && u.Hostname() != "" {
			out = append(out, u.Hostname())
		}
	} else if host, _, err := net.SplitHostPort(tok); err == nil {
		out = append(out, host)
	}
	return out
}

// SUTOnly keeps the hosts that run the SUT, in order.
func SUTOnly(hs []Host) []Host {
	var out []Host
	for _, h := range hs {
		if h.SUT != nil {
			out = append(out, h)
		}
	}
	return out
}
