package main

import (
	"bytes"
	"context"
	sqldriver "database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/driver"
	"github.com/dstgen/dstgen/history"
)

// envOf is a getenv over m only, so the tests never read the machine's
// DSTGEN_* variables.
func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// configure is what main would run with for args and env.
func configure(t *testing.T, args []string, env map[string]string) (*workload, *driver.Config, string, error) {
	t.Helper()
	w := &workload{}
	var notes bytes.Buffer
	cfg, err := driver.Configure(w, args, driver.Env{Getenv: envOf(env), Stderr: &notes})
	return w, cfg, notes.String(), err
}

func TestClassify(t *testing.T) {
	deadlock := &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock; try restarting transaction"}
	for _, tc := range []struct {
		name     string
		st       stage
		err      error
		definite bool
		code     string
	}{
		{"deadlock before commit", beforeCommit, deadlock, true, "deadlock"},
		{"certification failure at commit", atCommit, deadlock, true, "deadlock"},
		{"lock wait timeout", beforeCommit, &mysql.MySQLError{Number: 1205}, true, "lock-wait-timeout"},
		{"snapshot conflict at commit", atCommit, &mysql.MySQLError{Number: 1020}, true, "snapshot-conflict"},
		{"node not ready", atCommit, &mysql.MySQLError{Number: 1047, Message: "WSREP has not yet prepared node for application use"}, true, "wsrep-not-ready"},
		{"duplicate id", atCommit, &mysql.MySQLError{Number: 1062}, true, "duplicate-key"},
		{"other server error before commit", beforeCommit, &mysql.MySQLError{Number: 1180}, true, "mysql-1180"},
		{"other server error at commit", atCommit, &mysql.MySQLError{Number: 1180}, false, "commit-mysql-1180"},
		{"wrapped server error at commit", atCommit, fmt.Errorf("commit: %w", &mysql.MySQLError{Number: 1317}), false, "commit-mysql-1317"},
		{"never sent", atCommit, sqldriver.ErrBadConn, true, "not-sent"},
		{"timeout before commit", beforeCommit, context.DeadlineExceeded, true, "timeout-before-commit"},
		{"timeout at commit", atCommit, fmt.Errorf("exec: %w", context.DeadlineExceeded), false, "timeout"},
		{"connection lost before commit", beforeCommit, mysql.ErrInvalidConn, true, "conn-lost-before-commit"},
		{"connection lost at commit", atCommit, io.ErrUnexpectedEOF, false, "conn-lost"},
		{"a row this workload did not write", beforeCommit, fmt.Errorf("%w: x", errBadValue), true, "bad-value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			definite, code := classify(tc.st, tc.err)
			if definite != tc.definite || code != tc.code {
				t.Errorf("classify = (%t, %q), want (%t, %q)", definite, code, tc.definite, tc.code)
			}
		})
	}
}

func TestSetupRejectsBadInput(t *testing.T) {
	pwMissing := filepath.Join(t.TempDir(), "none")
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"-mode", "bank"}, nil, `-mode "bank": unknown mode`},
		{nil, map[string]string{"DSTGEN_MODE": "bank"}, `DSTGEN_MODE "bank"`},
		{[]string{"-isolation", "read-uncommitted"}, nil, "-isolation"},
		{[]string{"-snapshot-isolation", "maybe"}, nil, "-snapshot-isolation"},
		{[]string{"-sync-wait", "16"}, nil, "-sync-wait 16"},
		{[]string{"-keys", "0"}, nil, "-keys 0"},
		{nil, map[string]string{"DSTGEN_DATASET": "-3"}, "DSTGEN_DATASET"},
		{[]string{"-rotate", "10ms"}, nil, "-rotate"},
		{[]string{"-prefix", strings.Repeat("p", 200)}, nil, "-prefix"},
		{[]string{"-database", "a;drop"}, nil, "-database"},
		{[]string{"-user", " "}, nil, "-user"},
		{[]string{"-password-file", pwMissing}, nil, "-password-file"},
		{[]string{"-endpoints", "unix:"}, nil, "unix:"},
		{[]string{"-endpoints", "h:99999"}, nil, "h:99999"},
		{[]string{"-endpoints", " , "}, nil, "no endpoint"},
		{nil, map[string]string{"DSTGEN_SUT_HOSTS": "10.0.0.1"}, ""}, // ok: the contract's hosts
		{nil, map[string]string{"DSTGEN_MODE": "mixed"}, ""},         // ok: env.yml's default benchmark mode is append
	} {
		t.Run(strings.Join(tc.args, " ")+fmt.Sprint(tc.env), func(t *testing.T) {
			_, _, _, err := configure(t, tc.args, tc.env)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestEndpointsFromTheContract(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, cfg, notes, err := configure(t, []string{"-port", "3307", "-password-file", pw},
		map[string]string{"DSTGEN_SUT_HOSTS": "10.0.0.1, 10.0.0.2:22,[fd00::3]", "DSTGEN_DATASET": "many", "DSTGEN_RUN_ID": "r1"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range w.endpoints {
		names = append(names, e.net+" "+e.name)
	}
	if got, want := strings.Join(names, ","), "tcp 10.0.0.1:3307,tcp 10.0.0.2:3307,tcp [fd00::3]:3307"; got != want {
		t.Errorf("endpoints %s, want %s", got, want)
	}
	if w.pass != "s3cret" || cfg.Clients != 4 || w.keys != 5 || w.mode != modeAppend || w.isolation != "REPEATABLE READ" {
		t.Errorf("pass %q clients %d keys %d mode %s isolation %s", w.pass, cfg.Clients, w.keys, w.mode, w.isolation)
	}
	if !strings.Contains(notes, `DSTGEN_DATASET="many" is not an integer`) {
		t.Errorf("notes: %s", notes)
	}
	if cfg.HidesRetries == nil || *cfg.HidesRetries || cfg.Prefix != "dstgen/r1" {
		t.Errorf("hides_retries %v prefix %s", cfg.HidesRetries, cfg.Prefix)
	}
	// A flag wins over the variable; every member gets a client.
	w, cfg, _, err = configure(t, []string{"-endpoints", "a:1,b:2,unix:/run/mysqld/mysqld.sock,c:4,d:5", "-isolation", "serializable", "-mode", "durability"},
		map[string]string{"DSTGEN_SUT_HOSTS": "10.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.endpoints) != 5 || w.endpoints[2].net != "unix" || w.endpoints[2].addr != "/run/mysqld/mysqld.sock" || cfg.Clients != 5 ||
		w.isolation != "SERIALIZABLE" || w.mode != modeDurability {
		t.Errorf("endpoints %+v clients %d isolation %s mode %s", w.endpoints, cfg.Clients, w.isolation, w.mode)
	}
	if got := strings.Join(w.sessionSQL(), "; "); got != "SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE" {
		t.Errorf("session SQL %q", got)
	}
	w, _, _, err = configure(t, []string{"-snapshot-isolation", "on", "-sync-wait", "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(w.sessionSQL(), "; "); got != "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ; SET SESSION innodb_snapshot_isolation = ON; SET SESSION wsrep_sync_wait = 1" {
		t.Errorf("session SQL %q", got)
	}
}

// Next's transactions: 2-4 micro-ops on the generation's keys, every
// appended value unique across clients, and the input the history records
// is what Do will run.
func TestNextTransactions(t *testing.T) {
	w, _, _, err := configure(t, []string{"-keys", "3", "-rotate", "1h", "-run-id", "r"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := w.keyBase(time.Now())
	seen := map[string]bool{}
	for i := range 3 {
		c := newAppendClient(&conn{w: w, ep: w.endpoints[0]}, i)
		for range 200 {
			op, ok := c.Next()
			if !ok {
				t.Fatal("client exhausted")
			}
			in := op.Input.([]history.MicroOp)
			if op.Type != history.OpTxn || len(in) < minMicro || len(in) > maxMicro || len(in) != len(c.cur) || op.Node != "127.0.0.1:3306" {
				t.Fatalf("op %+v (steps %d)", op, len(c.cur))
			}
			for j, m := range in {
				s := c.cur[j]
				if m.F != s.f || m.Key != w.key(s.k) || s.k < base || s.k >= base+3 && w.keyBase(time.Now()) == base {
					t.Fatalf("micro-op %v against step %+v (base %d)", m, s, base)
				}
				if m.F == history.MicroAppend {
					if seen[string(m.Value)] {
						t.Fatalf("value %s appended twice", m.Value)
					}
					seen[string(m.Value)] = true
				} else if m.Value != nil {
					t.Fatalf("a read carries a value in input: %v", m)
				}
			}
		}
	}
	if len(seen) < 100 {
		t.Errorf("%d appends in 600 transactions", len(seen))
	}
	if w.keyBase(time.Unix(0, 0).Add(2*time.Hour)) != 2*3 {
		t.Errorf("generation 2 of 3 keys starts at %d", w.keyBase(time.Unix(0, 0).Add(2*time.Hour)))
	}
	d := &durableClient{conn: &conn{w: w, ep: w.endpoints[0]}, id: 7}
	op, _ := d.Next()
	if op.Type != "add" || op.Key != "dstgen/r/ids" || string(op.Input.(json.RawMessage)) != "7000001" {
		t.Errorf("durability op %+v", op)
	}
}

func TestParseList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		bad  bool
	}{
		{"", "[]", false}, {"5", "[5]", false}, {"1,2000003,3", "[1,2000003,3]", false},
		{"1,,2", "", true}, {"1,x", "", true},
	} {
		got, err := parseList(tc.in)
		if tc.bad {
			if !errors.Is(err, errBadValue) {
				t.Errorf("parseList(%q) = %v, %v; want a bad-value error", tc.in, got, err)
			}
			continue
		}
		b, _ := json.Marshal(got)
		if err != nil || string(b) != tc.want {
			t.Errorf("parseList(%q) = %s, %v; want %s", tc.in, b, err, tc.want)
		}
	}
}

func TestIntersect(t *testing.T) {
	m := func(s string) map[string]json.RawMessage {
		return map[string]json.RawMessage{"ids": json.RawMessage(s)}
	}
	got := intersect([]map[string]json.RawMessage{m("[3,1,2,2]"), m("[2,3,4]"), m("[1,2,3]")}, "ids")
	if string(got) != "[2,3]" {
		t.Errorf("intersect = %s, want [2,3]", got)
	}
	if got := intersect([]map[string]json.RawMessage{m("[1]"), {}}, "ids"); string(got) != "[]" {
		t.Errorf("a member without the key: %s, want []", got)
	}
}

// txnRecord appends one transaction to a history the way the driver
// package records this driver's ops: its input at invoke, the micro-ops
// with the reads' lists at commit.
type txnRecord struct {
	proc string
	in   []history.MicroOp
	out  []history.MicroOp // nil: aborted with errCode
	err  string
}

func micro(f, key string, v string) history.MicroOp {
	m := history.MicroOp{F: f, Key: key}
	if v != "" {
		m.Value = json.RawMessage(v)
	}
	return m
}

func writeHistory(t *testing.T, recs []txnRecord) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	var buf bytes.Buffer
	rec := history.NewRecorder(&buf, history.Meta{RunID: "r", OpTimeoutNS: int64(2 * time.Second)})
	for _, r := range recs {
		p := rec.Invoke(r.proc, history.OpTxn, "", r.in).SetNode("127.0.0.1:3306")
		var err error
		if r.out != nil {
			err = p.Ok(r.out)
		} else {
			err = p.Fail(r.err)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func checkAt(t *testing.T, path, level string) checker.FileReport {
	t.Helper()
	rep, err := checker.RunFile(context.Background(), checker.Spec{Model: "txn", Checker: checker.Serializability,
		Params: map[string]string{"level": level}, Timeout: 30 * time.Second}, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Bad)+len(rep.Invalid) > 0 {
		t.Fatalf("history not valid dst-history/1: %v %v", rep.Bad, rep.Invalid)
	}
	return rep
}

// A lost update, as MariaDB's REPEATABLE READ lets one happen on a single
// node (the 2015 and 2026 Jepsen analyses saw it across a Galera cluster):
// T1 and T2 both read k0 empty, both append and commit; a later read shows
// both appends. In this driver's history format the isolation checker
// must reject it at repeatable-read, and accept it at read-committed,
// which allows lost updates.
func TestIsolationCheckerFlagsALostUpdateInThisFormat(t *testing.T) {
	k := "dstgen/r/k0"
	path := writeHistory(t, []txnRecord{
		{proc: "c0.0", in: []history.MicroOp{micro("r", k, ""), micro("append", k, "1")},
			out: []history.MicroOp{micro("r", k, "[]"), micro("append", k, "1")}},
		{proc: "c1.0", in: []history.MicroOp{micro("r", k, ""), micro("append", k, "1000001")},
			out: []history.MicroOp{micro("r", k, "[]"), micro("append", k, "1000001")}},
		{proc: "c2.0", in: []history.MicroOp{micro("r", k, "")}, out: []history.MicroOp{micro("r", k, "[1,1000001]")}},
		{proc: "c0.0", in: []history.MicroOp{micro("append", k, "2")}, err: "deadlock"},
	})
	rep := checkAt(t, path, checker.RepeatableRead)
	if rep.Result.Outcome != checker.Invalid {
		t.Fatalf("repeatable-read: outcome %v, want invalid: %+v", rep.Result.Outcome, rep.Result)
	}
	kinds := map[string]bool{}
	for _, a := range rep.Result.Anomalies {
		kinds[a.Kind] = true
	}
	if !kinds["lost-update"] && !kinds["G-single"] {
		t.Errorf("anomalies %+v: want a lost update", rep.Result.Anomalies)
	}
	if rep := checkAt(t, path, checker.ReadCommitted); rep.Result.Outcome != checker.Valid {
		t.Errorf("read-committed: outcome %v, want valid: %+v", rep.Result.Outcome, rep.Result.Anomalies)
	}
	// The same transactions, the second one aborted by the server (what
	// first-committer-wins does): valid at repeatable-read.
	path = writeHistory(t, []txnRecord{
		{proc: "c0.0", in: []history.MicroOp{micro("r", k, ""), micro("append", k, "1")},
			out: []history.MicroOp{micro("r", k, "[]"), micro("append", k, "1")}},
		{proc: "c1.0", in: []history.MicroOp{micro("r", k, ""), micro("append", k, "1000001")}, err: "deadlock"},
		{proc: "c2.0", in: []history.MicroOp{micro("r", k, "")}, out: []history.MicroOp{micro("r", k, "[1]")}},
	})
	if rep := checkAt(t, path, checker.RepeatableRead); rep.Result.Outcome != checker.Valid {
		t.Errorf("first committer wins: outcome %v, want valid: %+v", rep.Result.Outcome, rep.Result.Anomalies)
	}
}

// The password: -password-file, else MYSQL_PWD, else the secret deploy
// installs at $DSTGEN_WORKDIR/secrets/dstgen_db, else none.
func TestPasswordSources(t *testing.T) {
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "secrets"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wd, "secrets", "dstgen_db"), []byte("fromdeploy"), 0o600); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("fromfile\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(t.TempDir(), "secrets-dir")
	if err := os.MkdirAll(filepath.Join(unreadable, "secrets", "dstgen_db"), 0o700); err != nil {
		t.Fatal(err) // a directory where the file should be: read fails, not "missing"
	}
	for _, tc := range []struct {
		name, mysqlPwd, workdir, want, wantErr string
		args                                   []string
		setPwd                                 bool
	}{
		{name: "file wins", args: []string{"-password-file", pw}, setPwd: true, mysqlPwd: "env", workdir: wd, want: "fromfile"},
		{name: "MYSQL_PWD over the secret", setPwd: true, mysqlPwd: "env", workdir: wd, want: "env"},
		{name: "empty MYSQL_PWD is a choice", setPwd: true, mysqlPwd: "", workdir: wd, want: ""},
		{name: "the deployed secret", workdir: wd, want: "fromdeploy"},
		{name: "no secret there", workdir: t.TempDir(), want: ""},
		{name: "no workdir", want: ""},
		{name: "unreadable secret", workdir: unreadable, wantErr: "password:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("MYSQL_PWD", tc.mysqlPwd)
			if !tc.setPwd {
				os.Unsetenv("MYSQL_PWD")
			}
			env := map[string]string{"DSTGEN_SUT_HOSTS": "10.0.0.1"}
			if tc.workdir != "" {
				env["DSTGEN_WORKDIR"] = tc.workdir
			}
			w, _, _, err := configure(t, tc.args, env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if w.pass != tc.want {
				t.Errorf("password %q, want %q", w.pass, tc.want)
			}
		})
	}
}
