package main

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dstgen/dstgen/driver"
)

// conn is one client's connection to its member: one sql.Conn pinned for
// the client's whole life as a process, so every statement of a
// transaction goes to the same server session; a new one after any error
// that is not the server's answer.
type conn struct {
	w  *workload
	ep endpoint
	db *sql.DB
	c  *sql.Conn
}

// get returns the client's session, opening one (with the session
// settings) when there is none. An error here is a definite failure: no
// statement of the op was sent.
func (c *conn) get(ctx context.Context) (*sql.Conn, error) {
	if c.w.schemaErr != nil {
		return nil, driver.Fail("no-schema")
	}
	if c.c != nil {
		return c.c, nil
	}
	if c.db == nil {
		db, err := c.w.connector(c.ep, c.w.database)
		if err != nil {
			return nil, driver.Fail("bad-endpoint")
		}
		c.db = db
		c.w.track(db)
	}
	sc, err := c.db.Conn(ctx)
	if err != nil {
		return nil, driver.Fail(connectCode(err))
	}
	for _, s := range c.w.sessionSQL() {
		if _, err := sc.ExecContext(ctx, s); err != nil {
			discard(sc)
			return nil, driver.Fail("session: " + stmtCode(err))
		}
	}
	c.c = sc
	return sc, nil
}

// drop closes the session so the next op opens a new one: after a lost
// connection, a timeout, or an unknown outcome (a new process).
func (c *conn) drop() {
	if c.c != nil {
		discard(c.c)
		c.c = nil
	}
}

// discard closes the server session behind sc rather than returning it to
// the pool: whatever it had open is rolled back by the server.
func discard(sc *sql.Conn) {
	_ = sc.Raw(func(any) error { return sqldriver.ErrBadConn })
	_ = sc.Close()
}

// sessionSQL is what every new session runs first.
func (w *workload) sessionSQL() []string {
	out := []string{"SET SESSION TRANSACTION ISOLATION LEVEL " + w.isolation}
	if w.snapshot != "" {
		out = append(out, "SET SESSION innodb_snapshot_isolation = "+w.snapshot)
	}
	if w.syncWait >= 0 {
		out = append(out, "SET SESSION wsrep_sync_wait = "+strconv.Itoa(w.syncWait))
	}
	return out
}

// track remembers a client's pool so Close can end it.
func (w *workload) track(db *sql.DB) {
	w.mu.Lock()
	w.dbs = append(w.dbs, db)
	w.mu.Unlock()
}

// stage is where in a transaction an error happened: before COMMIT was
// sent nothing can have committed; at COMMIT (or an autocommit statement)
// it may have.
type stage int

const (
	beforeCommit stage = iota
	atCommit
)

// MariaDB server error numbers the driver tells apart.
const (
	erCheckRead       = 1020 // ER_CHECKREAD: innodb_snapshot_isolation write-write conflict; the transaction is rolled back
	erUnknownCom      = 1047 // ER_UNKNOWN_COM_ERROR: "WSREP has not yet prepared node for application use"
	erDupEntry        = 1062 // ER_DUP_ENTRY
	erNoSuchTable     = 1146 // ER_NO_SUCH_TABLE
	erLockWaitTimeout = 1205 // ER_LOCK_WAIT_TIMEOUT
	erLockDeadlock    = 1213 // ER_LOCK_DEADLOCK: also Galera's certification failure and brute-force abort
)

// serverCodes names the server errors a history shows by name.
var serverCodes = map[uint16]string{
	erCheckRead: "snapshot-conflict", erUnknownCom: "wsrep-not-ready", erDupEntry: "duplicate-key",
	erNoSuchTable: "no-table", erLockWaitTimeout: "lock-wait-timeout", erLockDeadlock: "deadlock",
}

// refusedAtCommit are the server errors after which a COMMIT (or an
// autocommit statement) certainly did not commit: the server rolled the
// transaction back (deadlock, certification failure, snapshot conflict),
// refused the statement before running it (a node not ready, a duplicate
// key, a missing table), or only the statement failed (a lock wait).
var refusedAtCommit = map[uint16]bool{
	erCheckRead: true, erUnknownCom: true, erDupEntry: true, erNoSuchTable: true,
	erLockWaitTimeout: true, erLockDeadlock: true,
}

// classify maps a statement's error onto the history's outcomes: definite
// (the op took no effect) or unknown (it may have committed), with the
// code the history's error column records.
func classify(st stage, err error) (definite bool, code string) {
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return true, ""
	case errors.Is(err, errBadValue):
		// A row this workload did not write: logged by the caller's
		// summary, never a commit.
		return true, "bad-value"
	case errors.Is(err, sqldriver.ErrBadConn):
		// go-sql-driver returns it only when nothing was written.
		return true, "not-sent"
	case errors.As(err, &me):
		code := stmtCode(err)
		if st == beforeCommit {
			return true, code
		}
		if refusedAtCommit[me.Number] {
			return true, code
		}
		return false, "commit-" + code
	}
	what := "conn-lost"
	if isTimeout(err) {
		what = "timeout"
	}
	if st == beforeCommit {
		// COMMIT was never sent: the server rolls the open transaction
		// back when the connection goes.
		return true, what + "-before-commit"
	}
	return false, what
}

// stmtCode is the history's code for a server error: its name, else
// mysql-<number>; "error" for anything else.
func stmtCode(err error) string {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		if s, ok := serverCodes[me.Number]; ok {
			return s
		}
		return "mysql-" + strconv.Itoa(int(me.Number))
	}
	if isTimeout(err) {
		return "timeout"
	}
	return "error"
}

// connectCode names a failure to open a session.
func connectCode(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "conn-refused"
	case isTimeout(err):
		return "connect-timeout"
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return "connect: " + stmtCode(err)
	}
	return "connect-error"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// outcome turns a statement's error into what Do returns: Fail for a
// definite failure, Unknown otherwise. The session is dropped unless the
// server answered (it is healthy then; a rolled-back transaction leaves
// it usable).
func (c *conn) outcome(ctx context.Context, st stage, err error) error {
	definite, code := classify(st, err)
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		c.drop()
	} else if st == beforeCommit && c.c != nil {
		// The transaction may still be open (a lock wait timeout rolls
		// back only the statement): end it, bounded so Do returns
		// within its grace.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 500*time.Millisecond)
		if _, rerr := c.c.ExecContext(rctx, "ROLLBACK"); rerr != nil {
			c.drop()
		}
		cancel()
	}
	if definite {
		return driver.Fail(code)
	}
	c.drop() // a new process continues on a new session
	return driver.Unknown(code, fmt.Errorf("%s: %w", c.ep.name, err))
}
