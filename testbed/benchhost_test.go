package testbed

import (
	"strings"
	"testing"

	"github.com/dstgen/dstgen/env"
)

// TestEnvIntoRetargetsBenchHost: a generated bench_host that names no
// testbed host points at the testbed's client after --into; one that names
// a testbed host is kept.
func TestEnvIntoRetargetsBenchHost(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`bench_host: "client-1"`, "h3"},
		{`bench_host: h2`, "h2"},
	} {
		src := "workdir: /opt/dstgen\nparameters:\n  " + c.in + "\n"
		out, err := rewriteEnv("env.yml", []byte(src), fixedState())
		if err != nil {
			t.Fatal(err)
		}
		e, err := env.Parse("env.yml", out)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if got := e.Parameters["bench_host"]; got != c.want {
			t.Errorf("%s: bench_host %v, want %s\n%s", c.in, got, c.want, out)
		}
		if c.want == "h3" && !strings.Contains(string(out), `was "client-1"`) {
			t.Errorf("the rewrite does not say what it replaced:\n%s", out)
		}
	}
}

// TestEnvIntoTurnsSystemdOff: the testbed's hosts have no systemd, so
// --into switches the generated capability off (and leaves the others).
func TestEnvIntoTurnsSystemdOff(t *testing.T) {
	src := "workdir: /opt/dstgen\ndstgen:\n  capabilities:\n    iptables: true\n    systemd: true\n"
	out, err := rewriteEnv("env.yml", []byte(src), fixedState())
	if err != nil {
		t.Fatal(err)
	}
	e, err := env.Parse("env.yml", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if c := e.Dstgen.Capabilities; c["systemd"] || !c["iptables"] {
		t.Errorf("capabilities %v, want systemd off and iptables kept\n%s", c, out)
	}
}
