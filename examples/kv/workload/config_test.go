package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/driver"
	"github.com/dstgen/dstgen/history"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParseConfig(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	eps := []string{"-endpoints", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(config) string
		wantErr string
	}{
		{"defaults", eps, nil, func(c config) string {
			if c.History != "history.jsonl" || c.RunID != "local-20260102_030405-7" || c.Duration != 10*time.Second ||
				c.Rate != 0 || c.Clients != 6 || c.keys != 3 || c.mix != 50 || c.Timeout != time.Second ||
				c.Prefix != "kv/local-20260102_030405-7" || c.Seed == 0 {
				return fmt.Sprintf("%+v", c)
			}
			return ""
		}, ""},
		{"env", eps, map[string]string{"DSTGEN_HISTORY": "/h", "DSTGEN_RUN_ID": "r1", "DSTGEN_SEED": "9",
			"DSTGEN_DURATION_S": "2.5", "DSTGEN_RATE": "100", "DSTGEN_SCENARIO": "S2", "DSTGEN_TIER": "smoke"}, func(c config) string {
			if c.History != "/h" || c.RunID != "r1" || c.Seed != 9 || c.Duration != 2500*time.Millisecond || c.Rate != 100 ||
				c.Scenario != "S2" || c.Tier != "smoke" || c.Prefix != "kv/r1" {
				return fmt.Sprintf("%+v", c)
			}
			return ""
		}, ""},
		{"flags win", append([]string{"-out", "/f", "-run-id", "r2", "-seed", "3", "-duration", "1s", "-rate", "0", "-clients", "1"}, eps...),
			map[string]string{"DSTGEN_HISTORY": "/h", "DSTGEN_RUN_ID": "r1", "DSTGEN_SEED": "x", "DSTGEN_DURATION_S": "bad", "DSTGEN_RATE": "-1"},
			func(c config) string {
				if c.History != "/f" || c.RunID != "r2" || c.Seed != 3 || c.Duration != time.Second || c.Rate != 0 || c.Clients != 1 {
					return fmt.Sprintf("%+v", c)
				}
				return ""
			}, ""},
		{"same run id, same seed", append([]string{"-run-id", "r"}, eps...), nil, func(c config) string {
			if c.Seed != driver.DeriveSeed("r") {
				return fmt.Sprint("seed ", c.Seed)
			}
			return ""
		}, ""},
		{"no endpoints", nil, nil, nil, "-endpoints: required"},
		{"bad endpoint", []string{"-endpoints", "127.0.0.1"}, nil, nil, "-endpoints: \"127.0.0.1\""},
		{"bad seed env", eps, map[string]string{"DSTGEN_SEED": "x"}, nil, "DSTGEN_SEED=\"x\""},
		{"bad duration env", eps, map[string]string{"DSTGEN_DURATION_S": "0"}, nil, "DSTGEN_DURATION_S=\"0\""},
		{"bad rate env", eps, map[string]string{"DSTGEN_RATE": "x"}, nil, "DSTGEN_RATE=\"x\""},
		{"bad rate flag", append([]string{"-rate", "-2"}, eps...), nil, nil, "-rate -2"},
		{"bad mix", append([]string{"-mix", "101"}, eps...), nil, nil, "-mix 101"},
		{"bad keys", append([]string{"-keys", "0"}, eps...), nil, nil, "-keys 0"},
		{"bad clients", append([]string{"-clients", "0"}, eps...), nil, nil, "-clients 0"},
		{"bad timeout", append([]string{"-timeout", "0s"}, eps...), nil, nil, "-timeout 0s"},
		{"unknown flag", append([]string{"-nope"}, eps...), nil, nil, "-nope"},
		{"stray argument", append(eps, "x"), nil, nil, "unexpected argument"},
	}
	for _, tt := range tests {
		c, err := parseConfig(tt.args, env(tt.env), now, 7)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: error %v, want one line containing %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if msg := tt.check(c); msg != "" {
			t.Errorf("%s: got %s", tt.name, msg)
		}
	}
}

func TestClassify(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	read := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	tests := []struct {
		name        string
		status      int
		body        string
		err         error
		wantOutcome string
		wantCode    string
	}{
		{"ok", 200, `{"ok":true}`, nil, "ok", ""},
		{"leader unreachable", 503, `{"error":"unavailable"}`, nil, "fail", "unavailable"},
		{"no majority in time", 503, `{"error":"timeout"}`, nil, "timeout", "timeout"},
		{"refused", 0, "", fmt.Errorf("Put: %w", dial), "fail", "refused"},
		{"client timeout", 0, "", context.DeadlineExceeded, "timeout", "timeout"},
		{"reset", 0, "", read, "timeout", "reset"},
		{"bad request", 400, `{"error":"x"}`, nil, "fail", "http-400"},
		{"server error", 500, ``, nil, "timeout", "http-500"},
	}
	for _, tt := range tests {
		o, c := classify(tt.status, []byte(tt.body), tt.err)
		if o != tt.wantOutcome || c != tt.wantCode {
			t.Errorf("%s: classify = %s %s, want %s %s", tt.name, o, c, tt.wantOutcome, tt.wantCode)
		}
	}
}

func TestValuesUnique(t *testing.T) {
	base := valueBase("r", 1)
	seen := map[int64]bool{}
	for client := range 4 {
		for seq := 1; seq <= 1000; seq++ {
			v := opValue(base, client, seq)
			if seen[v] || v >= 1<<53 || v < 0 {
				t.Fatalf("value %d (client %d seq %d) repeats or is out of range", v, client, seq)
			}
			seen[v] = true
		}
	}
	if valueBase("r", 1) == valueBase("r", 2) {
		t.Error("two seeds share a value base")
	}
}

func TestDecodeValue(t *testing.T) {
	tests := []struct {
		in   string
		want any
	}{{"null", nil}, {"", nil}, {"42", int64(42)}, {`"s"`, "s"}}
	for _, tt := range tests {
		got, err := decodeValue([]byte(tt.in))
		if err != nil || got != tt.want {
			t.Errorf("decodeValue(%q) = %#v, %v; want %#v", tt.in, got, err, tt.want)
		}
	}
}

// TestRunRecordsRefusedAsFailed: against a node that is not there every op
// is recorded — as a failure, since the request never left — and the
// history is still written; the run fails, naming the first error.
func TestRunRecordsRefusedAsFailed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	out := t.TempDir() + "/h.jsonl"
	var stderr bytes.Buffer
	code := driver.Exec(context.Background(), &config{}, []string{"-endpoints", dead, "-out", out, "-duration", "300ms", "-clients", "2"},
		driver.Env{Getenv: env(nil), Stdout: io.Discard, Stderr: &stderr})
	_, ops, bad, err := history.ReadFile(out)
	if err != nil || len(bad) > 0 {
		t.Fatalf("history: %v %v", err, bad)
	}
	failed := 0
	for _, o := range ops {
		if o.Error == "refused" && !o.TimeoutMarker && o.CompleteTS != nil {
			failed++
		}
	}
	if code != 1 || len(ops) == 0 || failed != len(ops) {
		t.Errorf("exit %d, ops %d failed %d, want exit 1 and every op failed as refused", code, len(ops), failed)
	}
	if l := stderr.String(); !strings.Contains(l, `first_error="refused"`) {
		t.Errorf("summary %q does not name the first error", l)
	}
}
