// Package bootorder is the one rule by which dstgen (re)starts the members
// of a SUT that must be bootstrapped (env.yml sut.bootstrap, docs/env-yml.md
// §7.1): deploy's start, `dstgen heal` restarting failed members, and the
// heal of the kill and restart nemeses all go through Start, so the rule
// cannot differ between them.
//
// The rule: a member that runs is never second-guessed. When at least one
// member runs, nobody bootstraps: the members to start join (in parallel).
// When no member runs, every member is ranked (sut.bootstrap.rank), the
// highest rank bootstraps (ties to the first in hosts order), the others
// start once it is healthy. A member whose rank refuses, or could not be
// read, never bootstraps, and a bootstrap from a member that is not the
// most advanced is refused with the reason, never done.
package bootorder

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/dstgen/dstgen/internal/oneline"
	"github.com/dstgen/dstgen/internal/shell"
)

// Rank is one member's answer to sut.bootstrap.rank.
type Rank struct {
	Host    string
	Value   int64
	Note    string // what the rank command printed after the integer
	Refused string // non-empty: this member must not bootstrap, and why
	// Unknown is set when the rank could not be read (the host did not
	// answer): nothing can bootstrap then, since this member may be the
	// most advanced.
	Unknown string
}

// String is the rank as messages show it: "57 (seqno 57)", "refused
// (…)".
func (r Rank) String() string {
	switch {
	case r.Unknown != "":
		return "unknown (" + r.Unknown + ")"
	case r.Refused != "":
		return "refused (" + r.Refused + ")"
	case r.Note != "":
		return strconv.FormatInt(r.Value, 10) + " (" + r.Note + ")"
	}
	return strconv.FormatInt(r.Value, 10)
}

// RankScript is the remote shell text that runs a rendered rank command
// and reports its exit code and stderr on lines of their own, so that
// ParseScript tells a refusal (the command failed) from a host that did
// not answer (no rc line).
func RankScript(cmd string) string {
	return "e=$(mktemp 2>/dev/null || echo /tmp/dstgen-rank.$$)\n" +
		"o=$(sh -c " + shell.Quote(cmd) + " 2>\"$e\"); rc=$?\n" +
		"printf '%s\\n' \"$o\" | head -n 20\n" +
		"echo \"" + rcMark + "$rc\"\n" +
		"printf '" + errMark + "%s\\n' \"$(head -c 400 \"$e\" | tr '\\n' ' ')\"\n" +
		"rm -f \"$e\"\n"
}

const (
	rcMark  = "dstgen-rank-rc="
	errMark = "dstgen-rank-stderr="
)

// ParseScript reads what RankScript printed on host; err is the transport's
// error (the script itself cannot fail).
func ParseScript(host, out string, err error) Rank {
	var body []string
	rc, stderr := -1, ""
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, rcMark):
			if n, e := strconv.Atoi(strings.TrimPrefix(l, rcMark)); e == nil {
				rc = n
			}
		case strings.HasPrefix(l, errMark):
			stderr = strings.TrimSpace(strings.TrimPrefix(l, errMark))
		default:
			body = append(body, l)
		}
	}
	if err == nil && rc < 0 {
		err = errors.New("the rank script printed no exit code")
	}
	if err != nil {
		return Rank{Host: host, Unknown: "could not run the rank command: " + oneline.Fold(err.Error())}
	}
	return Parse(host, strings.Join(body, "\n"), rc, stderr)
}

// Parse reads the output of a rank command on host that exited with rc
// (its stderr for the reason of a failure). The first non-empty line
// counts: an integer with an optional note, or "refuse: <reason>"; a
// non-zero exit refuses with what it printed.
func Parse(host, out string, rc int, stderr string) Rank {
	r := Rank{Host: host}
	line := oneline.First(strings.TrimSpace(out))
	if rc != 0 {
		why := strings.TrimPrefix(line, "refuse:")
		if strings.TrimSpace(why) == "" {
			why = stderr
		}
		if strings.TrimSpace(why) == "" {
			why = "no output"
		}
		r.Refused = fmt.Sprintf("the rank command exited %d: %s", rc, oneline.Fold(strings.TrimSpace(why)))
		return r
	}
	if why, ok := strings.CutPrefix(line, "refuse:"); ok {
		r.Refused = strings.TrimSpace(why)
		if r.Refused == "" {
			r.Refused = "the rank command refused without a reason"
		}
		return r
	}
	num, note, _ := strings.Cut(line, " ")
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		r.Refused = fmt.Sprintf("the rank command printed %q, not an integer or refuse: <reason>", oneline.Fold(line))
		return r
	}
	r.Value, r.Note = v, strings.TrimSpace(note)
	return r
}

// Choose returns the index in ranks (hosts order) of the member that
// bootstraps: the highest rank that is not refused, the first of equals.
// It refuses when a rank is unknown, or when every member refuses.
func Choose(ranks []Rank) (int, error) {
	for _, r := range ranks {
		if r.Unknown != "" {
			return -1, fmt.Errorf("no member bootstraps: the rank of %s is unknown (%s), and it may be the most advanced", r.Host, r.Unknown)
		}
	}
	best := -1
	var why []string
	for i, r := range ranks {
		if r.Refused != "" {
			why = append(why, r.Host+": "+r.Refused)
			continue
		}
		if best < 0 || r.Value > ranks[best].Value {
			best = i
		}
	}
	if best < 0 {
		return -1, fmt.Errorf("no member may bootstrap: %s", strings.Join(why, "; "))
	}
	return best, nil
}

// Check says whether host may bootstrap given every member's rank: not
// when its rank refuses or is unknown, nor when another member (refused
// or not) ranks higher — that member holds what a bootstrap from host
// would lose.
func Check(ranks []Rank, host string) error {
	me := -1
	for i, r := range ranks {
		if r.Host == host {
			me = i
		}
	}
	if me < 0 {
		return fmt.Errorf("bootstrap from %s refused: it is not a SUT member", host)
	}
	m := ranks[me]
	if m.Unknown != "" || m.Refused != "" {
		return fmt.Errorf("bootstrap from %s refused: rank %s", host, m)
	}
	for _, r := range ranks {
		if r.Unknown != "" {
			return fmt.Errorf("bootstrap from %s refused: the rank of %s is unknown (%s), and it may be more advanced", host, r.Host, r.Unknown)
		}
	}
	for _, r := range ranks {
		if r.Host != host && r.Refused == "" && r.Value > m.Value {
			return fmt.Errorf("bootstrap from %s refused: its rank %s < %s's %s", host, m, r.Host, r)
		}
	}
	return nil
}

// Member is one SUT member as Start sees it, in hosts order.
type Member struct {
	Name string
	// Want: Start is to bring this member up when it does not run.
	Want bool
}

// Ops are the actions Start needs on member i (an index of its members).
type Ops struct {
	// Running reports whether the member's SUT process runs now.
	Running func(ctx context.Context, i int) (bool, error)
	// Healthy runs the member's health commands once.
	Healthy func(ctx context.Context, i int) bool
	// Rank runs the member's rank command.
	Rank func(ctx context.Context, i int) Rank
	// Start starts the member without waiting: as the bootstrap member
	// (sut.bootstrap.command) or to join (sut.command).
	Start func(ctx context.Context, i int, bootstrap bool) error
	// WaitHealthy waits, bounded, until the member's health commands pass;
	// its error names the member and what its health command printed last.
	WaitHealthy func(ctx context.Context, i int) error
}

// Result says what Start did.
type Result struct {
	// Bootstrapped is the member started with the bootstrap command, ""
	// when nobody bootstrapped.
	Bootstrapped string
	// Why is the one-line reason of the choice: "h2 runs (healthy)",
	// "no member runs; h2 has the highest rank 57 (seqno 57)".
	Why string
	// Joined are the members started with the join command.
	Joined []string
	Ranks  []Rank // every member's rank, when they were read
}

// Start brings up the wanted members that do not run, by the package
// rule. force names a member that must be the one to bootstrap ("" = the
// rule picks); it is refused (Check) unless it may. A member that runs is
// never restarted.
func Start(ctx context.Context, ms []Member, force string, ops Ops) (Result, error) {
	var res Result
	running := make([]bool, len(ms))
	if err := each(ctx, len(ms), func(ctx context.Context, i int) error {
		r, err := ops.Running(ctx, i)
		if err != nil {
			return fmt.Errorf("%s: is the SUT running? %w", ms[i].Name, err)
		}
		running[i] = r
		return nil
	}); err != nil {
		return res, fmt.Errorf("ordered start: %w", err)
	}
	var down, up []int
	for i, m := range ms {
		switch {
		case running[i]:
			up = append(up, i)
		case m.Want:
			down = append(down, i)
		}
	}
	if len(down) == 0 {
		if force != "" {
			return res, fmt.Errorf("bootstrap from %s refused: the SUT runs on %s; a second bootstrap would start a second cluster", force, names(ms, up))
		}
		return res, nil
	}
	if len(up) > 0 {
		if force != "" {
			return res, fmt.Errorf("bootstrap from %s refused: the SUT runs on %s; a second bootstrap would start a second cluster", force, names(ms, up))
		}
		verb := " runs"
		if len(up) > 1 {
			verb = " run"
		}
		res.Why = names(ms, up) + verb + ": nobody bootstraps, the others join"
		for _, i := range up {
			if ops.Healthy(ctx, i) {
				res.Why = ms[i].Name + " runs and is healthy: nobody bootstraps, the others join"
				break
			}
		}
		return res, startJoin(ctx, ms, down, ops, &res)
	}
	// No member runs: rank them all (those Start is not to bring up as
	// well, since one of them may be the most advanced).
	res.Ranks = make([]Rank, len(ms))
	_ = each(ctx, len(ms), func(ctx context.Context, i int) error {
		res.Ranks[i] = ops.Rank(ctx, i)
		res.Ranks[i].Host = ms[i].Name
		return nil
	})
	b := -1
	if force != "" {
		if err := Check(res.Ranks, force); err != nil {
			return res, err
		}
		for i, m := range ms {
			if m.Name == force {
				b = i
			}
		}
		res.Why = fmt.Sprintf("no member runs; %s bootstraps as asked, rank %s", force, res.Ranks[b])
	} else {
		var err error
		if b, err = Choose(res.Ranks); err != nil {
			return res, err
		}
		res.Why = fmt.Sprintf("no member runs; %s has the highest rank %s", ms[b].Name, res.Ranks[b])
	}
	if !ms[b].Want {
		return res, fmt.Errorf("no member bootstraps: %s should (%s) but it is not among the members to start (stopped on purpose?); start the SUT with dstgen sut start", ms[b].Name, res.Why)
	}
	if err := ops.Start(ctx, b, true); err != nil {
		return res, fmt.Errorf("%s: start as the bootstrap member: %w", ms[b].Name, err)
	}
	res.Bootstrapped = ms[b].Name
	if err := ops.WaitHealthy(ctx, b); err != nil {
		return res, fmt.Errorf("bootstrap member %s: %w", ms[b].Name, err)
	}
	var rest []int
	for _, i := range down {
		if i != b {
			rest = append(rest, i)
		}
	}
	return res, startJoin(ctx, ms, rest, ops, &res)
}

// startJoin starts the members of idx with the join command, at once.
func startJoin(ctx context.Context, ms []Member, idx []int, ops Ops, res *Result) error {
	err := each(ctx, len(idx), func(ctx context.Context, j int) error {
		if err := ops.Start(ctx, idx[j], false); err != nil {
			return fmt.Errorf("%s: start to join: %w", ms[idx[j]].Name, err)
		}
		return nil
	})
	for _, i := range idx {
		res.Joined = append(res.Joined, ms[i].Name)
	}
	return err
}

func names(ms []Member, idx []int) string {
	s := make([]string, len(idx))
	for j, i := range idx {
		s[j] = ms[i].Name
	}
	return strings.Join(s, ", ")
}

// each runs fn for 0..n-1 at once and joins the errors in index order.
func each(ctx context.Context, n int, fn func(context.Context, int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(ctx, i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
