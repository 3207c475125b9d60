package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The leader is what a majority of the SUT hosts says: an isolated
// ex-leader listed first that still names itself is outvoted, and with no
// majority there is no leader, never the first answer.
func TestLeaderIsWhatAMajoritySays(t *testing.T) {
	for _, tc := range []struct {
		name string
		say  map[string]string // host → the leader it names ("" = query fails)
		want string
		err  string
	}{
		{"all agree", map[string]string{"h1": "h2", "h2": "h2", "h3": "h2"}, "h2", ""},
		{"isolated ex-leader listed first", map[string]string{"h1": "h1", "h2": "h3", "h3": "h3"}, "h3", ""},
		{"one host down, the rest agree", map[string]string{"h1": "", "h2": "h3", "h3": "h3"}, "h3", ""},
		{"no majority", map[string]string{"h1": "h1", "h2": "h2", "h3": ""}, "", "no leader named by a majority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newFakeWorld(t, 3)
			for h, l := range tc.say {
				if l != "" {
					if err := os.WriteFile(filepath.Join(w.workdir(h), "leader"), []byte(l+"\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			o := testOrchestrator(t, w)
			u := unitOf()
			u.Scenario.LeaderQuery = `cat "$HOME/leader"`
			r := &unitRun{o: o, u: u}
			got, err := r.leaderOf(newCluster(w.Hosts(nil)))(context.Background())
			if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("leader = %q, %v; want %q, %q", got, err, tc.want, tc.err)
			}
		})
	}
}

// The leader query runs with the workload's DSTGEN_* variables, so a query
// written like the driver's (`etcdctl --endpoints=$DSTGEN_SUT_HOSTS …`)
// reaches the SUT (docs/scenarios-yml.md §3.7).
func TestLeaderQueryHasTheWorkloadsEnvironment(t *testing.T) {
	w := newFakeWorld(t, 3)
	o := testOrchestrator(t, w)
	u := unitOf()
	u.Scenario.LeaderQuery = `echo "$DSTGEN_SUT_HOSTS" | cut -d, -f2`
	r := &unitRun{o: o, u: u, a: attemptIn(o, 1, 0)}
	r.rec = newRecord(o, u, r.a, time.Now())
	cl := newCluster(w.Hosts(nil))
	p, err := r.place(cl)
	if err != nil {
		t.Fatal(err)
	}
	r.progress.place.Store(&p)
	got, err := r.leaderOf(cl)(context.Background())
	if got != "h2" || err != nil {
		t.Errorf("leader = %q, %v; want h2, named by the second of DSTGEN_SUT_HOSTS", got, err)
	}
}
