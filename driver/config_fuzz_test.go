package driver

import (
	"strings"
	"testing"
)

// FuzzConfigure: whatever the variables and arguments, Configure answers
// with a config or a one-line error, never a panic, and a config it
// accepts is one a run can have.
func FuzzConfigure(f *testing.F) {
	f.Add("42", "2.5", "100", "10.0.0.1, 10.0.0.2:22", "-clients 3 -timeout 2s")
	f.Add("x", "0", "-1", " , ", "-final-only")
	f.Add("", "1e300", "NaN", "", "-rate Inf -ops -1")
	f.Fuzz(func(t *testing.T, seed, dur, rate, hosts, args string) {
		env := map[string]string{"DSTGEN_SEED": seed, "DSTGEN_DURATION_S": dur, "DSTGEN_RATE": rate, "DSTGEN_SUT_HOSTS": hosts, "DSTGEN_RUN_ID": "r"}
		cfg, _, err := configure(strings.Fields(args), env, &knobs{})
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("a two-line error: %q", err)
			}
			return
		}
		if cfg.Duration <= 0 || !validRate(cfg.Rate) || cfg.Clients < 1 || cfg.Clients > MaxClients ||
			cfg.Timeout <= 0 || cfg.Timeout > maxTimeout || cfg.MaxOps < 0 || cfg.Seed == 0 || cfg.History == "" {
			t.Errorf("accepted %+v", *cfg)
		}
	})
}
