package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// txnLine is one committed transaction of a dst-history/1 file.
func txnLine(id string, inv, comp int64, input, output string) string {
	return `{"op_id":"` + id + `","process_id":"p` + id + `","invoke_ts":` + checkItoa(inv) + `,"complete_ts":` + checkItoa(comp) +
		`,"op_type":"txn","key":null,"input":` + input + `,"output":` + output +
		`,"error":null,"timeout_marker":false,"node_seen":null,"fault_epoch":null}` + "\n"
}

func TestCheckIsolationCommand(t *testing.T) {
	// Write skew: each reads the key the other appends to, both commit.
	skew := checkWriteFile(t, "skew.jsonl",
		txnLine("1", 0, 10, `[["r","x",null],["append","y",1]]`, `[["r","x",[]],["append","y",1]]`)+
			txnLine("2", 0, 10, `[["r","y",null],["append","x",1]]`, `[["r","y",[]],["append","x",1]]`)+
			txnLine("3", 20, 30, `[["r","x",null],["r","y",null]]`, `[["r","x",[1]],["r","y",[1]]]`))
	malformed := checkWriteFile(t, "malformed.jsonl", txnLine("1", 0, 10, `[["cas","x",1]]`, `[["cas","x",1]]`))
	html := filepath.Join(t.TempDir(), "cycles.html")
	tests := []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{"write skew at serializable", []string{"check", "--model", "txn", "--checker", "serializability", "--level", "serializable", "--html", html, skew}, 1, "anomaly G2-item", ""},
		{"default checker and level", []string{"check", "--model", "txn", skew}, 1, "checker=serializability", ""},
		{"write skew at snapshot isolation", []string{"check", "--model", "txn", "--level", "snapshot-isolation", skew}, 0, "found but allowed at snapshot-isolation: G2-item ×1", ""},
		{"write skew at repeatable read", []string{"check", "--model", "txn", "--level", "repeatable-read", skew}, 1, "anomaly G2-item", ""},
		{"unknown level", []string{"check", "--model", "txn", "--level", "eventual", skew}, 2, "", `--level "eventual": want one of read-committed, snapshot-isolation, repeatable-read,`},
		{"malformed txn", []string{"check", "--model", "txn", malformed}, 2, "", "malformed.jsonl:1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), tt.args, strings.NewReader(""), &out, &errb)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), tt.out) {
				t.Errorf("stdout %q lacks %q", out.String(), tt.out)
			}
			if !strings.Contains(errb.String(), tt.err) {
				t.Errorf("stderr %q lacks %q", errb.String(), tt.err)
			}
		})
	}
	if b, err := os.ReadFile(html); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("--html picture not written: %v", err)
	}
}
