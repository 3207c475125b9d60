package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var updateCheckGolden = flag.Bool("update-check", false, "rewrite testdata/check/*.golden")

func checkWriteFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func checkOpLine(id, proc string, inv, comp int64, typ, input, output string) string {
	c := "null"
	if comp >= 0 {
		c = checkItoa(comp)
	}
	return `{"op_id":"` + id + `","process_id":"` + proc + `","invoke_ts":` + checkItoa(inv) + `,"complete_ts":` + c +
		`,"op_type":"` + typ + `","key":"k","input":` + input + `,"output":` + output +
		`,"error":null,"timeout_marker":` + strconv.FormatBool(comp < 0) + `,"node_seen":"n1","fault_epoch":null}` + "\n"
}

func checkItoa(v int64) string { return strconv.FormatInt(v, 10) }

func TestCheckCommand(t *testing.T) {
	meta := `{"_meta":{"scenario":"S1","clock":"monotonic","schema":"dst-history/1"}}` + "\n"
	good := checkWriteFile(t, "good.jsonl", meta+checkOpLine("1", "p", 0, 10, "write", "1", "null")+checkOpLine("2", "q", 20, 30, "read", "null", "1"))
	stale := checkWriteFile(t, "bad.jsonl", meta+checkOpLine("1", "p", 0, 10, "write", "1", "null")+
		checkOpLine("2", "p", 20, 30, "write", "2", "null")+checkOpLine("3", "q", 40, 50, "read", "null", "1"))
	garbage := checkWriteFile(t, "garbage.jsonl", checkOpLine("1", "p", 0, 10, "write", "1", "null")+"{not json\n")
	wrongType := checkWriteFile(t, "wrong.jsonl", checkOpLine("1", "p", 0, 10, "enqueue", "1", "null"))
	logScalar := checkWriteFile(t, "log-scalar.jsonl", checkOpLine("1", "p", 0, 10, "append", "1", "null")+checkOpLine("2", "q", 20, 30, "read", "null", "5"))
	metaOnly := checkWriteFile(t, "meta-only.jsonl", meta)
	dup := checkWriteFile(t, "dup.jsonl", checkOpLine("1", "p", 0, 10, "read", "null", "1")+checkOpLine("1", "p", 0, 10, "read", "null", "2"))
	var slow strings.Builder
	for i := int64(0); i < 40; i++ {
		slow.WriteString(checkOpLine(checkItoa(i), "p"+checkItoa(i), i, 1000+i, "write", checkItoa(i), "null"))
	}
	slow.WriteString(checkOpLine("x", "x", 4000, 5000, "read", "null", "0") + checkOpLine("y", "x", 6000, 7000, "read", "null", "1"))
	slowPath := checkWriteFile(t, "slow.jsonl", slow.String())
	html := filepath.Join(t.TempDir(), "v.html")
	// The second run on the same cluster reads what the first one wrote.
	leftover := checkWriteFile(t, "leftover.jsonl", meta+checkOpLine("1", "q", 0, 10, "read", "null", "7")+
		checkOpLine("2", "p", 20, 30, "write", "1", "null")+checkOpLine("3", "q", 40, 50, "read", "null", "1"))
	var tenants strings.Builder
	tenants.WriteString(meta)
	for i := int64(0); i < 100; i++ {
		tenants.WriteString(strings.Replace(checkOpLine(checkItoa(i), "p", i*10_000_000, i*10_000_000+1000, "put", `{"tenant":"t1"}`, "null"), `"key":"k"`, `"key":"t1"`, 1))
	}
	fairPath := checkWriteFile(t, "tenants.jsonl", tenants.String())

	tests := []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{"valid", []string{"check", "--model", "kv", good}, 0, "outcome=valid", ""},
		{"default checker from model", []string{"check", "--model", "register", good}, 0, "checker=linearizability", ""},
		{"anomaly", []string{"check", "--model", "kv", "--html", html, stale}, 1, `anomaly nonlinearizable key="k" ops=3`, ""},
		{"json", []string{"check", "--model", "kv", "--json", stale}, 1, `"outcome": "invalid"`, ""},
		{"unknown on time limit", []string{"check", "--model", "register", "--timeout", "30ms", slowPath}, 3, "outcome=unknown", ""},
		{"garbage line", []string{"check", "--model", "kv", garbage}, 2, "ops=1", "garbage.jsonl:2:"},
		{"op type not in model", []string{"check", "--model", "kv", wrongType}, 2, "", "wrong.jsonl:1: op_type"},
		// Every checker names the history line of a bad op the same way.
		{"prefix read not a list", []string{"check", "--model", "log", "--checker", "prefix", logScalar}, 2, "", "log-scalar.jsonl:2: log read output must be a JSON array"},
		{"recorder bug", []string{"check", "--model", "kv", dup}, 2, "", "recorder bug"},
		{"missing file", []string{"check", "--model", "kv", "/nonexistent.jsonl"}, 2, "", "open history"},
		// Zero ops consumed is red flag 2: an empty history must not pass.
		{"no ops", []string{"check", "--model", "kv", metaOnly}, 2, "ops=0", "meta-only.jsonl: no ops"},
		{"no model", []string{"check", good}, 2, "", "--model is required"},
		{"unknown checker", []string{"check", "--model", "kv", "--checker", "nope", good}, 2, "", "unknown checker"},
		{"missing final", []string{"check", "--model", "log", "--checker", "no-lost-ack", good}, 2, "", "needs a final state"},
		// Left-over state is an environment problem: its own result line,
		// exit 2, never "anomaly" / exit 1.
		{"dirty initial state", []string{"check", "--model", "kv", leftover}, 2, `result=dirty-initial-state key="k" value=7 process=q op=1 line=` + leftover + `:2`, "dirty initial state"},
		// The plan fixture's formula form (a unit on the bound) is the one
		// grammar dstgen check reads too.
		{"fairness formula with unit", []string{"check", "--model", "kv", "--checker", "fairness", "--param", "formula=group=tenant; min_group_throughput >= 190 ops/s", fairPath}, 1, "threshold min_group_throughput >= 190 ops/s", ""},
		{"fairness formula bad", []string{"check", "--model", "kv", "--checker", "fairness", "--param", "formula=tenant", fairPath}, 2, "", "group=<dimension>"},
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
	if _, err := os.Stat(html); err != nil {
		t.Errorf("--html not written: %v", err)
	}
}

// TestCheckGolden pins the text report (elapsed time and temp paths masked).
func TestCheckGolden(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "h.jsonl")
	body := `{"_meta":{"scenario":"S1","clock":"monotonic","schema":"dst-history/1"}}` + "\n" +
		checkOpLine("1", "p", 0, 10, "write", "1", "null") + checkOpLine("2", "p", 20, 30, "write", "2", "null") +
		checkOpLine("3", "q", 40, 50, "read", "null", "1") + checkOpLine("4", "r", 45, -1, "write", "3", "null")
	if err := os.WriteFile(hist, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"text", "json"} {
		t.Run(name, func(t *testing.T) {
			args := []string{"check", "--model", "kv", "--html", filepath.Join(dir, "v.html"), hist}
			if name == "json" {
				args = append(args, "--json")
			}
			var out, errb bytes.Buffer
			if code := run(context.Background(), args, strings.NewReader(""), &out, &errb); code != 1 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			got := strings.ReplaceAll(out.String(), dir, "DIR")
			got = regexp.MustCompile(` in [0-9.]+[µmn]?s\n`).ReplaceAllString(got, " in ELAPSED\n")
			got = regexp.MustCompile(`"elapsed_ns": \d+`).ReplaceAllString(got, `"elapsed_ns": 0`)
			golden := filepath.Join("testdata", "check", name+".golden")
			if *updateCheckGolden {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update-check)", err)
			}
			if got != string(want) {
				t.Errorf("report differs from %s:\n%s", golden, got)
			}
		})
	}
}
