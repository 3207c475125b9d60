package nemesis

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
)

// rows is every row of docs/nemesis.md §1–§5, in its order. A row whose
// implementation is in this package is replaced by that implementation's
// Info in Catalog.
var rows = []Info{
	{ID: "kill-9", Group: "process", Summary: "hard kill of the SUT process"},
	{ID: "kill-term", Group: "process", Summary: "graceful stop of the SUT process"},
	{ID: "pause", Group: "process", Summary: "SIGSTOP, later SIGCONT (a GC-pause / freeze)"},
	{ID: "restart", Group: "process", Summary: "stop and start the SUT (its unit or job)"},
	{ID: "container-restart", Group: "process", Summary: "container or pod restart"},
	{ID: "partition-full", Group: "network", Summary: "full partition between the targets and the rest"},
	{ID: "partition-asym", Group: "network", Summary: "the targets stop receiving from the rest; they can still send"},
	{ID: "packet-loss", Group: "network", Summary: "packet loss on the targets' traffic"},
	{ID: "latency", Group: "network", Summary: "added latency on the targets' traffic"},
	{ID: "bandwidth", Group: "network", Summary: "bandwidth cap on the targets' traffic"},
	{ID: "partition-minority", Group: "network", Summary: "a minority cut off from the majority"},
	{ID: "partition-majority", Group: "network", Summary: "the majority cut off from the minority and from the clients"},
	{ID: "leader-isolation", Group: "network", Summary: "the current leader cut off from its peers"},
	{ID: "partition-bridge", Group: "network", Summary: "two halves that both still see one middle node"},
	{ID: "partition-ring", Group: "network", Summary: "each node sees only its two neighbours, so majorities overlap"},
	{ID: "packet-dup", Group: "network", Summary: "packet duplication"},
	{ID: "packet-reorder", Group: "network", Summary: "packet reordering"},
	{ID: "metadata-outage", Group: "network", Summary: "traffic to a metadata store (ip+port) dropped"},
	{ID: "disk-full", Group: "storage", Summary: "the SUT's data filesystem filled by a tagged file"},
	{ID: "fsync-loss", Group: "storage", Summary: "writes lost on power failure"},
	{ID: "slow-disk", Group: "storage", Summary: "IO throttled"},
	{ID: "bitflip", Group: "storage", Summary: "bit flips on read or write"},
	{ID: "fsync-fail", Group: "storage", Summary: "fsync returns an error"},
	{ID: "storage-corrupt", Group: "storage", Summary: "typed storage corruption (EIO, bit rot)"},
	{ID: "backup-restore-race", Group: "storage", Summary: "backup or restore during the workload"},
	{ID: "clock-skew", Group: "time", Summary: "the targets' clock set off by an offset"},
	{ID: "clock-slow", Group: "time", Summary: "a rate-skewed clock"},
	{ID: "restart-wrong-order", Group: "cluster", Summary: "rolling restart in an order that crosses leadership"},
	{ID: "split-brain", Group: "cluster", Summary: "partition combined with leadership-timeout pressure"},
	{ID: "slow-follower", Group: "cluster", Summary: "one follower's traffic delayed"},
	{ID: "mixed-version", Group: "cluster", Summary: "half the nodes on version N, half on N+1"},
	{ID: "rolling-upgrade", Group: "cluster", Summary: "upgrade one node at a time under load"},
	{ID: "config-divergence", Group: "cluster", Summary: "one node carries a config value the others do not"},
	{ID: "auth-divergence", Group: "cluster", Summary: "auth secret rotated on all but one node"},
	{ID: "compaction-during-reads", Group: "cluster", Summary: "compaction during a read-heavy workload"},
	{ID: "rebalance-during-writes", Group: "cluster", Summary: "rebalance or membership change during writes"},
	{ID: "custom", Group: "cluster", Summary: "inject / heal / evidence commands written in scenarios.yml"},
}

// notBuiltIn says why a row has no built-in implementation.
const notBuiltIn = "not built in: needs SUT- or platform-specific machinery; give custom: {inject, heal, evidence} commands in scenarios.yml"

// builtins gathers the implementations of every file of the package.
func builtins() map[string]Nemesis {
	m := map[string]Nemesis{}
	for _, group := range [][]Nemesis{networkNemeses(), netemNemeses(), processNemeses(), storageNemeses(), clockNemeses(), customNemeses()} {
		for _, n := range group {
			m[n.Info().ID] = n
		}
	}
	return m
}

// Catalog lists every row of docs/nemesis.md, built in or not, in the
// document's order.
func Catalog() []Info {
	b := builtins()
	out := make([]Info, 0, len(rows))
	for _, r := range rows {
		if n, ok := b[r.ID]; ok {
			out = append(out, n.Info())
			continue
		}
		r.Reason = notBuiltIn
		out = append(out, r)
	}
	return out
}

// Lookup returns the implementation of nemesis id. A row of the catalog
// that is not built in is an error saying so, and an unknown id an error
// naming the known ones.
func Lookup(id string) (Nemesis, error) {
	if n, ok := builtins()[id]; ok {
		return n, nil
	}
	for _, r := range rows {
		if r.ID == id {
			return nil, fmt.Errorf("nemesis %q is %s", id, notBuiltIn)
		}
	}
	ids := make([]string, 0, len(rows))
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	sort.Strings(ids)
	return nil, fmt.Errorf("unknown nemesis %q (known: %s; see `dstgen nemesis list`)", id, strings.Join(ids, ", "))
}

// Custom returns the nemesis that runs f.Custom's commands under the id of
// the row it stands for (rolling-upgrade, compaction-during-reads, …).
func Custom(id string) Nemesis { return customNemesis{id: id} }

// ForFault finds the nemesis a scenarios.yml fault names: its custom commands when it has
// them (under the row's id), else the built-in row. A row that is not
// built in yields a MissingCapability (INCONCLUSIVE-env), an unknown id an
// error (bad input).
func ForFault(f scenarios.Fault) (Nemesis, *session.MissingCapability, error) {
	if f.Custom != nil {
		return Custom(f.Nemesis), nil, nil
	}
	n, err := Lookup(f.Nemesis)
	if err == nil {
		return n, nil, nil
	}
	for _, info := range Catalog() {
		if info.ID == f.Nemesis {
			return nil, &session.MissingCapability{Requirement: "nemesis " + f.Nemesis,
				Reason: fmt.Sprintf("%v (scenarios.yml:%d)", err, f.Line)}, nil
		}
	}
	return nil, nil, err
}
