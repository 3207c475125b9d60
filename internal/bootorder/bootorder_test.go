package bootorder

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		name, out, stderr string
		rc                int
		want              Rank
	}{
		{"integer", "57\n", "", 0, Rank{Value: 57}},
		{"integer and note", "57 seqno=57 safe_to_bootstrap=0\nmore\n", "", 0, Rank{Value: 57, Note: "seqno=57 safe_to_bootstrap=0"}},
		{"negative", "  -1 fresh: empty data dir", "", 0, Rank{Value: -1, Note: "fresh: empty data dir"}},
		{"refuse", "refuse: safe_to_bootstrap: 0", "", 0, Rank{Refused: "safe_to_bootstrap: 0"}},
		{"refuse without reason", "refuse:", "", 0, Rank{Refused: "the rank command refused without a reason"}},
		{"not a number", "seqno 41", "", 0, Rank{Refused: `the rank command printed "seqno 41", not an integer or refuse: <reason>`}},
		{"empty", "", "", 0, Rank{Refused: `the rank command printed "", not an integer or refuse: <reason>`}},
		{"non-zero exit, stderr", "", "grastate.dat: permission denied", 3, Rank{Refused: "the rank command exited 3: grastate.dat: permission denied"}},
		{"non-zero exit, refuse line", "refuse: broken", "", 1, Rank{Refused: "the rank command exited 1: broken"}},
		{"non-zero exit, a number", "99", "", 1, Rank{Refused: "the rank command exited 1: 99"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.want.Host = "h1"
			if got := Parse("h1", c.out, c.rc, c.stderr); got != c.want {
				t.Errorf("Parse = %+v, want %+v", got, c.want)
			}
		})
	}
}

// RankScript runs the command in a real sh; ParseScript tells a refusal
// from a host that did not answer.
func TestRankScriptThroughSh(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		want Rank
	}{
		{"echo 41 seqno=41", Rank{Value: 41, Note: "seqno=41"}},
		{"echo oops >&2; exit 2", Rank{Refused: "the rank command exited 2: oops"}},
		{"echo 'refuse: safe_to_bootstrap: 0'", Rank{Refused: "safe_to_bootstrap: 0"}},
		{"printf 'it'\"'\"'s 7\\n'", Rank{Refused: `the rank command printed "it's 7", not an integer or refuse: <reason>`}},
	} {
		out, err := exec.Command("sh", "-c", RankScript(c.cmd)).Output()
		c.want.Host = "h2"
		if got := ParseScript("h2", string(out), err); got != c.want {
			t.Errorf("%s: %+v, want %+v (output %q)", c.cmd, got, c.want, out)
		}
	}
	if got := ParseScript("h3", "", errors.New("dial tcp 10.77.0.13:22: i/o timeout")); got.Unknown == "" {
		t.Errorf("a transport error gave %+v, want an unknown rank", got)
	}
	if got := ParseScript("h3", "57\n", nil); got.Unknown == "" {
		t.Errorf("output without the rc line gave %+v, want an unknown rank", got)
	}
}

func ranks(rs ...string) []Rank {
	var out []Rank
	for i, r := range rs {
		h := fmt.Sprintf("h%d", i+1)
		switch {
		case strings.HasPrefix(r, "refuse"):
			out = append(out, Rank{Host: h, Refused: r})
		case r == "?":
			out = append(out, Rank{Host: h, Unknown: "unreachable"})
		default:
			var v int64
			fmt.Sscan(r, &v)
			out = append(out, Rank{Host: h, Value: v})
		}
	}
	return out
}

func TestChoose(t *testing.T) {
	for _, c := range []struct {
		name  string
		ranks []Rank
		want  int
		err   string
	}{
		{"highest", ranks("41", "57", "12"), 1, ""},
		{"ties go to the first in hosts order", ranks("57", "12", "57"), 0, ""},
		{"all fresh", ranks("-1", "-1", "-1"), 0, ""},
		{"a refused highest is skipped", ranks("41", "refuse: no position", "12"), 0, ""},
		{"all refuse", ranks("refuse: a", "refuse: b"), -1, "no member may bootstrap: h1: refuse: a; h2: refuse: b"},
		{"an unknown rank stops it", ranks("41", "?", "57"), -1, "the rank of h2 is unknown"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Choose(c.ranks)
			if got != c.want || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Errorf("Choose = %d, %v; want %d, %q", got, err, c.want, c.err)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	rs := ranks("41", "57", "57")
	rs[0].Note = "seqno=41 safe_to_bootstrap=0"
	rs[1].Note = "seqno=57"
	for _, c := range []struct {
		name, host string
		ranks      []Rank
		err        string
	}{
		{"the most advanced", "h2", rs, ""},
		{"a tie with the most advanced", "h3", rs, ""},
		{"less advanced", "h1", rs, "bootstrap from h1 refused: its rank 41 (seqno=41 safe_to_bootstrap=0) < h2's 57 (seqno=57)"},
		{"refused itself", "h2", ranks("41", "refuse: no position"), "bootstrap from h2 refused: rank refused (refuse: no position)"},
		{"another is unknown", "h1", ranks("57", "?"), "the rank of h2 is unknown"},
		{"not a member", "h9", rs, "not a SUT member"},
		// A refused member with a higher rank value does not count: its
		// value is not a position.
		{"higher refused", "h1", []Rank{{Host: "h1", Value: 3}, {Host: "h2", Refused: "x"}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Check(c.ranks, c.host)
			if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Errorf("Check(%s) = %v, want %q", c.host, err, c.err)
			}
		})
	}
}

// fake is a cluster of members in memory for Start's sequencing; the
// real members are in examples/galera/deploy's testbed test.
type fake struct {
	mu       sync.Mutex
	running  []bool
	healthy  []bool
	rank     []string
	log      []string
	failBoot bool
}

func (f *fake) ops() Ops {
	return Ops{
		Running: func(_ context.Context, i int) (bool, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.running[i], nil
		},
		Healthy: func(_ context.Context, i int) bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.healthy[i]
		},
		Rank: func(_ context.Context, i int) Rank { return ranks(f.rank...)[i] },
		Start: func(_ context.Context, i int, bootstrap bool) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.running[i] = true
			if bootstrap {
				f.log = append(f.log, fmt.Sprintf("boot h%d", i+1))
			} else {
				f.log = append(f.log, fmt.Sprintf("join h%d", i+1))
			}
			return nil
		},
		WaitHealthy: func(_ context.Context, i int) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.failBoot {
				return errors.New("not healthy after 60s: its health command printed last: 'wsrep_local_state_comment=Joining wsrep_cluster_size=1'")
			}
			f.log = append(f.log, fmt.Sprintf("healthy h%d", i+1))
			return nil
		},
	}
}

func members(want ...bool) []Member {
	ms := make([]Member, len(want))
	for i, w := range want {
		ms[i] = Member{Name: fmt.Sprintf("h%d", i+1), Want: w}
	}
	return ms
}

func TestStart(t *testing.T) {
	for _, c := range []struct {
		name     string
		ms       []Member
		running  []bool
		healthy  []bool
		rank     []string
		force    string
		failBoot bool
		log      []string // the bootstrap steps in order, then the joins sorted
		boot     string
		err      string
	}{
		{"fresh cluster: the first bootstraps, the others join after", members(true, true, true), []bool{false, false, false}, []bool{false, false, false},
			[]string{"-1", "-1", "-1"}, "", false, []string{"boot h1", "healthy h1", "join h2", "join h3"}, "h1", ""},
		{"whole cluster down: the highest rank bootstraps", members(true, true, true), []bool{false, false, false}, []bool{false, false, false},
			[]string{"41", "57", "57"}, "", false, []string{"boot h2", "healthy h2", "join h1", "join h3"}, "h2", ""},
		{"a member runs and is healthy: nobody bootstraps", members(false, true, false), []bool{true, false, true}, []bool{true, false, true},
			[]string{"99", "1", "1"}, "", false, []string{"join h2"}, "", ""},
		{"a member runs unhealthy: still nobody bootstraps", members(true, false, true), []bool{false, true, false}, []bool{false, false, false},
			[]string{"99", "1", "1"}, "", false, []string{"join h1", "join h3"}, "", ""},
		{"nothing to start", members(true, true), []bool{true, true}, []bool{true, true}, []string{"1", "1"}, "", false, nil, "", ""},
		{"forced from the most advanced", members(true, true, true), []bool{false, false, false}, nil,
			[]string{"41", "57", "57"}, "h3", false, []string{"boot h3", "healthy h3", "join h1", "join h2"}, "h3", ""},
		{"forced from a less advanced member is refused, nothing started", members(true, true, true), []bool{false, false, false}, nil,
			[]string{"41", "57", "57"}, "h1", false, nil, "", "bootstrap from h1 refused: its rank 41 < h2's 57"},
		{"forced while a member runs is refused", members(true, false), []bool{false, true}, []bool{false, true},
			[]string{"1", "1"}, "h1", false, nil, "", "the SUT runs on h2; a second bootstrap would start a second cluster"},
		{"the best is not to be started: refused", members(true, false, true), []bool{false, false, false}, nil,
			[]string{"41", "57", "12"}, "", false, nil, "", "h2 should (no member runs; h2 has the highest rank 57) but it is not among the members to start"},
		{"every rank refuses", members(true, true), []bool{false, false}, nil,
			[]string{"refuse: a", "refuse: b"}, "", false, nil, "", "no member may bootstrap"},
		{"the bootstrap member never gets healthy: no join", members(true, true), []bool{false, false}, nil,
			[]string{"1", "1"}, "", true, []string{"boot h1"}, "h1", "bootstrap member h1: not healthy after 60s: its health command printed last: 'wsrep_local_state_comment=Joining wsrep_cluster_size=1'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			hl := c.healthy
			if hl == nil {
				hl = make([]bool, len(c.ms))
			}
			f := &fake{running: slices.Clone(c.running), healthy: hl, rank: c.rank, failBoot: c.failBoot}
			res, err := Start(context.Background(), c.ms, c.force, f.ops())
			if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Fatalf("Start: %v, want %q", err, c.err)
			}
			// Joins run at once: compare them as a set after the
			// ordered bootstrap steps.
			got := f.log
			i := 0
			for i < len(got) && !strings.HasPrefix(got[i], "join") {
				i++
			}
			slices.Sort(got[i:])
			if !slices.Equal(got, c.log) {
				t.Errorf("steps %v, want %v", got, c.log)
			}
			if res.Bootstrapped != c.boot {
				t.Errorf("bootstrapped %q, want %q (why %q)", res.Bootstrapped, c.boot, res.Why)
			}
		})
	}
}
