// Package nemesis owns the fault catalog of docs/nemesis.md: for each row
// an inject, a heal, and the injector-side landing signal, read from the
// object dstgen changed (a rule counter, a pid, a measured offset), never
// from the injector's own "OK" (docs/nemesis.md §6).
//
// Every fault is tagged so that anyone can heal it later, after a crash of
// the process that made it: before a fault is applied, its undo script is
// written to <workdir>/nemesis/active/<epoch>.<kind>.sh on the host, and
// HealAll runs and removes every such script, then sweeps what carries the
// dstgen tag (the DSTGEN iptables chains, .dstgen-fill-* files). Nothing
// without the tag is touched.
//
// Data flows down through the files of this package:
//
//	nemesis.go   the types, the catalog and the lookup
//	tag.go       undo scripts on the host, HealAll
//	network.go   iptables partitions and the target shapes
//	netem.go     tc netem latency / loss / bandwidth where the kernel has it
//	proxied.go   the same through `dstgen proxy` where it has not
//	process.go   kill-9, kill-term, pause, restart
//	storage.go   disk-full
//	clock.go     clock-skew
//	custom.go    commands written in scenarios.yml
package nemesis

import (
	"context"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
)

// Exec runs one shell script on a host, bounded by the transport's 30 s
// ceiling, and returns its stdout. A non-zero exit is an error carrying
// the first line of stderr. Scripts are run by /bin/sh as the SSH user;
// the faults that need root say so in Info.Needs.
type Exec interface {
	Run(ctx context.Context, h env.Host, script string) (stdout string, err error)
}

// Host is a machine a fault can touch, with what the nemeses need to know
// about the SUT on it.
type Host struct {
	env.Host
	Workdir string // the host's remote work dir (env.HostWorkdir)
	// SUT is nil when the host runs no SUT process.
	SUT *SUT
}

// SUT says how to find and restart the SUT process on one host.
type SUT struct {
	// PIDFile holds the SUT's pid (a dstgen job's <workdir>/jobs/<id>/pid);
	// Unit is the systemd unit when it runs under systemd; Pattern is a
	// `pgrep -f` pattern used when neither is set. Namespaced hosts share
	// one pid space, so a pattern must name something of this host only
	// (its data dir, its address).
	PIDFile string
	Unit    string
	Pattern string
	// DataDir is where disk-full puts its fill file.
	DataDir string
	// Logs are the SUT's log files on the host (victim log markers).
	Logs []string
	// StartScript is the shell text that starts the SUT on this host the
	// way deploy does (its job or unit); "" = dstgen cannot restart it. A
	// kill arms it, guarded by "not running", as its undo script, so a
	// heal — or `dstgen heal` after a crash — brings the SUT back.
	StartScript string
	// Bootstrap is set for a SUT whose members start in order
	// (sut.bootstrap): a restart of this member follows bootorder's rule
	// over Bootstrap.Cluster instead of StartScript alone.
	Bootstrap *Bootstrap
}

// Bootstrap is what an ordered restart needs of one member.
type Bootstrap struct {
	// StartScript starts this member as the bootstrap member (its job or
	// unit running sut.bootstrap.command).
	StartScript string
	Rank        string   // sut.bootstrap.rank rendered for this member
	Health      []string // its sut.health commands, rendered
	// First is sut.bootstrap.health, the check of this member while it is
	// the only one ("" = Health).
	First string
	// Ready bounds the wait for the bootstrap member's health.
	Ready time.Duration
	// Cluster is every SUT member (this one included), in env.yml
	// order, each with its own SUT and Bootstrap: the rule looks at all
	// of them, whichever hosts a heal was given.
	Cluster []Host
}

// Fault is one window to inject, with its targets already resolved.
type Fault struct {
	Epoch string // fault_epoch, e.g. "S1-w1"
	// Session is the session id (its directory's name) of the run that
	// injects it: the tags on the hosts — undo scripts, rule comments,
	// fill files, toxics — carry it, so one session's leftovers never pass
	// for another's faults ("" for a fault injected by hand).
	Session string
	Nemesis string
	Targets []Host // the hosts the fault is applied to
	// Cluster is every SUT host (targets included), in env.yml order;
	// partitions cut between Targets and the rest of Cluster, and the
	// shapes (bridge, ring, minority) are drawn over it.
	Cluster []Host
	// Clients are the hosts that run the workload; partition-majority
	// also cuts them off the majority ("from outside").
	Clients []Host
	Params  map[string]string
	Custom  *scenarios.Custom
	// Pick is the seed-derived number for any choice the nemesis makes
	// (which half is which, which neighbour), so a re-run repeats it.
	Pick int64
	For  time.Duration // planned length; 0 = instantaneous (kill-9)
	// Primed is what Prime returned for this fault (nil: no reading ahead).
	Primed any
	// Lease is how long a network fault outlives the last reading of its
	// evidence: each host runs a dead-man timer that heals it from its undo
	// script unless dstgen reads (and so renews) it in time — a dstgen that
	// crashed or lost its line never leaves a host cut off (0 = 30 s).
	Lease time.Duration
}

// Nemesis is one row of the catalog that dstgen can inject.
type Nemesis interface {
	Info() Info
	// Inject applies f. The undo script is on the host before the fault
	// is, so a crash between the two leaves something HealAll removes.
	Inject(ctx context.Context, x Exec, f Fault) (Active, error)
}

// Primer is a nemesis that takes a reading of what it will fault ahead of
// its window — the orchestrator calls Prime about a second before the
// scheduled instant and hands the result to Inject as Fault.Primed — so
// that its evidence compares the window with the traffic just before it
// (a proxy the SUT stopped using carried nothing then), and Inject has no
// reading of its own to make before the fault lands.
type Primer interface {
	Prime(ctx context.Context, x Exec, f Fault) (any, error)
}

// Active is a fault that has been applied.
type Active interface {
	// Evidence reads the injector-side signal now: the change since
	// injection of the object the fault altered (docs/nemesis.md §7).
	Evidence(ctx context.Context) (session.Evidence, error)
	// TargetCheck is the proof that the fault hit the right object (the
	// rule sits in a chain hooked from INPUT, the qdisc on the SUT's
	// interface, the signalled pid is the SUT's); nil when not applicable.
	TargetCheck(ctx context.Context) (*session.Evidence, error)
	// Heal undoes the fault. It is idempotent.
	Heal(ctx context.Context) error
}

// Info describes a row of docs/nemesis.md.
type Info struct {
	ID      string
	Group   string // process | network | storage | time | cluster
	Summary string
	// BuiltIn is false for the rows dstgen lists but cannot inject by
	// itself; Reason says why, and a scenario naming one needs a custom
	// command (docs/nemesis.md §8).
	BuiltIn bool
	Reason  string
	// Needs are the capabilities the probe checks before a run that uses
	// it: "root", "iptables", "tc-netem", "proxy", "kill", "clock".
	Needs []string
	// Params are the knobs scenarios.yml faults[].params may set, with
	// their defaults, as "name=default: meaning".
	Params []string
	// Injector and Victim name the evidence kinds it records.
	Injector string
	Victim   string
}

// checkTag refuses an epoch or session id that could not name a file or
// an iptables comment, or that together run past 64 characters.
func (f Fault) checkTag() error {
	if err := checkName("fault epoch", f.Epoch); err != nil {
		return err
	}
	if f.Session != "" {
		return checkName("session id and fault epoch", f.tag())
	}
	return nil
}

// tag names what this fault leaves on the hosts: "<session>.<epoch>", or
// the epoch alone for a fault injected by hand (docs/nemesis.md §6).
func (f Fault) tag() string {
	if f.Session == "" {
		return f.Epoch
	}
	return f.Session + "." + f.Epoch
}
