// Command workload drives MariaDB Galera Cluster (or any MariaDB/MySQL
// server) through database/sql and records every operation as a
// dst-history/1 JSON Lines file (docs/driver-contract.md).
//
// It has two modes (-mode, DSTGEN_MODE):
//
//   - append (the default): Elle-style list-append transactions for the
//     isolation checker (`dstgen check --model txn --checker
//     serializability --level repeatable-read`). Each transaction is 2-4
//     micro-ops over a small key space (-keys, DSTGEN_DATASET): a read is
//     `SELECT v FROM dstgen_append WHERE p = ? AND k = ?`, an append is
//     `INSERT ... ON DUPLICATE KEY UPDATE v = CONCAT(v, ',', ?)` of a value
//     unique in the run, all inside START TRANSACTION ... COMMIT at the
//     session's isolation level (-isolation: repeatable-read, the default,
//     or serializable; SET SESSION TRANSACTION ISOLATION LEVEL on every new
//     connection). The history records each transaction as one `txn` op
//     (docs/history-and-checkers.md §2.5).
//   - durability: every op inserts a fresh id (`INSERT INTO dstgen_durable
//     (p, id) VALUES (?, ?)`, autocommit) and is recorded as an `add` to
//     the key <prefix>/ids; -final (DSTGEN_FINAL, or -final-only as a
//     scenario's final_state command) reads every member's ids back into
//     final.json for the no-lost-ack checker.
//
// # Outcomes
//
// A transaction that committed is ok. One that definitely took no effect
// is a failure: a server error before COMMIT (the transaction is rolled
// back), a connection lost or a timeout before COMMIT was sent (the server
// rolls back an open transaction when its connection goes), a COMMIT
// refused with ER_LOCK_DEADLOCK (1213 — what Galera returns for a
// certification failure too) or ER_CHECKREAD (1020, innodb_snapshot_isolation),
// a request the driver reports it never sent (driver.ErrBadConn). Anything
// else at COMMIT — a timeout, a lost connection, another server error — may
// have committed: the op is recorded with an unknown outcome and the
// client continues on a new connection as a new process. In durability
// mode the INSERT is its own commit and is judged like a COMMIT (a
// duplicate key, 1062, and ER_UNKNOWN_COM_ERROR 1047, "WSREP has not yet
// prepared node for application use", refuse it).
//
// # Settings: flags over the DSTGEN_* contract
//
//	flag                 variable            meaning
//	-out                 DSTGEN_HISTORY      history file (default history.jsonl)
//	-run-id              DSTGEN_RUN_ID       run id; default local-<UTC time>-<pid>
//	-seed                DSTGEN_SEED         seed; 0 or unset: a stable hash of the run id
//	-duration            DSTGEN_DURATION_S   run length (flag: Go duration; variable: seconds); default 10s
//	-rate                DSTGEN_RATE         target ops/s over all clients; 0: as fast as they go
//	-mode                DSTGEN_MODE         append (default; also list-append, txn, mixed) or durability (also insert); anything else exits 2
//	-keys                DSTGEN_DATASET      append mode's key count (default 5)
//	-rotate                                  append mode: a fresh set of keys this often on the wall clock (default 5s; 0: never)
//	-scenario, -tier     DSTGEN_SCENARIO, DSTGEN_TIER   into the history header
//	-endpoints           DSTGEN_SUT_HOSTS    members: host:port or unix:/path/to/socket, comma-separated; from the hosts: <address>:<-port>
//	-port                                    MariaDB port for the DSTGEN_SUT_HOSTS addresses (default 3306)
//	-user                                    user (default dstgen)
//	-password-file       MYSQL_PWD           a file holding the password; without it MYSQL_PWD, else
//	                     DSTGEN_WORKDIR      $DSTGEN_WORKDIR/secrets/dstgen_db (what deploy installs), else no password
//	-database                                database (default dstgen; created if missing and allowed)
//	-isolation                               repeatable-read (default) or serializable
//	-snapshot-isolation                      on / off: SET SESSION innodb_snapshot_isolation; default the server's
//	-sync-wait                               SET SESSION wsrep_sync_wait to this (0-15); default -1, the server's
//	-prefix                                  key prefix (default dstgen/<run id>): the p column of every row
//	-clients, -ops, -timeout                 concurrency (default 4, at least one per endpoint), op budget, per-op timeout (default 2s)
//	-final               DSTGEN_FINAL        after the run, dump every member's rows of the prefix (final.json)
//	-final-only, -final-timeout              only the dump, no ops; the dump's bound (default 20s)
//
// Each client is pinned to one endpoint (client i to endpoint i mod n), so
// node_seen names the member that ran its transactions. The tables
// (created with CREATE TABLE IF NOT EXISTS when the first client starts)
// are shared by every run; the p column holds the run's prefix, so a run
// never reads what another left behind.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dstgen/dstgen/driver"
)

func main() { driver.Main(&workload{}) }

// defaultSecret is the sut.secrets name of the workload's password (the
// example's deploy/galera.service, X-Dstgen-Secret).
const defaultSecret = "dstgen_db"

// Modes.
const (
	modeAppend     = "append"
	modeDurability = "durability"
)

// Value layout: client i's seq-th value is i·valueSpan + seq, a JSON
// integer well below 2^53 (clients < driver.MaxClients × 64 shares), read
// back as it was written, and unique in the run across every share.
const valueSpan = 1_000_000

// maxPrefix is the p column's width: VARCHAR(191) keeps the primary key
// within InnoDB's 767-byte index prefix under utf8mb4.
const maxPrefix = 191

// workload is the driver: the contract's settings and the SUT's own.
type workload struct {
	cfg        *driver.Config
	mode       string
	keys       int
	rotate     time.Duration // a new generation of keys this often; 0: never
	endpoints  []endpoint
	isolation  string // the SET SESSION TRANSACTION ISOLATION LEVEL words
	snapshot   string // "", "ON", "OFF"
	syncWait   int
	user, pass string
	database   string

	// The raw flags Setup reads.
	endpointsFlag, passwordFile, isolationFlag, snapshotFlag string
	port                                                     int

	schemaOnce sync.Once
	schemaErr  error

	mu  sync.Mutex
	dbs []*sql.DB // every client's pool, closed by Close
}

// endpoint is one member: how to reach it and the name node_seen gives it.
type endpoint struct {
	net, addr string // "tcp" host:port, or "unix" socket path
	name      string // host:port, or unix:<path>
}

// Flags registers the SUT's flags and the defaults it changes.
func (w *workload) Flags(fs *flag.FlagSet, d *driver.Config) {
	d.Name, d.Clients, d.Mode, d.Timeout = "workload", 4, modeAppend, 2*time.Second
	// database/sql on a pinned sql.Conn never sends a statement twice:
	// go-sql-driver returns driver.ErrBadConn only when nothing was sent,
	// and a Conn's methods do not retry on it.
	d.HidesRetries = new(false)
	fs.StringVar(&w.endpointsFlag, "endpoints", "127.0.0.1:3306", "comma-separated members, host:port or unix:/path (default from DSTGEN_SUT_HOSTS when set)")
	fs.IntVar(&w.port, "port", 3306, "MariaDB port for the DSTGEN_SUT_HOSTS addresses")
	fs.IntVar(&w.keys, "keys", 5, "append mode: number of keys (DSTGEN_DATASET when an integer)")
	fs.DurationVar(&w.rotate, "rotate", 5*time.Second, "append mode: move to a fresh set of keys this often (wall clock); 0: never")
	fs.StringVar(&w.user, "user", "dstgen", "MariaDB user")
	fs.StringVar(&w.passwordFile, "password-file", "", "file holding the password (default: MYSQL_PWD, else none)")
	fs.StringVar(&w.database, "database", "dstgen", "database holding the workload's tables")
	fs.StringVar(&w.isolationFlag, "isolation", "repeatable-read", "session isolation level: repeatable-read or serializable")
	fs.StringVar(&w.snapshotFlag, "snapshot-isolation", "", "on or off: SET SESSION innodb_snapshot_isolation (default: the server's setting)")
	fs.IntVar(&w.syncWait, "sync-wait", -1, "SET SESSION wsrep_sync_wait to this (0-15); -1: the server's setting")
}

// Setup turns the flags into the run's settings; each error names the
// flag or variable at fault.
func (w *workload) Setup(d *driver.Config) error {
	src := "-mode"
	if !d.Given("mode") {
		src = "DSTGEN_MODE"
	}
	switch m := strings.ToLower(strings.TrimSpace(d.Mode)); m {
	case modeAppend, "list-append", "txn", "mixed":
		// mixed is env.yml's default benchmark mode: reads and appends.
		w.mode = modeAppend
	case modeDurability, "insert":
		w.mode = modeDurability
	default:
		return fmt.Errorf("%s %q: unknown mode (want %s or %s)", src, d.Mode, modeAppend, modeDurability)
	}
	switch strings.ToLower(strings.NewReplacer("_", "-", " ", "-").Replace(strings.TrimSpace(w.isolationFlag))) {
	case "repeatable-read", "rr":
		w.isolation = "REPEATABLE READ"
	case "serializable":
		w.isolation = "SERIALIZABLE"
	default:
		return fmt.Errorf("-isolation %q: want repeatable-read or serializable", w.isolationFlag)
	}
	switch strings.ToLower(strings.TrimSpace(w.snapshotFlag)) {
	case "":
	case "on", "1", "true":
		w.snapshot = "ON"
	case "off", "0", "false":
		w.snapshot = "OFF"
	default:
		return fmt.Errorf("-snapshot-isolation %q: want on or off", w.snapshotFlag)
	}
	if w.syncWait < -1 || w.syncWait > 15 {
		return fmt.Errorf("-sync-wait %d: want 0..15, or -1 for the server's setting", w.syncWait)
	}
	if v := d.Dataset; v != "" && !d.Given("keys") {
		switch n, err := strconv.Atoi(v); {
		case err != nil:
			d.Logf("note: DSTGEN_DATASET=%q is not an integer; ignored, using %d keys", v, w.keys)
		case n < 1:
			return fmt.Errorf("DSTGEN_DATASET=%q: want a positive number of keys", v)
		default:
			w.keys = n
		}
	}
	if w.keys < 1 || w.keys > 1000 {
		return fmt.Errorf("-keys %d: want 1..1000", w.keys)
	}
	if w.rotate < 0 || w.rotate > 0 && w.rotate < 100*time.Millisecond {
		return fmt.Errorf("-rotate %v: want 0 (never) or at least 100ms", w.rotate)
	}
	if len(d.Prefix) > maxPrefix {
		return fmt.Errorf("-prefix %q: %d bytes, at most %d fit the p column", d.Prefix, len(d.Prefix), maxPrefix)
	}
	if strings.TrimSpace(w.user) == "" {
		return errors.New("-user is empty")
	}
	if !validName(w.database) {
		return fmt.Errorf("-database %q: want letters, digits and _ only", w.database)
	}
	if w.passwordFile != "" {
		b, err := os.ReadFile(w.passwordFile)
		if err != nil {
			return fmt.Errorf("-password-file: %w", err)
		}
		w.pass = strings.TrimRight(string(b), "\r\n")
	} else if pw, ok := os.LookupEnv("MYSQL_PWD"); ok {
		w.pass = pw // the MySQL clients' own variable: never on a command line
	} else if d.Workdir != "" {
		// The login deploy made: sut.secrets [dstgen_db] is installed
		// at <workdir>/secrets/dstgen_db on every host, and the members'
		// sut.init (scripts/init.sh) created user dstgen with it.
		b, err := os.ReadFile(filepath.Join(d.Workdir, "secrets", defaultSecret))
		switch {
		case err == nil:
			w.pass = strings.TrimRight(string(b), "\r\n")
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("password: %w", err)
		}
	}
	var err error
	switch {
	case d.Given("endpoints"):
		w.endpoints, err = parseEndpoints(w.endpointsFlag, 0)
	case len(d.SUTHosts) > 0:
		if w.port < 1 || w.port > 65535 {
			return fmt.Errorf("-port %d: want 1..65535", w.port)
		}
		w.endpoints, err = parseEndpoints(strings.Join(d.SUTHosts, ","), w.port)
	default:
		w.endpoints, err = parseEndpoints(w.endpointsFlag, 0)
	}
	if err != nil {
		return err
	}
	if d.Clients < len(w.endpoints) {
		if !d.Given("clients") {
			// A member serving no client would hide its anomalies.
			d.Clients = len(w.endpoints)
		} else {
			var idle []string
			for _, e := range w.endpoints[d.Clients:] {
				idle = append(idle, e.name)
			}
			d.Logf("note: -clients %d < %d endpoints: %s get no client", d.Clients, len(w.endpoints), strings.Join(idle, ","))
		}
	}
	if d.Clients*d.Shares > driver.MaxClients*64 || (d.FirstClient()+d.Clients+1)*valueSpan >= 1<<53 {
		return fmt.Errorf("-clients %d: too many for unique values", d.Clients)
	}
	w.cfg = d
	return nil
}

// validName accepts an unquoted SQL identifier of letters, digits and _.
func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// parseEndpoints reads a comma-separated member list. An entry is
// unix:/path (a socket), host:port, or a bare host given port (a
// DSTGEN_SUT_HOSTS address, whose port, if any, is an SSH port and is
// replaced when port > 0; 3306 when port is 0).
func parseEndpoints(list string, port int) ([]endpoint, error) {
	var out []endpoint
	for e := range strings.SplitSeq(list, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		if p, ok := strings.CutPrefix(e, "unix:"); ok {
			if p == "" {
				return nil, fmt.Errorf("-endpoints %q: unix: without a socket path", e)
			}
			out = append(out, endpoint{net: "unix", addr: p, name: e})
			continue
		}
		host, p, err := net.SplitHostPort(e)
		switch {
		case err != nil:
			host, p = strings.TrimSuffix(strings.TrimPrefix(e, "["), "]"), "3306"
			if port > 0 {
				p = strconv.Itoa(port)
			}
		case port > 0:
			p = strconv.Itoa(port)
		}
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 || host == "" {
			return nil, fmt.Errorf("-endpoints %q: want host:port or unix:/path", e)
		}
		addr := net.JoinHostPort(host, p)
		out = append(out, endpoint{net: "tcp", addr: addr, name: addr})
	}
	if len(out) == 0 {
		return nil, errors.New("-endpoints: no endpoint in the list")
	}
	return out, nil
}

// connector is how every connection to e is made: the user's
// credentials, interpolated parameters (one round trip per statement, no
// server-side prepare), and I/O timeouts just above the per-op timeout so
// a COMMIT whose answer never comes ends even where the context is not
// watched.
func (w *workload) connector(e endpoint, db string) (*sql.DB, error) {
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr, mc.DBName = w.user, w.pass, e.net, e.addr, db
	mc.InterpolateParams = true
	io := w.cfg.Timeout + 500*time.Millisecond
	mc.Timeout, mc.ReadTimeout, mc.WriteTimeout = min(w.cfg.Timeout, 5*time.Second), io, io
	c, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, fmt.Errorf("endpoint %s: %w", e.name, err)
	}
	sdb := sql.OpenDB(c)
	sdb.SetMaxOpenConns(1)
	sdb.SetMaxIdleConns(1)
	return sdb, nil
}

// Client is logical client i, pinned to endpoint i mod n. The first call
// creates the schema (bounded, before any client starts).
func (w *workload) Client(i int) driver.Client {
	w.schemaOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		w.schemaErr = w.ensureSchema(ctx)
		if w.schemaErr != nil {
			w.cfg.Logf("schema: %v", w.schemaErr)
		}
	})
	e := w.endpoints[i%len(w.endpoints)]
	base := &conn{w: w, ep: e}
	if w.mode == modeDurability {
		return &durableClient{conn: base, id: i}
	}
	return newAppendClient(base, i)
}

// Tables, shared by every run: p is the run's prefix.
const (
	appendTable  = "dstgen_append"
	durableTable = "dstgen_durable"
	appendDDL    = "CREATE TABLE IF NOT EXISTS " + appendTable + " (p VARCHAR(191) NOT NULL, k BIGINT NOT NULL, v MEDIUMTEXT NOT NULL, PRIMARY KEY (p, k)) ENGINE=InnoDB"
	durableDDL   = "CREATE TABLE IF NOT EXISTS " + durableTable + " (p VARCHAR(191) NOT NULL, id BIGINT NOT NULL, PRIMARY KEY (p, id)) ENGINE=InnoDB"
)

// ensureSchema creates the database and the mode's table on the first
// member that takes them (Galera replicates DDL to the others).
func (w *workload) ensureSchema(ctx context.Context) error {
	ddl := appendDDL
	if w.mode == modeDurability {
		ddl = durableDDL
	}
	var errs []error
	for _, e := range w.endpoints {
		err := func() error {
			db, err := w.connector(e, "")
			if err != nil {
				return err
			}
			defer db.Close()
			_, err = db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+w.database)
			var me *mysql.MySQLError
			if err != nil && !(errors.As(err, &me) && (me.Number == 1044 || me.Number == 1227)) {
				// 1044/1227: no right to create it; the table says whether it exists.
				return fmt.Errorf("create database %s: %w", w.database, err)
			}
			if _, err := db.ExecContext(ctx, strings.Replace(ddl, "EXISTS ", "EXISTS "+w.database+".", 1)); err != nil {
				return fmt.Errorf("create table: %w", err)
			}
			return nil
		}()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", e.name, err))
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}

// Close ends every client's connections; the server rolls back whatever
// one had open.
func (w *workload) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for _, db := range w.dbs {
		errs = append(errs, db.Close())
	}
	w.dbs = nil
	return errors.Join(errs...)
}
