package generator

import (
	"fmt"
	"slices"

	"strconv"
	"strings"

	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/internal/oneline"
	"github.com/dstgen/dstgen/plan"
	"github.com/dstgen/dstgen/scenarios"
)

// checkerTimeoutS is the default checker budget written per scenario; the
// analyzer yields no PASS when it runs out.
const checkerTimeoutS = 300

type scenarioModel struct {
	ID, Name, TaskName string
	Falsifies, Closes  []string
	Technique          string
	Serious            bool
	Tiers              []tierModel

	Command   string
	Rate      *float64
	DurationS *float64

	// The run wiring from the plan (render_wiring.go); "" = not stated.
	FinalState, LeaderQuery, Quiesce, QuiesceTimeout string

	Faults  []scenarios.Fault
	Landing []string

	Model, Checker, History string
	FairnessFormula         string
	TimeoutS                int
	Arms                    []armModel

	WorkloadProse, FaultsProse, OracleProse, ExitCriteria string
}

type tierModel struct {
	Name                           string
	Text                           string
	NotProvided                    bool
	Reason, Revisit                string
	Size, DurationS, Faults, Seeds *float64
	SizeUnit                       string
}

type armModel struct {
	ID, Surface, Property, Model, Checker, History string
}

func fptr(v float64) *float64 { return &v }

func tierFor(name string, b plan.Budget) tierModel {
	t := tierModel{Name: name, Text: b.Text, NotProvided: b.NotProvided, Reason: b.Reason, Revisit: b.RevisitWhen}
	if strings.TrimSpace(b.Text) == "" {
		t.Text = fmt.Sprintf("TODO(%s): the plan states no %s budget", name, name)
		return t
	}
	if b.NotProvided {
		return t
	}
	pt := plan.ParseTier(b.Text)
	if n, unit, ok := pt.Size(); ok {
		t.Size, t.SizeUnit = fptr(float64(n)), unit
	}
	if pt.Duration.Known {
		t.DurationS = fptr(pt.Duration.D.Seconds())
	}
	if pt.Faults.Known {
		t.Faults = fptr(float64(pt.Faults.N))
	}
	if pt.Seeds.Known {
		t.Seeds = fptr(float64(pt.Seeds.N))
	}
	return t
}

var rateRE = lazyre.New(`(?i)(\d+(?:\.\d+)?)\s*(?:ops|req|requests|writes|reads|puts|gets)?\s*/\s*s\b`)

func scenarioFor(s plan.Scenario) scenarioModel {
	sm := scenarioModel{
		ID: s.ID, Name: s.Name, TaskName: "scenario:" + s.ID,
		Falsifies: nonNil(s.Falsifies), Closes: nonNil(s.Closes), Technique: s.Technique,
		Serious:       s.M != nil,
		WorkloadProse: s.Workload, FaultsProse: s.Faults, OracleProse: s.Oracle, ExitCriteria: s.ExitCriteria,
		History:  "artifacts/" + s.ID + "/history.jsonl",
		TimeoutS: checkerTimeoutS,
	}
	sm.Tiers = []tierModel{tierFor("smoke", s.Smoke), tierFor("hardening", s.Hardening), tierFor("release", s.Release)}
	// The release disclosure is kept verbatim; the template prints Text.
	sm.Command = fmt.Sprintf("TODO(%s.workload.command): command that runs this workload on the client host and writes %s", s.ID, sm.History)
	if m := rateRE.FindStringSubmatch(s.Workload); m != nil {
		if v, err := strconv.ParseFloat(m[1], 64); err == nil {
			sm.Rate = &v
		}
	}
	// Only a run length the prose states as such: "1 s request timeout"
	// is not one, and the tier's budget supplies the length otherwise.
	if d, ok := plan.WorkloadDuration(s.Workload); ok {
		sm.DurationS = fptr(d.Seconds())
	}
	nemText := ""
	if s.M != nil {
		nemText = s.M.Nemesis
	}
	sm.Faults = faultsFor(s.ID, s.Faults, nemText)
	sm.Landing = landingFor(s.ID, nemText, sm.Faults)
	if l := metricLanding(sm.Landing); l != nil {
		for i := range sm.Faults {
			if sm.Faults[i].Landing == nil {
				c := *l
				sm.Faults[i].Landing = &c
			}
		}
	}
	if s.M != nil {
		sm.Model = orTODO(s.M.Model, s.ID+".oracle.model", "§7.M names no model")
		sm.Checker = orTODO(s.M.Checker, s.ID+".oracle.checker", "§7.M names no checker")
	} else {
		sm.Model = "none (§7.M not applicable)"
		if s.S != nil && strings.TrimSpace(s.S.FairnessFormula) != "" {
			sm.Model = "group"
			sm.FairnessFormula = oneline.Fold(s.S.FairnessFormula)
		}
		sm.Checker = checkerFor(s.ID, s.Oracle, sm.FairnessFormula)
	}
	for _, a := range s.Arms {
		am := armModel{ID: a.ID, Surface: a.Surface, Property: a.Oracle, History: "artifacts/" + a.ID + "/history.jsonl"}
		switch {
		case a.M != nil:
			am.Model = orTODO(a.M.Model, a.ID+".oracle.model", "the arm's §7.M names no model")
			am.Checker = orTODO(a.M.Checker, a.ID+".oracle.checker", "the arm's §7.M names no checker")
		case s.M != nil:
			am.Model, am.Checker = sm.Model, sm.Checker
		default:
			am.Model = "none (§7.M not applicable)"
			am.Checker = checkerFor(a.ID, a.Oracle, "")
			if strings.Contains(strings.ToLower(a.Oracle), "fairness") && sm.FairnessFormula != "" {
				am.Model, am.Checker = sm.Model, sm.Checker
			}
		}
		sm.Arms = append(sm.Arms, am)
	}
	return sm
}

var sloRE = lazyre.New(`(?i)≤|<=|\bp(50|9[059]|99\.9)\b|latency|throughput|\bwithin\s+\d`)

// checkerFor names the checker (docs/history-and-checkers.md §5) for a scenario
// without §7.M when its Oracle text makes the kind unambiguous; otherwise
// it is a TODO, because running needs a checker.
func checkerFor(id, oracle, formula string) string {
	switch {
	case formula != "":
		return "fairness (formula-based, per group)"
	case sloRE.MatchString(oracle):
		return "metric SLO threshold (inferred from the Oracle text)"
	}
	return fmt.Sprintf("TODO(%s.oracle.checker): pick the checker for: %s", id, oneline.Fold(oracle))
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func orTODO(v, id, why string) string {
	if strings.TrimSpace(v) == "" {
		return fmt.Sprintf("TODO(%s): %s", id, why)
	}
	return oneline.Fold(v)
}

// nemesisIDs are the 33 rows of docs/nemesis.md with their generic landing
// evidence, in the catalog's order.
var nemesisIDs = []struct{ id, evidence string }{
	{"kill-9", "process-exit log line; restart timestamp / new PID"},
	{"kill-term", "shutdown log lines"},
	{"pause", "gap in heartbeat log / heartbeat metric for the paused window"},
	{"container-restart", "container/pod lifecycle event"},
	{"partition-full", "packet counters on the dropping rule; RPC timeouts on both sides"},
	{"partition-asym", "timeouts seen on one side only"},
	{"packet-loss", "netem statistics; RPC retry counters"},
	{"latency", "shift in the RPC latency histogram"},
	{"bandwidth", "throughput drop"},
	{"partition-minority", "RPC timeouts on the minority while the majority keeps committing"},
	{"partition-majority", "the majority quorum stops making progress"},
	{"leader-isolation", "the leader sees peers go silent; the rest elect a new leader"},
	{"packet-dup", "duplicate-packet counter; doubled RPC counters"},
	{"packet-reorder", "out-of-order arrival counter"},
	{"metadata-outage", "dependent ops fail with metadata-unreachable errors"},
	{"disk-full", "write errors in the SUT log"},
	{"fsync-loss", "crash, then divergence/mismatch found on recovery"},
	{"slow-disk", "shift in the IO latency histogram"},
	{"bitflip", "checksum failures"},
	{"fsync-fail", "crash recovery reveals lost writes"},
	{"storage-corrupt", "SUT reports checksum / integrity errors"},
	{"backup-restore-race", "restore-time markers in logs; replicas compared before/after"},
	{"clock-skew", "timestamp drift visible in logs"},
	{"clock-slow", "drift in derived metrics"},
	{"restart-wrong-order", "leadership changes during the restarts; raft/consensus metric counts"},
	{"split-brain", "competing-leader log lines on both sides"},
	{"slow-follower", "per-node RPC latency skew; back-pressure metrics on the others"},
	{"mixed-version", "version-mismatch log lines; membership view shows both versions"},
	{"rolling-upgrade", "per-node version flip in cluster status; workload error rate"},
	{"config-divergence", "config visible via SUT introspection; behaviour differs per node"},
	{"auth-divergence", "auth-failure counter on the stale node"},
	{"compaction-during-reads", "compaction-active log line; read latency skew"},
	{"rebalance-during-writes", "rebalance-in-progress metric; per-shard ownership transitions"},
}

// nemesisHints map plan prose to nemesis ids when the plan does not name
// the id itself; first match wins, so specific phrases come first.
var nemesisHints = []struct {
	re *lazyre.Regexp
	id string
}{
	// A one-way cut keeps its direction even when it isolates the leader:
	// leader-isolation is symmetric (nemesis.md), partition-asym is not.
	{lazyre.New(`(?i)(asymmetric|one[- ]way|unidirectional|one direction|direction only)\W+(\w+\W+){0,4}(partition|isolat|cut|drop|block)|(partition|isolat|cut|drop|block)\w*\W+(\w+\W+){0,6}(asymmetric|one[- ]way|unidirectional|in one direction|direction only)`), "partition-asym"},
	{lazyre.New(`(?i)leader\W+(\w+\W+){0,3}isolat|isolat\w*\W+(\w+\W+){0,3}leader`), "leader-isolation"},
	{lazyre.New(`(?i)split[- ]brain`), "split-brain"},
	{lazyre.New(`(?i)kill\s*-(9|kill)\b|hard[- ]kill|sigkill|power[- ]?off`), "kill-9"},
	{lazyre.New(`(?i)kill\s*-(stop|19)\b|sigstop|\bpause|freeze`), "pause"},
	{lazyre.New(`(?i)asymmetric|one[- ]way|one direction|direction only`), "partition-asym"},
	{lazyre.New(`(?i)minority`), "partition-minority"},
	{lazyre.New(`(?i)majority`), "partition-majority"},
	{lazyre.New(`(?i)partition|iptables|isolat`), "partition-full"},
	{lazyre.New(`(?i)duplicat`), "packet-dup"},
	{lazyre.New(`(?i)reorder`), "packet-reorder"},
	{lazyre.New(`(?i)packet[- ]loss|netem loss|\bloss\b`), "packet-loss"},
	{lazyre.New(`(?i)slow follower`), "slow-follower"},
	{lazyre.New(`(?i)latency|delay`), "latency"},
	{lazyre.New(`(?i)bandwidth`), "bandwidth"},
	{lazyre.New(`(?i)disk[- ]full|fill (the )?(disk|filesystem)`), "disk-full"},
	{lazyre.New(`(?i)fsync[- ]fail`), "fsync-fail"},
	{lazyre.New(`(?i)fsync|power[- ]loss`), "fsync-loss"},
	{lazyre.New(`(?i)slow[- ]disk|io throttl`), "slow-disk"},
	{lazyre.New(`(?i)bit[- ]?flip`), "bitflip"},
	{lazyre.New(`(?i)corrupt`), "storage-corrupt"},
	{lazyre.New(`(?i)backup|restore`), "backup-restore-race"},
	{lazyre.New(`(?i)clock[- ]skew|skew\w* the clock|date -s`), "clock-skew"},
	{lazyre.New(`(?i)slow clock|clock rate`), "clock-slow"},
	{lazyre.New(`(?i)rolling[- ]upgrade`), "rolling-upgrade"},
	{lazyre.New(`(?i)mixed[- ]version`), "mixed-version"},
	{lazyre.New(`(?i)rolling[- ]restart|restart order`), "restart-wrong-order"},
	{lazyre.New(`(?i)container|\bpod\b|docker`), "container-restart"},
	{lazyre.New(`(?i)compaction`), "compaction-during-reads"},
	{lazyre.New(`(?i)rebalanc|reconfigur`), "rebalance-during-writes"},
	{lazyre.New(`(?i)metadata|etcd|zookeeper`), "metadata-outage"},
	{lazyre.New(`(?i)kill\s*-(term|15)\b|sigterm|graceful|restart|\bstop\b`), "kill-term"},
	{lazyre.New(`(?i)\bkill`), "kill-9"},
}

// inferNemesis names the nemesis a piece of prose describes: an id written
// literally wins, then the phrase hints.
func inferNemesis(text string) string {
	low := strings.ToLower(text)
	best, at := "", len(low)+1
	for _, n := range nemesisIDs {
		if i := indexWord(low, n.id); i >= 0 && (i < at || i == at && len(n.id) > len(best)) {
			best, at = n.id, i
		}
	}
	if best != "" {
		return best
	}
	for _, h := range nemesisHints {
		if h.re.MatchString(text) {
			return h.id
		}
	}
	return ""
}

// indexWord finds id in s as a whole word (ids contain '-', so '-' counts
// as a word character): "kill-9" is not found inside "kill-90".
func indexWord(s, id string) int {
	isWord := func(b byte) bool { return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-' }
	for off := 0; off <= len(s); {
		i := strings.Index(s[off:], id)
		if i < 0 {
			return -1
		}
		i += off
		end := i + len(id)
		if (i == 0 || !isWord(s[i-1])) && (end == len(s) || !isWord(s[end])) {
			return i
		}
		off = i + 1
	}
	return -1
}

func nemesisEvidence(id string) string {
	for _, n := range nemesisIDs {
		if n.id == id {
			return n.evidence
		}
	}
	return ""
}

var (
	atRE  = lazyre.New(`(?i)\bT\s*\+\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?)\b`)
	forRE = lazyre.New(`(?i)\bfor\s+(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?)\b`)
	// "restarted (by systemd) after 5s": how long a killed member stays
	// down, which is the kill window's for.
	restartAfterRE = lazyre.New(`(?i)\brestart\w*\b[^;]*?\bafter\s+(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?)\b`)
	everyRE        = lazyre.New(`(?i)\bevery\s+(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?)\b`)
	timesRE        = lazyre.New(`(?i)\b(\d+)\s*(times|x)\b`)
	onceRE         = lazyre.New(`(?i)\bonce\b`)
)

// dur normalises "45s", "10 min" to seconds text ("45s", "600s").
func dur(num, unit string) string {
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return num + unit
	}
	switch u := strings.ToLower(unit); {
	case u == "ms":
		v /= 1000
	case strings.HasPrefix(u, "h"):
		v *= 3600
	case u == "m" || strings.HasPrefix(u, "min"):
		v *= 60
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + "s"
}

// member is a word for one node of the SUT's cluster in fault prose.
const member = `(?:members?|nodes?|replicas?|hosts?|peers?|voters?|servers?|instances?|machines?)`

// targetPhrases map fault prose to the targets grammar (a host name,
// role:R, leader, random, one, minority, majority, all). The earliest
// phrase in a clause names its target, so "isolate a random member from the
// leader" targets the random member.
var targetPhrases = []struct {
	re     *lazyre.Regexp
	target string
}{
	// Follower phrasings have no word in the grammar yet; they are kept
	// distinct rather than widened to "random", which could pick the leader.
	// "node 3", "follower member 2": the SUT host of that place (#N).
	{lazyre.New(`(?i)\b(?:(?:follower|leader|peer)\s+)?(?:node|member|replica|server)\s+#?[1-9][0-9]?\b`), "#"},
	{lazyre.New(`(?i)\b(?:a\s+)?random\s+followers?\b`), "random-follower"},
	{lazyre.New(`(?i)\bfollowers?\b`), "followers"},
	{lazyre.New(`(?i)\b(?:the\s+)?(?:current\s+|acting\s+)?leader\b`), "leader"},
	{lazyre.New(`(?i)\b(?:a\s+)?(?:random(?:ly\s+chosen|ly\s+picked)?|any)\s+(?:one\s+)?` + member + `\b|\b(?:a\s+)?(?:` + member + `)\s+(?:chosen|picked)\s+at\s+random\b|\bat\s+random\b`), "random"},
	{lazyre.New(`(?i)\bminority\b`), "minority"},
	{lazyre.New(`(?i)\bmajority\b`), "majority"},
	{lazyre.New(`(?i)\b(?:all|every|each)\s+(?:the\s+)?(?:\w+\s+)?` + member + `\b|\bwhole\s+cluster\b`), "all"},
	{lazyre.New(`(?i)\b(?:one|a\s+single|single|1)\s+` + member + `\b`), "one"},
}

var ordinalRE = lazyre.New(`([1-9][0-9]?)\b`)

var roleObjectRE = lazyre.New(`(?i)\bthe\s+([a-z][a-z0-9_-]*)`)

// targetsOf reads a fault clause's target, or "" when it names none.
func targetsOf(clause string) string {
	best, at, n := "", len(clause)+1, 0
	for _, t := range targetPhrases {
		if loc := t.re.FindStringIndex(clause); loc != nil && (loc[0] < at || loc[0] == at && loc[1]-loc[0] > n) {
			best, at, n = t.target, loc[0], loc[1]-loc[0]
		}
	}
	if best == "#" {
		return "#" + ordinalRE.FindStringSubmatch(clause[at : at+n])[1]
	}
	if best != "" {
		return best
	}
	// "restart the gateway" → the role named after the verb's object.
	if m := roleObjectRE.FindStringSubmatch(clause); m != nil {
		return "role:" + strings.ToLower(m[1])
	}
	return ""
}

// faultsFor turns the plan's Faults prose (and the §7.M nemesis text) into
// a schedule: one entry per ";"-separated clause that names a fault; a
// clause that only says when ("repeat every 150s") amends the previous one.
// Whatever cannot be read becomes a TODO naming the scenario and field.
func faultsFor(id, text, mNemesis string) []scenarios.Fault {
	if strings.TrimSpace(text) == "" {
		return []scenarios.Fault{{Nemesis: fmt.Sprintf("TODO(%s.faults): the plan has no Faults field", id),
			Targets: todo(id, 0, "targets"), At: todo(id, 0, "at"), For: todo(id, 0, "for")}}
	}
	// The plan package owns what "no faults" looks like ("`none`",
	// "—", "None: smoke only"); a private regexp here had drifted from it.
	if !(&plan.Scenario{Faults: text}).FaultsPlanned() {
		return nil
	}
	var out []scenarios.Fault
	for _, clause := range strings.Split(text, ";") {
		if strings.TrimSpace(clause) == "" {
			continue
		}
		nem := inferNemesis(clause)
		if nem == "" && len(out) > 0 {
			amend(&out[len(out)-1], clause)
			continue
		}
		i := len(out)
		f := scenarios.Fault{Nemesis: nem, Targets: targetsOf(clause)}
		if f.Nemesis == "" {
			f.Nemesis = fmt.Sprintf("TODO(%s.faults[%d].nemesis): name a nemesis id (`dstgen help nemesis`) for: %s", id, i, oneline.Fold(clause))
		}
		if m := atRE.FindStringSubmatch(clause); m != nil {
			f.At = dur(m[1], m[2])
		}
		if m := forRE.FindStringSubmatch(clause); m != nil {
			f.For = dur(m[1], m[2])
		} else if m := restartAfterRE.FindStringSubmatch(clause); m != nil && strings.HasPrefix(f.Nemesis, "kill-") {
			f.For = dur(m[1], m[2])
		}
		amend(&f, clause)
		if f.Nemesis == "partition-asym" && asymOutRE.MatchString(clause) {
			f.Params = map[string]string{"direction": "out"}
		}
		out = append(out, f)
	}
	// §7.M names the nemesis authoritatively; prefer it for the first fault
	// when the prose alone was ambiguous.
	if n := inferNemesis(mNemesis); n != "" && len(out) > 0 && strings.HasPrefix(out[0].Nemesis, "TODO(") {
		out[0].Nemesis = n
	}
	for i := range out {
		if out[i].Targets == "" {
			out[i].Targets = todo(id, i, "targets")
		}
		if out[i].At == "" && out[i].Every != "" {
			out[i].At = out[i].Every // "every 60s": the first window opens after one period
		}
		if out[i].At == "" {
			out[i].At = todo(id, i, "at")
		}
		if out[i].For == "" {
			out[i].For = todo(id, i, "for")
			if strings.HasPrefix(out[i].Nemesis, "kill-") {
				out[i].For = "0s" // down for no time: heal restarts the member at once
			}
		}
		// "5 times" without a period cannot be scheduled; say so rather
		// than guess one (scenarios.Parse rejects times > 1 without every).
		if out[i].Times > 1 && out[i].Every == "" {
			out[i].Every = fmt.Sprintf("TODO(%s.faults[%d].every): the plan's Faults text says %d times but not how often", id, i, out[i].Times)
		}
	}
	return out
}

// asymOutRE is a one-way partition the other way round from the nemesis's
// default: the targets' own traffic is lost ("its peers hear nothing from
// it", "drops what it sends", "outbound dropped").
var asymOutRE = lazyre.New(`(?i)\bhears?\s+nothing\s+from\s+(?:it|them)\b|\bdrops?\s+(?:what|everything)\s+(?:it|they)\s+sends?\b|\b(?:outgoing|outbound)\s+(?:\w+\s+)?(?:is\s+|are\s+)?dropped\b|\bcan(?:not|'t)\s+send\b`)

func amend(f *scenarios.Fault, clause string) {
	if m := everyRE.FindStringSubmatch(clause); m != nil {
		f.Every = dur(m[1], m[2])
	}
	if m := timesRE.FindStringSubmatch(clause); m != nil {
		f.Times, _ = strconv.Atoi(m[1])
	} else if onceRE.MatchString(clause) {
		f.Times = 1
	}
	if f.At == "" {
		if m := atRE.FindStringSubmatch(clause); m != nil {
			f.At = dur(m[1], m[2])
		}
	}
}

func todo(id string, i int, field string) string {
	return fmt.Sprintf("TODO(%s.faults[%d].%s): the plan's Faults text does not say", id, i, field)
}

// splitSignals splits §7.M landing evidence into its signals at ";" and
// at a standalone upper-case "AND", but never inside a quoted log marker
// ("leader-lost; starting election", `a; b`, “a; b”): the quote is the
// literal text to look for. A quote left open is a typo, not a marker, so
// then every ";" splits.
func splitSignals(ev string) []string {
	if out, balanced := splitOutsideQuotes(ev, true); balanced {
		return out
	}
	out, _ := splitOutsideQuotes(ev, false)
	return out
}

func splitOutsideQuotes(ev string, quotes bool) (out []string, balanced bool) {
	var closer rune // the quote being inside, 0 outside
	start := 0
	for i, r := range ev {
		switch {
		case closer != 0:
			if r == closer {
				closer = 0
			}
		case quotes && (r == '"' || r == '`'):
			closer = r
		case quotes && r == '“':
			closer = '”'
		case r == ';':
			out = append(out, ev[start:i])
			start = i + 1
		case r == 'A' && strings.HasPrefix(ev[i:], "AND") && i > 0 && isSpace(ev[i-1]) && i+3 < len(ev) && isSpace(ev[i+3]):
			out = append(out, ev[start:i])
			start = i + 3
		}
	}
	return append(out, ev[start:]), closer == 0
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' }

// landingFor lists what proves each window landed: the §7.M evidence split
// into its signals, else the nemesis row's generic evidence.
func landingFor(id, mNemesis string, faults []scenarios.Fault) []string {
	var out []string
	if t := strings.TrimSpace(mNemesis); t != "" {
		ev := t
		low := strings.ToLower(t)
		for _, marker := range []string{"evidence =", "evidence:", "evidence="} {
			if i := strings.Index(low, marker); i >= 0 {
				ev = t[i+len(marker):]
				break
			}
		}
		for _, part := range splitSignals(ev) {
			if p := oneline.Fold(part); p != "" {
				out = append(out, p)
			}
		}
		return out
	}
	for _, f := range faults {
		if e := nemesisEvidence(f.Nemesis); e != "" {
			out = append(out, f.Nemesis+": "+e+" (generic evidence, `dstgen help nemesis`)")
		}
	}
	if len(out) == 0 && len(faults) > 0 {
		out = append(out, fmt.Sprintf("TODO(%s.landing_signals): name the injector and victim signals that prove each fault landed", id))
	}
	return out
}

// metricSignalRE is a landing signal that names, in backticks, a command
// printing one number and the way it moves: "`redis-cli … | sed …` on the
// replica rises". The command is read before the injection and within the
// window (docs/scenarios-yml.md §3.10, docs/plan-format.md §7).
var metricSignalRE = lazyre.New("`([^`]+)`[^`]*?\\b(rises|rise|increments|increases|grows|falls|drops|decreases|changes)\\b")

// metricLanding is the victim-side metric the §7.M evidence names, the
// first signal of that shape; nil when none does, or when the command is
// what a named field is read from. Injector-side signals
// (a DROP counter, a pid) are the nemesis's own and never a command.
func metricLanding(signals []string) *scenarios.Landing {
	for _, sig := range signals {
		loc := metricSignalRE.FindStringSubmatchIndex(sig)
		// "field of `cmd` rises" names a part of the command's output,
		// not a command that prints the number.
		if loc == nil || strings.HasSuffix(strings.ToLower(strings.TrimSpace(sig[:loc[0]])), " of") {
			continue
		}
		m := []string{sig[loc[0]:loc[1]], sig[loc[2]:loc[3]], sig[loc[4]:loc[5]]}
		if strings.TrimSpace(m[1]) == "" {
			continue
		}
		expect := "rise"
		switch m[2] {
		case "falls", "drops", "decreases":
			expect = "fall"
		case "changes":
			expect = "change"
		}
		return &scenarios.Landing{Metric: strings.TrimSpace(m[1]), Expect: expect}
	}
	return nil
}

// PlanNemeses are the nemesis ids `dstgen init` reads from a plan
// scenario's Faults (and §7.M nemesis) prose, each once, in order: what
// its scenarios.yml entry injects. Prose init cannot read gives none, so
// a caller comparing a scenarios.yml against the plan checks only what
// the plan states.
func PlanNemeses(s plan.Scenario) []string {
	nemText := ""
	if s.M != nil {
		nemText = s.M.Nemesis
	}
	var out []string
	for _, f := range faultsFor(s.ID, s.Faults, nemText) {
		if !strings.HasPrefix(f.Nemesis, "TODO(") && !slices.Contains(out, f.Nemesis) {
			out = append(out, f.Nemesis)
		}
	}
	return out
}
