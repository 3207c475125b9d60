package checker

import (
	"context"
	"strings"
	"testing"
)

// A read of a value no op wrote is a dirty initial state (left-over data),
// never a SUT anomaly; a clean key that violates still fails; a clean
// linearizable history is unchanged.
func TestDirtyInitialState(t *testing.T) {
	tests := []struct {
		name      string
		model     string
		rows      []string
		want      Outcome
		dirtyKeys []string
		badKey    string // the key of the one anomaly, when Invalid
	}{
		{"leftover read", "kv", []string{
			`p 0 10 read a _ "old-run"`,
			`p 20 30 write a "v1" _`,
			`q 40 50 read a _ "v1"`,
		}, Unknown, []string{"a"}, ""},
		{"leftover read on one key, stale read on another", "kv", []string{
			`p 0 10 read a _ "old-run"`,
			`p 20 30 write b "v1" _`,
			`p 40 50 write b "v2" _`,
			`q 60 70 read b _ "v1"`,
		}, Invalid, []string{"a"}, "b"},
		{"cas expecting a value nobody wrote", "register", []string{
			`p 0 10 cas r ["gone","v1"] true`,
			`q 20 30 read r _ "v1"`,
		}, Unknown, []string{"r"}, ""},
		{"clean linearizable", "kv", []string{
			`p 0 10 read a _ null`,
			`p 20 30 write a "v1" _`,
			`q 25 50 read a _ "v1"`,
		}, Valid, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), Spec{Model: tt.model, Checker: Linearizability}, h(t, tt.rows...), nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tt.want {
				t.Fatalf("outcome %s, want %s (%s) %+v", res.Outcome, tt.want, res.Reason, res.Anomalies)
			}
			var keys []string
			for _, d := range res.Dirty {
				keys = append(keys, d.Key)
				if d.Line == 0 || d.ProcessID == "" || d.Value == "" {
					t.Errorf("dirty evidence lacks process/value/line: %+v", d)
				}
			}
			if strings.Join(keys, ",") != strings.Join(tt.dirtyKeys, ",") {
				t.Errorf("dirty keys %v, want %v", keys, tt.dirtyKeys)
			}
			if tt.want == Unknown && (!strings.HasPrefix(res.Reason, "dirty initial state: ") || !strings.Contains(res.Reason, "task clean:data") || !strings.Contains(res.Reason, "line 1")) {
				t.Errorf("reason %q does not name the dirty state, its line and the fix", res.Reason)
			}
			if tt.want == Invalid {
				for _, a := range res.Anomalies {
					if a.Key != tt.badKey {
						t.Errorf("anomaly on %q, want only %q: %+v", a.Key, tt.badKey, a)
					}
				}
			}
		})
	}
}
