package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/driver"
	"github.com/dstgen/dstgen/history"
)

func TestConfigFromEnvAndFlags(t *testing.T) {
	full := map[string]string{
		"DSTGEN_HISTORY": "/r/h.jsonl", "DSTGEN_RUN_ID": "run-a", "DSTGEN_SEED": "9", "DSTGEN_DURATION_S": "2.5",
		"DSTGEN_RATE": "50", "DSTGEN_MODE": " Write ", "DSTGEN_DATASET": "12", "DSTGEN_SCENARIO": "S2",
		"DSTGEN_TIER": "hardening", "DSTGEN_SUT_HOSTS": "10.0.0.1, 10.0.0.2:22,[fd00::3],http://10.0.0.4:2379/",
	}
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(t *testing.T, c config)
	}{
		{"defaults", nil, map[string]string{"DSTGEN_RUN_ID": "r0"}, func(t *testing.T, c config) {
			if c.History != "history.jsonl" || c.Clients != 4 || c.keys != 5 || c.Duration != 10*time.Second ||
				c.Rate != 0 || c.mix.name != "mixed" || c.Prefix != "dstgen/r0" || c.Seed != driver.DeriveSeed("r0") ||
				!slices.Equal(c.endpoints, []string{"http://127.0.0.1:2379"}) {
				t.Errorf("%+v", c)
			}
		}},
		{"env only", nil, full, func(t *testing.T, c config) {
			want := []string{"http://10.0.0.1:2379", "http://10.0.0.2:2379", "http://[fd00::3]:2379", "http://10.0.0.4:2379"}
			if c.History != "/r/h.jsonl" || c.RunID != "run-a" || c.Seed != 9 || c.Duration != 2500*time.Millisecond ||
				c.Rate != 50 || c.mix.name != "write" || c.keys != 12 || c.Scenario != "S2" || c.Tier != "hardening" ||
				c.Prefix != "dstgen/run-a" || !slices.Equal(c.endpoints, want) {
				t.Errorf("%+v", c)
			}
		}},
		{"client port for the SUT hosts", []string{"-client-port", "12379"}, map[string]string{"DSTGEN_SUT_HOSTS": "h1,h2"}, func(t *testing.T, c config) {
			if !slices.Equal(c.endpoints, []string{"http://h1:12379", "http://h2:12379"}) {
				t.Errorf("endpoints %v", c.endpoints)
			}
		}},
		{"flags win", []string{"-out", "x.jsonl", "-run-id", "flag-run", "-seed", "5", "-duration", "3s", "-rate", "7",
			"-mode", "read", "-keys", "2", "-scenario", "F", "-tier", "t", "-endpoints", "127.0.0.1:1,http://127.0.0.1:2/", "-prefix", "p/"}, full,
			func(t *testing.T, c config) {
				if c.History != "x.jsonl" || c.RunID != "flag-run" || c.Seed != 5 || c.Duration != 3*time.Second || c.Rate != 7 ||
					c.mix.name != "read" || c.keys != 2 || c.Scenario != "F" || c.Tier != "t" || c.Prefix != "p" ||
					!slices.Equal(c.endpoints, []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}) {
					t.Errorf("%+v", c)
				}
			}},
		{"seed 0 derives", nil, map[string]string{"DSTGEN_RUN_ID": "r1", "DSTGEN_SEED": "0"}, func(t *testing.T, c config) {
			if c.Seed != driver.DeriveSeed("r1") {
				t.Errorf("seed %d, want %d", c.Seed, driver.DeriveSeed("r1"))
			}
		}},
		{"empty prefix given: bare keys", []string{"-prefix", ""}, map[string]string{"DSTGEN_RUN_ID": "r"}, func(t *testing.T, c config) {
			if c.Prefix != "" || c.key(3) != "k3" {
				t.Errorf("prefix %q key %q", c.Prefix, c.key(3))
			}
		}},
		{"no run id: a local one", nil, nil, func(t *testing.T, c config) {
			if !strings.HasPrefix(c.RunID, "local-") || c.Prefix != "dstgen/"+c.RunID || c.Seed == 0 {
				t.Errorf("run id %q prefix %q seed %d", c.RunID, c.Prefix, c.Seed)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var notes bytes.Buffer
			c, err := configFrom(tt.args, envOf(tt.env), &notes)
			if err != nil {
				t.Fatalf("configFrom: %v", err)
			}
			tt.check(t, c)
		})
	}
}

func TestConfigRejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"unknown mode", nil, map[string]string{"DSTGEN_MODE": "scan"}, `DSTGEN_MODE "scan": unknown mode`},
		{"unknown mode flag", []string{"-mode", "x"}, nil, `-mode "x": unknown mode`},
		{"bad seed", nil, map[string]string{"DSTGEN_SEED": "one"}, "DSTGEN_SEED="},
		{"bad rate", nil, map[string]string{"DSTGEN_RATE": "-3"}, "DSTGEN_RATE="},
		{"nan rate", nil, map[string]string{"DSTGEN_RATE": "NaN"}, "DSTGEN_RATE="},
		{"negative rate flag", []string{"-rate", "-1"}, nil, "-rate -1"},
		{"bad duration", nil, map[string]string{"DSTGEN_DURATION_S": "0"}, "DSTGEN_DURATION_S="},
		{"huge duration", nil, map[string]string{"DSTGEN_DURATION_S": "1e300"}, "DSTGEN_DURATION_S="},
		{"zero keys", nil, map[string]string{"DSTGEN_DATASET": "0"}, "DSTGEN_DATASET="},
		{"too many clients", []string{"-clients", "257"}, nil, "-clients 257"},
		{"bad client port", []string{"-client-port", "0"}, map[string]string{"DSTGEN_SUT_HOSTS": "h"}, "-client-port 0"},
		{"no hosts", nil, map[string]string{"DSTGEN_SUT_HOSTS": " , "}, "no endpoint"},
		{"stray argument", []string{"extra"}, nil, `unexpected argument "extra"`},
		{"unknown flag", []string{"-bogus"}, nil, "bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"DSTGEN_RUN_ID": "r", "DSTGEN_HISTORY": filepath.Join(t.TempDir(), "h.jsonl")}
			for k, v := range tt.env {
				env[k] = v
			}
			var stderr bytes.Buffer
			code := realMain(context.Background(), tt.args, envOf(env), &stderr)
			out := stderr.String()
			if code != 2 || !strings.Contains(out, tt.want) || strings.Count(out, "\n") != 1 {
				t.Errorf("exit %d, stderr %q: want exit 2 and one line containing %q", code, out, tt.want)
			}
			if _, err := os.Stat(env["DSTGEN_HISTORY"]); err == nil {
				t.Error("a history was written for bad input")
			}
		})
	}
}

func TestDatasetNotAnIntegerIsIgnoredWithNote(t *testing.T) {
	var notes bytes.Buffer
	c, err := configFrom(nil, envOf(map[string]string{"DSTGEN_RUN_ID": "r", "DSTGEN_DATASET": "ycsb-a"}), &notes)
	if err != nil {
		t.Fatal(err)
	}
	if c.keys != 5 || !strings.Contains(notes.String(), `DSTGEN_DATASET="ycsb-a" is not an integer`) {
		t.Errorf("keys %d, notes %q", c.keys, notes.String())
	}
}

func TestSeedDerivedFromRunIDWhenUnset(t *testing.T) {
	seeds := map[int64]string{}
	for _, id := range []string{"20261201_183000", "20261201_183001", "S1-20261201_183000", "a", "b", ""} {
		c, err := configFrom([]string{"-run-id", id}, envOf(nil), &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		if id == "" {
			continue // a local run id, different every run
		}
		again, _ := configFrom(nil, envOf(map[string]string{"DSTGEN_RUN_ID": id}), &bytes.Buffer{})
		if c.Seed != again.Seed {
			t.Errorf("run id %q: seed %d then %d, want stable", id, c.Seed, again.Seed)
		}
		if c.Seed <= 0 || c.Seed >= 1<<53 {
			t.Errorf("run id %q: seed %d outside 1..2^53", id, c.Seed)
		}
		if prev, dup := seeds[c.Seed]; dup {
			t.Errorf("run ids %q and %q share seed %d", prev, id, c.Seed)
		}
		seeds[c.Seed] = id
	}
}

func TestValuesUniqueAndExactInJSON(t *testing.T) {
	seen := map[uint64]string{}
	for _, run := range []struct {
		id   string
		seed int64
	}{{"r1", 1}, {"r2", 1}, {"r1", 2}} {
		base := valueBase(run.id, run.seed)
		for _, client := range []int{0, 1, maxClients - 1} {
			for _, seq := range []int{1, 2, maxSeq} {
				v := opValue(base, client, seq)
				if v == 0 || v >= 1<<53 {
					t.Fatalf("value %d outside 1..2^53", v)
				}
				who := run.id + "/" + string(rune('0'+run.seed))
				if prev, dup := seen[v]; dup {
					t.Fatalf("value %d from %s and %s", v, prev, who)
				}
				seen[v] = who
			}
		}
	}
}

// The header keeps the recorder's fields (the seed exact past 2^53) and
// gains run_id and tier; the history package still reads it.
func TestHeaderCarriesRunIDAndTier(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config{Config: driver.Config{RunID: "r9", Scenario: "S", Seed: 1<<62 + 1, Clients: 1, Duration: 300 * time.Millisecond, Timeout: 100 * time.Millisecond},
		endpoints: []string{"http://127.0.0.1:1"}, keys: 1} // nothing listens: the ops fail, the header stays
	_, _ = run(context.Background(), cfg, f)
	f.Close()
	meta, ops, bad, err := history.ReadFile(path)
	if err != nil || len(bad) > 0 || len(ops) == 0 {
		t.Fatalf("read back: %v %v %d ops", err, bad, len(ops))
	}
	if meta.Seed != 1<<62+1 || meta.Scenario != "S" || meta.Schema != history.Schema || meta.Clock != "monotonic" {
		t.Errorf("meta %+v", meta)
	}
	h := rawHeader(t, path)
	if _, hasTier := h["tier"]; h["run_id"] != "r9" || hasTier {
		t.Errorf("header %v: want run_id r9 and no empty tier", h)
	}
}

// The flags the scenario runs use (S1's mix, S2's fresh puts and final
// dump, the serializable negative control) and their variables.
func TestConfigScenarioFlags(t *testing.T) {
	three := "http://h1:2379,http://h2:2379,http://h3:2379"
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(t *testing.T, c config, notes string)
	}{
		{"defaults: linearizable, no dump", nil, nil, func(t *testing.T, c config, _ string) {
			if c.serializable || c.Final != "" || c.FinalOnly || c.FinalTimeout != 20*time.Second || c.mix.fresh {
				t.Errorf("%+v", c)
			}
		}},
		{"consistency s", []string{"-consistency", "s"}, nil, func(t *testing.T, c config, _ string) {
			if !c.serializable {
				t.Error("-consistency s: reads not serializable")
			}
		}},
		{"consistency spelled out", []string{"--consistency=serializable"}, nil, func(t *testing.T, c config, _ string) {
			if !c.serializable {
				t.Error("--consistency=serializable: reads not serializable")
			}
		}},
		{"consistency l", []string{"-consistency", "L"}, nil, func(t *testing.T, c config, _ string) {
			if c.serializable {
				t.Error("-consistency L: reads serializable")
			}
		}},
		{"mix 5/4/1", []string{"-mix", "5/4/1"}, nil, func(t *testing.T, c config, _ string) {
			if c.mix.read != 5 || c.mix.write != 4 || c.mix.fresh {
				t.Errorf("mix %+v", c.mix)
			}
		}},
		{"mix wins over DSTGEN_MODE", []string{"-mix", "0/10/0"}, map[string]string{"DSTGEN_MODE": "read"}, func(t *testing.T, c config, _ string) {
			if c.mix.read != 0 || c.mix.write != 10 {
				t.Errorf("mix %+v", c.mix)
			}
		}},
		{"mode fresh-puts", []string{"--mode", "fresh-puts"}, nil, func(t *testing.T, c config, _ string) {
			if !c.mix.fresh || c.mix.name != "fresh-puts" {
				t.Errorf("mix %+v", c.mix)
			}
		}},
		{"DSTGEN_MODE fresh-puts", nil, map[string]string{"DSTGEN_MODE": "Fresh-Puts"}, func(t *testing.T, c config, _ string) {
			if !c.mix.fresh {
				t.Errorf("mix %+v", c.mix)
			}
		}},
		{"DSTGEN_FINAL", nil, map[string]string{"DSTGEN_FINAL": "/r/final.json"}, func(t *testing.T, c config, _ string) {
			if c.Final != "/r/final.json" {
				t.Errorf("final %q", c.Final)
			}
		}},
		{"final flag wins", []string{"-final", "f.json", "-final-timeout", "3s"}, map[string]string{"DSTGEN_FINAL": "/r/final.json"}, func(t *testing.T, c config, _ string) {
			if c.Final != "f.json" || c.FinalTimeout != 3*time.Second {
				t.Errorf("final %q timeout %v", c.Final, c.FinalTimeout)
			}
		}},
		{"final-only", []string{"-final-only"}, map[string]string{"DSTGEN_FINAL": "/r/final.json"}, func(t *testing.T, c config, _ string) {
			if !c.FinalOnly || c.Final != "/r/final.json" {
				t.Errorf("finalOnly %v final %q", c.FinalOnly, c.Final)
			}
		}},
		{"clients raised to one per endpoint", []string{"-endpoints", three + ",http://h4:2379,http://h5:2379"}, nil, func(t *testing.T, c config, _ string) {
			if c.Clients != 5 {
				t.Errorf("clients %d, want 5 (one per endpoint)", c.Clients)
			}
		}},
		{"clients given below endpoints: a note", []string{"-endpoints", three, "-clients", "2"}, nil, func(t *testing.T, c config, notes string) {
			if c.Clients != 2 || !strings.Contains(notes, "http://h3:2379 get no client") {
				t.Errorf("clients %d notes %q", c.Clients, notes)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"DSTGEN_RUN_ID": "r"}
			for k, v := range tt.env {
				env[k] = v
			}
			var notes bytes.Buffer
			c, err := configFrom(tt.args, envOf(env), &notes)
			if err != nil {
				t.Fatalf("configFrom: %v", err)
			}
			tt.check(t, c, notes.String())
		})
	}
}

// Bad values of the scenario flags: exit 2, one line naming the flag.
func TestConfigRejectsBadScenarioFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"unknown consistency", []string{"-consistency", "x"}, nil, `-consistency "x": want l (linearizable) or s (serializable)`},
		{"mix of two", []string{"-mix", "5/5"}, nil, `-mix "5/5": want reads/writes/cas out of 10`},
		{"mix not summing to 10", []string{"-mix", "5/4/2"}, nil, `-mix "5/4/2": the three counts sum to 11`},
		{"mix not numbers", []string{"-mix", "a/b/c"}, nil, `-mix "a/b/c": "a" is not a count`},
		{"mix negative", []string{"-mix", "-1/10/1"}, nil, `"-1" is not a count`},
		{"mix with fresh-puts", []string{"-mix", "5/4/1", "-mode", "fresh-puts"}, nil, `-mix "5/4/1": does not apply to -mode fresh-puts`},
		{"mix with DSTGEN_MODE fresh-puts", []string{"-mix", "5/4/1"}, map[string]string{"DSTGEN_MODE": "fresh-puts"}, `does not apply to DSTGEN_MODE fresh-puts`},
		{"final-only without a path", []string{"-final-only"}, nil, "-final-only: no dump path (-final or DSTGEN_FINAL)"},
		{"final timeout zero", []string{"-final-timeout", "0s"}, nil, "-final-timeout 0s"},
		{"unknown mode names fresh-puts", []string{"-mode", "fresh"}, nil, `want read, write, mixed or fresh-puts`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			env := map[string]string{"DSTGEN_RUN_ID": "r", "DSTGEN_HISTORY": filepath.Join(dir, "h.jsonl")}
			for k, v := range tt.env {
				env[k] = v
			}
			var stderr bytes.Buffer
			code := realMain(context.Background(), tt.args, envOf(env), &stderr)
			out := stderr.String()
			if code != 2 || !strings.Contains(out, tt.want) || strings.Count(out, "\n") != 1 {
				t.Errorf("exit %d, stderr %q: want exit 2 and one line containing %q", code, out, tt.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) > 0 {
				t.Errorf("bad input wrote %s", entries[0].Name())
			}
		})
	}
}

func TestFreshKeysAndRange(t *testing.T) {
	tests := []struct {
		prefix, key, start, end string
	}{
		{"dstgen/r1", "dstgen/r1/s2/3/17", "dstgen/r1/", "dstgen/r10"},
		{"", "s2/3/17", "\x00", "\x00"},
	}
	for _, tt := range tests {
		c := config{Config: driver.Config{Prefix: tt.prefix}}
		if k := c.freshKey(3, 17); k != tt.key {
			t.Errorf("prefix %q: fresh key %q, want %q", tt.prefix, k, tt.key)
		}
		start, end := c.keyRange()
		if start != tt.start || end != tt.end {
			t.Errorf("prefix %q: range [%q, %q), want [%q, %q)", tt.prefix, start, end, tt.start, tt.end)
		}
		// Every key of the run lies in the range; a sibling run's does not.
		if tt.prefix != "" && (tt.key < start || tt.key >= end || "dstgen/r10/k1" < end) {
			t.Errorf("range [%q, %q) misplaces keys", start, end)
		}
	}
}
