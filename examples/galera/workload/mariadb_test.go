package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/driver"
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// server is one local mariadbd: a fresh datadir, loopback TCP for the
// driver, a unix socket for the test's own root session.
type server struct {
	addr, socket, pwFile string
	root                 *sql.DB
}

// mariaDB starts a single mariadbd as root in a temp datadir made by
// mariadb-install-db (wsrep off), and a user for the driver whose
// password is in a file; it skips when mariadbd is missing or the test
// does not run as root. t.Cleanup stops the server by its PID.
func mariaDB(t *testing.T) *server {
	t.Helper()
	s, why := startMariaDB(t)
	if strings.HasPrefix(why, "FAIL: ") {
		t.Fatal(why)
	}
	if s == nil {
		t.Skip(why)
	}
	return s
}

func startMariaDB(t *testing.T) (*server, string) {
	bin, err := exec.LookPath("mariadbd")
	if err != nil {
		return nil, "mariadbd not installed: " + err.Error()
	}
	install, err := exec.LookPath("mariadb-install-db")
	if err != nil {
		return nil, "mariadb-install-db not installed: " + err.Error()
	}
	if os.Geteuid() != 0 {
		return nil, "needs root: mariadbd runs as --user=root in a temp datadir"
	}
	// A short path: a unix socket path is at most 107 bytes.
	dir, err := os.MkdirTemp("", "dstgen-mdb-")
	if err != nil {
		return nil, "FAIL: " + err.Error()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data := filepath.Join(dir, "data")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, install, "--no-defaults", "--user=root", "--datadir="+data,
		"--auth-root-authentication-method=socket", "--skip-test-db").CombinedOutput(); err != nil {
		return nil, fmt.Sprintf("FAIL: mariadb-install-db: %v: %.2000s", err, out)
	}
	port := sshtest.FreePort(t)
	s := &server{addr: "127.0.0.1:" + strconv.Itoa(port), socket: filepath.Join(dir, "mysqld.sock"), pwFile: filepath.Join(dir, "pw")}
	logPath := filepath.Join(dir, "error.log")
	cmd := exec.Command(bin, "--no-defaults", "--user=root", "--datadir="+data, "--socket="+s.socket,
		"--port="+strconv.Itoa(port), "--bind-address=127.0.0.1", "--pid-file="+filepath.Join(dir, "mysqld.pid"),
		"--log-error="+logPath, "--skip-log-bin", "--innodb-buffer-pool-size=32M", "--max-connections=200")
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, "FAIL: start mariadbd: " + err.Error()
	}
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(pid, syscall.SIGKILL)
			<-exited
		}
	})
	mc := mysql.NewConfig()
	mc.User, mc.Net, mc.Addr = "root", "unix", s.socket
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, "FAIL: " + err.Error()
	}
	s.root = sql.OpenDB(connector)
	t.Cleanup(func() { s.root.Close() })
	up := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			return nil, fmt.Sprintf("FAIL: mariadbd exited; error log: %.3000s", log)
		default:
		}
		pctx, pcancel := context.WithTimeout(context.Background(), time.Second)
		err := s.root.PingContext(pctx)
		pcancel()
		if up = err == nil; up {
			break
		}
	}
	if !up {
		log, _ := os.ReadFile(logPath)
		return nil, fmt.Sprintf("FAIL: mariadbd not answering in 30s; error log: %.3000s", log)
	}
	pw := "pw-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, q := range []string{
		"CREATE USER 'dstgen'@'%' IDENTIFIED BY '" + pw + "'",
		"GRANT ALL ON dstgen.* TO 'dstgen'@'%'",
	} {
		if _, err := s.root.Exec(q); err != nil {
			return nil, fmt.Sprintf("FAIL: %s: %v", q[:20], err)
		}
	}
	if err := os.WriteFile(s.pwFile, []byte(pw+"\n"), 0o600); err != nil {
		return nil, "FAIL: " + err.Error()
	}
	return s, ""
}

// runDriver runs the program with args against the server and returns
// its exit code and stderr.
func (s *server) runDriver(t *testing.T, runID string, env map[string]string, args ...string) (int, string) {
	t.Helper()
	all := append([]string{"-endpoints", s.addr, "-password-file", s.pwFile, "-run-id", runID}, args...)
	var stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := driver.Exec(ctx, &workload{}, all, driver.Env{Getenv: envOf(env), Stdout: io.Discard, Stderr: &stderr})
	return code, stderr.String()
}

// TestOnMariaDB runs the driver against one real mariadbd (wsrep off):
// its histories are valid dst-history/1 and judged as MariaDB's locking
// promises them; its final-state dump feeds no-lost-ack, which passes,
// and fails once an acknowledged row is gone.
func TestOnMariaDB(t *testing.T) {
	s := mariaDB(t)
	t.Run("serializable_append_valid_at_repeatable_read", func(t *testing.T) {
		// InnoDB SERIALIZABLE turns every read of a transaction into a
		// locking read: two-phase locking, so the history must pass the
		// isolation checker at repeatable-read (and serializable).
		out := filepath.Join(t.TempDir(), "history.jsonl")
		code, stderr := s.runDriver(t, "ser-1", map[string]string{"DSTGEN_SCENARIO": "S1"},
			"-isolation", "serializable", "-duration", "3s", "-rate", "300", "-clients", "4", "-out", out)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		ops := readOps(t, out)
		committed, aborted := 0, 0
		for _, o := range ops {
			if o.OpType != history.OpTxn || o.Key != "" || o.NodeSeen != s.addr {
				t.Fatalf("op %+v: want a txn with node_seen %s", o, s.addr)
			}
			switch {
			case o.CompleteTS != nil && o.Error == "":
				committed++
			case o.Error != "":
				aborted++
			}
		}
		if committed < 100 {
			t.Fatalf("%d committed of %d: the driver did not load the server", committed, len(ops))
		}
		for _, level := range []string{checker.RepeatableRead, checker.Serializable} {
			rep := checkAt(t, out, level)
			if rep.Result.Outcome != checker.Valid {
				t.Errorf("%s: %v, anomalies %+v", level, rep.Result.Outcome, rep.Result.Anomalies)
			}
		}
		t.Logf("%d transactions: %d committed, %d aborted", len(ops), committed, aborted)
	})
	t.Run("snapshot_isolation_append_valid_at_snapshot_isolation", func(t *testing.T) {
		// REPEATABLE READ with innodb_snapshot_isolation=ON refuses a write
		// to a row changed since the snapshot (ER_CHECKREAD): snapshot
		// isolation, which forbids lost updates but allows write skew.
		out := filepath.Join(t.TempDir(), "history.jsonl")
		code, stderr := s.runDriver(t, "si-1", nil, "-snapshot-isolation", "on", "-duration", "3s", "-rate", "400", "-out", out)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		conflicts := 0
		for _, o := range readOps(t, out) {
			if o.Error == "snapshot-conflict" {
				conflicts++
			}
		}
		if rep := checkAt(t, out, checker.SnapshotIsolation); rep.Result.Outcome != checker.Valid {
			t.Errorf("snapshot-isolation: %v, anomalies %+v", rep.Result.Outcome, rep.Result.Anomalies)
		}
		t.Logf("%d transactions refused with ER_CHECKREAD", conflicts)
	})
	t.Run("durability_final_state_no_lost_ack", func(t *testing.T) {
		dir := t.TempDir()
		out, final := filepath.Join(dir, "history.jsonl"), filepath.Join(dir, "final.json")
		code, stderr := s.runDriver(t, "dur-1", map[string]string{"DSTGEN_MODE": "durability", "DSTGEN_FINAL": final},
			"-duration", "2s", "-rate", "200", "-clients", "3", "-out", out)
		if code != 0 || !strings.Contains(stderr, "members=1/1") || !strings.Contains(stderr, "converged=true") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		ops := readOps(t, out)
		acked := 0
		for _, o := range ops {
			if o.OpType != "add" || o.Key != "dstgen/dur-1/ids" {
				t.Fatalf("op %+v: want an add to dstgen/dur-1/ids", o)
			}
			if o.CompleteTS != nil && o.Error == "" {
				acked++
			}
		}
		fs := loadFinal(t, final)
		var ids []int64
		if err := json.Unmarshal(fs.Keys["dstgen/dur-1/ids"], &ids); err != nil || len(ids) != acked || acked < 50 {
			t.Fatalf("final ids %d (%v), acked %d", len(ids), err, acked)
		}
		if len(fs.Replicas) != 1 || fs.Replicas[s.addr] == nil {
			t.Fatalf("replicas %v", fs.Replicas)
		}
		noLostAck := func() checker.Result {
			t.Helper()
			res, err := checker.Run(context.Background(), checker.Spec{Model: "set", Checker: checker.NoLostAck}, ops, loadFinal(t, final))
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		if res := noLostAck(); res.Outcome != checker.Valid {
			t.Fatalf("no-lost-ack: %v %+v", res.Outcome, res.Anomalies)
		}
		// An acknowledged row vanishes: the dump (-final-only, as a
		// scenario's final_state command runs it) no longer has it, and
		// no-lost-ack names it.
		if _, err := s.root.Exec("DELETE FROM dstgen.dstgen_durable WHERE p = ? AND id = ?", "dstgen/dur-1", ids[len(ids)/2]); err != nil {
			t.Fatal(err)
		}
		if code, stderr := s.runDriver(t, "dur-1", nil, "-mode", "durability", "-final-only", "-final", final); code != 0 {
			t.Fatalf("-final-only exit %d: %s", code, stderr)
		}
		res := noLostAck()
		if res.Outcome != checker.Invalid || len(res.Anomalies) != 1 || !strings.Contains(res.Anomalies[0].Message, strconv.FormatInt(ids[len(ids)/2], 10)) {
			t.Fatalf("after the delete: %v %+v, want one lost ack of id %d", res.Outcome, res.Anomalies, ids[len(ids)/2])
		}
	})
	t.Run("runs_stay_apart", func(t *testing.T) {
		// A second run on the same tables reads nothing of the first's.
		out := filepath.Join(t.TempDir(), "history.jsonl")
		code, stderr := s.runDriver(t, "ser-2", nil, "-isolation", "serializable", "-duration", "1s", "-rate", "100", "-out", out)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		for _, o := range readOps(t, out) {
			if strings.Contains(string(o.Output), "ser-1") || strings.Contains(string(o.Input), "ser-1") {
				t.Fatalf("op %s touches the first run's keys: %s", o.OpID, o.Output)
			}
		}
		if rep := checkAt(t, out, checker.RepeatableRead); rep.Result.Outcome != checker.Valid {
			t.Fatalf("second run: %v %+v", rep.Result.Outcome, rep.Result.Anomalies)
		}
		// The append mode's dump: the run's lists only, one replica.
		final := filepath.Join(t.TempDir(), "final.json")
		if code, stderr := s.runDriver(t, "ser-2", nil, "-final-only", "-final", final); code != 0 || !strings.Contains(stderr, "converged=true") {
			t.Fatalf("-final-only exit %d: %s", code, stderr)
		}
		fs := loadFinal(t, final)
		if len(fs.Keys) == 0 || len(fs.Replicas[s.addr]) != len(fs.Keys) {
			t.Fatalf("dump %+v", fs)
		}
		for k, v := range fs.Keys {
			var list []int64
			if !strings.HasPrefix(k, "dstgen/ser-2/k") || json.Unmarshal(v, &list) != nil || len(list) == 0 {
				t.Fatalf("dump key %s = %s: want a non-empty list of the second run", k, v)
			}
		}
	})
	t.Run("wrong_password_fails_every_op_definitely", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "pw")
		if err := os.WriteFile(bad, []byte("wrong"), 0o600); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "history.jsonl")
		code, stderr := s.runDriver(t, "badpw", nil, "-password-file", bad, "-duration", "500ms", "-rate", "20", "-out", out)
		if code != 1 || !strings.Contains(stderr, "first_error=") {
			t.Fatalf("exit %d (want 1, no op succeeded): %s", code, stderr)
		}
		for _, o := range readOps(t, out) {
			if o.TimeoutMarker || o.Error == "" {
				t.Fatalf("op %+v: a refused login must be a definite failure", o)
			}
		}
	})
}

// A member nobody listens on: every op fails definitely (conn-refused),
// none is unknown, and the run exits 1 naming the first error.
func TestRefusedEndpointFailsDefinitely(t *testing.T) {
	out := filepath.Join(t.TempDir(), "history.jsonl")
	var stderr bytes.Buffer
	args := []string{"-endpoints", "127.0.0.1:" + strconv.Itoa(sshtest.FreePort(t)), "-duration", "500ms", "-rate", "20", "-out", out, "-run-id", "refused"}
	code := driver.Exec(context.Background(), &workload{}, args, driver.Env{Getenv: envOf(nil), Stdout: io.Discard, Stderr: &stderr})
	if code != 1 || !strings.Contains(stderr.String(), "schema:") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	ops := readOps(t, out)
	if len(ops) == 0 {
		t.Fatal("no op recorded")
	}
	for _, o := range ops {
		if o.TimeoutMarker || o.Error != "no-schema" {
			t.Fatalf("op %+v: want a definite no-schema failure", o)
		}
	}
}

func readOps(t *testing.T, path string) []history.Op {
	t.Helper()
	_, ops, bad, err := history.ReadFile(path)
	if err != nil || len(bad) > 0 {
		t.Fatalf("history %s: %v %v", path, err, bad)
	}
	if errs := history.Validate(path, ops, nil); len(errs) > 0 {
		t.Fatalf("invalid history: %v", errs[0])
	}
	return ops
}

func loadFinal(t *testing.T, path string) *checker.FinalState {
	t.Helper()
	fs, err := checker.LoadFinalState(path)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}
