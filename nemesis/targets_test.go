package nemesis

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/env"
)

func cluster(n int) []Host {
	var hs []Host
	for i := 1; i <= n; i++ {
		roles := []string{"etcd"}
		if i == 1 {
			roles = append(roles, "seed")
		}
		hs = append(hs, Host{Host: env.Host{Name: "n" + string(rune('0'+i)), Address: "10.77.0." + string(rune('0'+i)), Roles: roles}})
	}
	return hs
}

func names(hs []Host) []string { return hostNames(hs) }

func TestResolve(t *testing.T) {
	leaderSays := func(out string, err error) func(context.Context) (string, error) {
		return func(context.Context) (string, error) { return out, err }
	}
	tests := []struct {
		name   string
		expr   string
		n      int
		leader func(context.Context) (string, error)
		want   []string
		count  int // when want is nil: how many hosts, chosen by pick
		err    string
	}{
		{name: "host name", expr: "n2", n: 3, want: []string{"n2"}},
		{name: "comma list in cluster order", expr: "n3, n1", n: 3, want: []string{"n1", "n3"}},
		{name: "comma list with a role", expr: "role:seed,n3", n: 3, want: []string{"n1", "n3"}},
		{name: "role", expr: "role:etcd", n: 3, want: []string{"n1", "n2", "n3"}},
		{name: "all", expr: "all", n: 3, want: []string{"n1", "n2", "n3"}},
		{name: "leader by name", expr: "leader", n: 3, leader: leaderSays("n2\n", nil), want: []string{"n2"}},
		{name: "leader by URL", expr: "leader", n: 3, leader: leaderSays("http://10.77.0.3:2379, 8e9e05c52164694d, 3.5.9, true", nil), want: []string{"n3"}},
		{name: "random", expr: "random", n: 5, count: 1},
		{name: "one", expr: "one", n: 5, count: 1},
		{name: "minority of 5", expr: "minority", n: 5, count: 2},
		{name: "majority of 5", expr: "majority", n: 5, count: 3},
		{name: "minority of 3", expr: "minority", n: 3, count: 1},
		{name: "majority of 4", expr: "majority", n: 4, count: 3},
		{name: "unknown host", expr: "n9", n: 3, err: `unknown host "n9" (hosts: n1, n2, n3; or role:R`},
		{name: "unknown role", expr: "role:db", n: 3, err: `no host has role "db" (roles: etcd, seed)`},
		{name: "empty", expr: " ", n: 3, err: "empty target"},
		{name: "empty item", expr: "n1,,n2", n: 3, err: "empty item"},
		{name: "no cluster", expr: "all", n: 0, err: "no hosts"},
		{name: "minority of 2", expr: "minority", n: 2, err: "has no minority"},
		{name: "leader without a query", expr: "leader", n: 3, err: "needs the scenario's leader_query"},
		{name: "leader query fails", expr: "leader", n: 3, leader: leaderSays("", errors.New("exit 1")), err: "run the leader query: exit 1"},
		{name: "leader names no host", expr: "leader", n: 3, leader: leaderSays("10.9.9.9:2379", nil), err: `printed "10.9.9.9:2379", which names none of the hosts n1, n2, n3`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(context.Background(), tc.expr, cluster(tc.n), 12345, tc.leader)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want it to contain %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil {
				if !reflect.DeepEqual(names(got), tc.want) {
					t.Fatalf("got %v, want %v", names(got), tc.want)
				}
				return
			}
			if len(got) != tc.count {
				t.Fatalf("got %v, want %d hosts", names(got), tc.count)
			}
			again, _ := Resolve(context.Background(), tc.expr, cluster(tc.n), 12345, nil)
			if !reflect.DeepEqual(names(got), names(again)) {
				t.Fatalf("the same pick resolved %v, then %v", names(got), names(again))
			}
		})
	}
}

// TestResolvePickVaries shows the pick really chooses: over many picks,
// random reaches every host, and minority/majority always split the
// cluster into complements.
func TestResolvePickVaries(t *testing.T) {
	c := cluster(5)
	seen := map[string]bool{}
	for pick := int64(0); pick < 200; pick++ {
		r, err := Resolve(context.Background(), "random", c, pick, nil)
		if err != nil {
			t.Fatal(err)
		}
		seen[r[0].Name] = true
		mi, _ := Resolve(context.Background(), "minority", c, pick, nil)
		ma, _ := Resolve(context.Background(), "majority", c, pick, nil)
		both := map[string]int{}
		for _, h := range append(mi, ma...) {
			both[h.Name]++
		}
		if len(both) != 5 || len(mi)+len(ma) != 5 {
			t.Fatalf("pick %d: minority %v and majority %v are not complements", pick, names(mi), names(ma))
		}
	}
	if len(seen) != 5 {
		t.Fatalf("200 picks reached only %v", seen)
	}
}

func TestMatchHost(t *testing.T) {
	hs := cluster(3)
	tests := []struct {
		name, out, want string
	}{
		{"name", "n1", "n1"},
		{"address", "leader is 10.77.0.2 now", "n2"},
		{"url", "http://10.77.0.3:2379", "n3"},
		{"host:port", "10.77.0.1:2380", "n1"},
		{"json", `{"leader":"n2"}`, "n2"},
		{"etcdctl table row", "| https://10.77.0.2:2379 | 8e9e | 3.5.9 | true |", "n2"},
		{"first token wins", "n3 n1", "n3"},
		{"prefix is not a match", "n10 10.77.0.10", ""},
		{"nothing", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, ok := MatchHost(tc.out, hs)
			if ok != (tc.want != "") || h.Name != tc.want {
				t.Fatalf("MatchHost(%q) = %q, %v; want %q", tc.out, h.Name, ok, tc.want)
			}
		})
	}
}

func FuzzMatchHost(f *testing.F) {
	for _, s := range []string{"n1", "http://10.77.0.3:2379", "[::1]:80", "10.77.0.1:", "://", "http://[fe80::1%25eth0]:1/", "\x00n2\xff", "http://n%31:80/"} {
		f.Add(s)
	}
	hs := cluster(3)
	f.Fuzz(func(t *testing.T, out string) {
		h, ok := MatchHost(out, hs)
		if !ok {
			return
		}
		if !strings.Contains(out, h.Name) && !strings.Contains(out, h.Address) {
			t.Fatalf("MatchHost(%q) = %s, whose name and address are not in the output", out, h.Name)
		}
	})
}
