package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReduceCommand(t *testing.T) {
	meta := `{"_meta":{"scenario":"S1","clock":"monotonic","schema":"dst-history/1"}}` + "\n"
	var noisy strings.Builder
	noisy.WriteString(meta)
	// Unrelated ops on other keys around a stale read on k: ops 1..3 form it.
	noisy.WriteString(checkOpLine("1", "p", 0, 10, "write", "1", "null") + checkOpLine("2", "p", 20, 30, "write", "2", "null") +
		checkOpLine("3", "q", 40, 50, "read", "null", "1"))
	for i := int64(0); i < 30; i++ {
		noisy.WriteString(strings.Replace(checkOpLine("n"+checkItoa(i), "r", 100+i*10, 105+i*10, "write", checkItoa(100+i), "null"), `"key":"k"`, `"key":"other"`, 1))
	}
	stale := checkWriteFile(t, "stale.jsonl", noisy.String())
	good := checkWriteFile(t, "good.jsonl", meta+checkOpLine("1", "p", 0, 10, "write", "1", "null")+checkOpLine("2", "q", 20, 30, "read", "null", "1"))
	out := filepath.Join(t.TempDir(), "min.jsonl")
	tests := []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{"reduces", []string{"reduce", "--model", "kv", "--out", out, stale}, 0, `reduced from 33 ops to 3 ops (keys "k", window 0..50 ns)`, ""},
		{"valid refused", []string{"reduce", "--model", "kv", good}, 1, "", "no anomaly to reduce: linearizability outcome valid"},
		{"no model", []string{"reduce", stale}, 2, "", "--model is required"},
		{"bad run.json", []string{"reduce", "--model", "kv", "--run", "/nonexistent/run.json", stale}, 2, "", "run.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o, e bytes.Buffer
			code := run(context.Background(), tt.args, strings.NewReader(""), &o, &e)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, o.String(), e.String())
			}
			if !strings.Contains(o.String(), tt.out) || !strings.Contains(e.String(), tt.err) {
				t.Errorf("stdout %q (want %q), stderr %q (want %q)", o.String(), tt.out, e.String(), tt.err)
			}
		})
	}
	data, err := os.ReadFile(out)
	if err != nil || bytes.Count(data, []byte("\n")) != 4 || !bytes.HasPrefix(data, []byte(`{"_meta":`)) {
		t.Errorf("reduced history: %v\n%s", err, data)
	}
}
