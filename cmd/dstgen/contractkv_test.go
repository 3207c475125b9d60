package main

import (
	"strconv"
	"strings"
	"testing"
)

// contractKV parses command output by the rule README.md and
// agents/test-runner.md give an agent: key=value pairs, several to a line
// or one per line; a value holding a space, a quote or '=' is
// double-quoted with Go escapes; a word without '=' (a marker such as
// benchmark_started) and a line of prose are skipped. A later key wins.
func contractKV(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		for rest := strings.TrimSpace(line); rest != ""; rest = strings.TrimLeft(rest, " \t") {
			word := rest
			if i := strings.IndexAny(rest, " \t"); i >= 0 {
				word = rest[:i]
			}
			k, v, ok := strings.Cut(word, "=")
			if !ok || k == "" || strings.ContainsAny(k, `"'`) {
				rest = rest[len(word):]
				continue
			}
			after := rest[len(k)+1:]
			if strings.HasPrefix(after, `"`) {
				if q, err := strconv.QuotedPrefix(after); err == nil {
					if u, err := strconv.Unquote(q); err == nil {
						m[k] = u
						rest = after[len(q):]
						continue
					}
				}
			}
			m[k] = v
			rest = rest[len(word):]
		}
	}
	return m
}

func TestContractKV(t *testing.T) {
	got := contractKV("benchmark_failed rc=1 run_id=r job=bench-r host=c error=\"go: go.mod file not found\"\nstatus=finished\nsome prose here\nreason.S1=\"a \\\"quoted\\\" word\"\n")
	want := map[string]string{"rc": "1", "run_id": "r", "job": "bench-r", "host": "c", "error": "go: go.mod file not found", "status": "finished", "reason.S1": `a "quoted" word`}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q (all %v)", k, got[k], v, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
