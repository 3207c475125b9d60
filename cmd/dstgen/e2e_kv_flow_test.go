package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/history"
)

// TestKVCardFlow is the design card's flow on the kv example: `dstgen init
// --yes`, env.yml from `dstgen testbed env --into` (hosts, ssh, the
// capabilities the namespaces lack), `task validate`, `task deploy` (kvnode
// built for each host from its Go package, its config rendered per node),
// `task run:scenario` for S1 and S2 as generated, a benchmark, then
// `dstgen analyze results/` judging each with linearizability — on two
// client hosts, each running a share of every workload into one merged
// history.
func TestKVCardFlow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds dstgen and kvnode, brings up a 5-host testbed")
	}
	t.Parallel()
	f := newFlow(t, "kv", "kvnode,kvnode,kvnode,client,client", 5)
	ra := f.card("S1", "S2")
	for _, id := range []string{"S1", "S2"} {
		if v := ra.verdicts[id]; v != "PASS-smoke" {
			rep := analyzeReport(t, f.dstgen, absIn(f.dir, ra.sessions[id]))
			t.Errorf("%s: verdict %q, want PASS-smoke (the stale-read bug is off); %s", id, v, js(scenarioOf(rep, id)["reasons"]))
		}
		f.checkersRan(ra.sessions[id], id, "linearizability")
	}
	if ra.bench != "DONE" {
		t.Errorf("latest.benchmark %q, want DONE (linearizability judged on its history)", ra.bench)
	}
	// Both client hosts ran a share; the check read one merged history.
	for _, id := range []string{"S1", "S2"} {
		sdir := absIn(f.dir, ra.sessions[id])
		r := runOf(t, sdir, id)
		if r.Timeline == nil || !slices.Equal(r.Timeline.Drivers, []string{"h4", "h5"}) {
			t.Errorf("%s: timeline drivers %+v, want both client hosts", id, r.Timeline)
			continue
		}
		_, ops, _, err := history.ReadFile(filepath.Join(sdir, "artifacts", id, "history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		per := map[string]int{}
		for _, op := range ops {
			host, _, _ := strings.Cut(op.ProcessID, "/")
			per[host]++
		}
		if per["h4"] == 0 || per["h5"] == 0 {
			t.Errorf("%s: merged history ops per client host %v, want both", id, per)
		}
		t.Logf("%s: %d ops in the merged history (%v)", id, len(ops), per)
	}
}
