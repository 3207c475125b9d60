package docs

import (
	"os"
	"strings"
	"testing"
)

// What the docs state about behaviour that is easy to misread: each
// statement is the code's (nemesis/network.go, orchestrator/workload.go),
// and the untrue one it replaced stays out.
func TestDocsStateTheBehaviour(t *testing.T) {
	for _, c := range []struct {
		file, want, not string
	}{
		// partition-full cuts the targets from the other SUT hosts
		// (Fault.Cluster); the client hosts are never in its rules.
		{"nemesis.md", "client hosts are not cut, so the workload still reaches the targets", ""},
		// quiesce records nominal_at_ns; stop waits for duration + 30 s.
		{"scenarios-yml.md", "It does not stop the workload: the workload runs on to its\nfull duration", "the workload is stopped once it\nholds"},
	} {
		data, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), c.want) {
			t.Errorf("%s does not say %q", c.file, c.want)
		}
		if c.not != "" && strings.Contains(string(data), c.not) {
			t.Errorf("%s still says %q", c.file, c.not)
		}
	}
}
