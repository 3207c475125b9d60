package plan

import "testing"

func TestLocalCommand(t *testing.T) {
	for _, tc := range []struct {
		cmd   string
		local bool
	}{
		{"go run ./workload -endpoints 127.0.0.1:2379 -out h.jsonl", true},
		{"cd x && go run . -addr 10.0.0.1:1", true},
		{"./bin/workload -endpoints localhost:2379", true},
		{"./bin/workload -endpoints http://[::1]:2379", true},
		{"{{ .Host.Workdir }}/bin/workload -endpoints 10.77.0.11:2379", false},
		{"./bin/workload -endpoints my-localhost-proxy:2379", false},
		{"gorun ./x", false},
	} {
		if _, got := LocalCommand(tc.cmd); got != tc.local {
			t.Errorf("LocalCommand(%q) = %v, want %v", tc.cmd, got, tc.local)
		}
	}
}
