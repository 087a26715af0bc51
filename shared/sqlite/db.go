package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver: no cgo

	"github.com/ora-runtime/ora/shared/ora"
)

// schema holds the DDL each feature of this package registers for itself (the
// ledger, idempotency records, step function executions, ...). Every statement
// is idempotent (CREATE ... IF NOT EXISTS), so Open applies them all each time.
var (
	schemaMu sync.Mutex
	schemas  = map[string]string{}
)

// registerSchema records a feature's DDL; call it from a package-level var.
func registerSchema(name, ddl string) bool {
	schemaMu.Lock()
	defer schemaMu.Unlock()
	schemas[name] = ddl
	return true
}

// walLimit is the size a WAL file is cut back to once checkpointed
// (journal_size_limit).
const walLimit = 4 << 20

// Options tune a DB.
type Options struct {
	// Now returns the current time; tests replace it. Default time.Now.
	Now func() time.Time
	// BusyTimeout is how long a writer waits for the lock another process
	// holds. Default 10 s.
	BusyTimeout time.Duration
	// Readers is the most connections that read at once. Default
	// max(4, GOMAXPROCS).
	Readers int
	// Retention sets each kind's ExpiresAt when an entry has none. Default
	// ora.DefaultRetention(); an empty map keeps everything. SQLite has no
	// TTL: expires_at is recorded, as DynamoDB's TTL attribute is.
	Retention ora.Retention
	// Bodies holds entry bodies over ora.MaxItemBytes by reference (ora dev:
	// the local object folder); nil refuses such entries.
	Bodies ora.BodyStore
	// Secrets are redacted from every entry at append. Optional.
	Secrets *ora.Secrets
	// CheckpointEvery is how often a connection of its own checks whether
	// the WAL has grown and, if so, checkpoints it (PASSIVE: it waits for
	// no reader or writer). Writers then never checkpoint: SQLite's
	// automatic checkpoint runs on the committing writer, every 1,000 pages,
	// and held the one write connection (and the wave behind it) for the
	// copy. Default 100 ms; a negative value leaves checkpoints to SQLite.
	CheckpointEvery time.Duration
}

// DB is an open SQLite database holding ora's records.
//
// It keeps two connection pools on the file. Every write goes through w, a
// pool of one connection: SQLite lets one writer in at a time, and writers of
// this process queue for that connection in Go (woken as soon as it is free)
// instead of polling the file lock under busy_timeout, whose back-off sleeps
// up to 100 ms a try. Reads go through r, read-only connections that the WAL
// journal lets run beside the writer; each sees every transaction committed
// before it began.
type DB struct {
	w, r *sql.DB
	// cp checkpoints the WAL every CheckpointEvery (nil when SQLite does);
	// closing stopCP stops it, cpDone says it has.
	cp             *sql.DB
	stopCP, cpDone chan struct{}
	path           string
	now            func() time.Time
	stmts          map[string]*sql.Stmt
	keep           ora.Retention
	secrets        *ora.Secrets
	// bodies holds offloaded entry bodies; nil when none is configured.
	bodies ora.BodyStore
	// execCursor is the rowid after which Sweep reads executions next.
	execCursor atomic.Int64
	// facts remembers fact bodies stored and read (factrefs.go).
	facts factCache
	// busy is the connections' busy timeout (Options.BusyTimeout).
	busy time.Duration
	// beforeCommit, when set (by tests), runs inside a stage's transaction
	// just before its COMMIT; an error rolls the stage back (stage.go).
	beforeCommit func(ora.Stage) error
}

// Open opens (creating if needed) the database file at path and applies the
// schema. The journal is in WAL mode with synchronous=NORMAL: a commit is
// written to the WAL, which survives a crash of the process; the WAL is synced
// at each checkpoint. Write transactions take the lock at BEGIN (IMMEDIATE);
// a writer of another process sharing the file waits up to BusyTimeout.
func Open(ctx context.Context, path string, opts ...func(*Options)) (*DB, error) {
	o := Options{Now: time.Now, BusyTimeout: 10 * time.Second, Readers: max(4, runtime.GOMAXPROCS(0)), Retention: ora.DefaultRetention(),
		CheckpointEvery: 100 * time.Millisecond}
	for _, f := range opts {
		f(&o)
	}
	if path == "" {
		return nil, fmt.Errorf("sqlite: open: empty path")
	}
	if o.Readers < 1 {
		return nil, fmt.Errorf("sqlite: open %s: Readers is %d, want at least 1", path, o.Readers)
	}
	dsn := func(readOnly bool) string {
		q := url.Values{}
		q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", o.BusyTimeout.Milliseconds()))
		q.Add("_pragma", "journal_mode(WAL)")
		// A WAL that a checkpoint has copied back is cut to this size
		// when writing starts again from its beginning.
		q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", walLimit))
		q.Add("_pragma", "synchronous(NORMAL)")
		q.Add("_pragma", "foreign_keys(1)")
		if readOnly {
			q.Add("_query_only", "1")
		} else {
			q.Add("_txlock", "immediate")
		}
		if o.CheckpointEvery >= 0 {
			q.Add("_pragma", "wal_autocheckpoint(0)")
		}
		return "file:" + path + "?" + q.Encode()
	}
	w, err := sql.Open("sqlite", dsn(false))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// One writer connection, kept open: its prepared statements stay ready.
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	d := &DB{w: w, path: path, now: o.Now, keep: o.Retention, bodies: o.Bodies, secrets: o.Secrets, busy: o.BusyTimeout}
	// The schema first, from the writer: it also puts the file in WAL mode
	// before any reader connects.
	if err := d.incrementalVacuum(ctx); err != nil {
		w.Close()
		return nil, err
	}
	if err := d.migrate(ctx); err != nil {
		w.Close()
		return nil, err
	}
	// A file SQLite could only open read-only opens without error: find out
	// now, not at the first wave.
	if err := d.Health(ctx); err != nil {
		w.Close()
		return nil, err
	}
	r, err := sql.Open("sqlite", dsn(true))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(o.Readers)
	r.SetMaxIdleConns(o.Readers) // reopening a connection costs its pragmas and the schema
	d.r = r
	if err := d.prepare(ctx); err != nil {
		d.Close()
		return nil, err
	}
	if o.CheckpointEvery >= 0 {
		cp, err := sql.Open("sqlite", dsn(false))
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
		}
		cp.SetMaxOpenConns(1)
		cp.SetMaxIdleConns(1)
		d.cp, d.stopCP, d.cpDone = cp, make(chan struct{}), make(chan struct{})
		go d.checkpoints(max(o.CheckpointEvery, time.Millisecond))
	}
	return d, nil
}

// checkpoints checkpoints the WAL every period in which it changed, until
// stopCP is closed. A failed checkpoint is tried again at the next period:
// until then the committed transactions are in the WAL, which readers read
// and a restart recovers, so nothing is lost meanwhile.
func (d *DB) checkpoints(every time.Duration) {
	defer close(d.cpDone)
	t := time.NewTicker(every)
	defer t.Stop()
	var last os.FileInfo
	for {
		select {
		case <-d.stopCP:
			return
		case <-t.C:
		}
		fi, err := os.Stat(d.path + "-wal")
		if err != nil || (last != nil && fi.Size() == last.Size() && fi.ModTime().Equal(last.ModTime())) {
			continue
		}
		if _, err := d.cp.Exec("PRAGMA wal_checkpoint(PASSIVE)"); err == nil {
			last = fi
		}
	}
}

// convertBelow is the largest file Open converts to incremental vacuum by
// itself (a VACUUM rewrites the file: well under a second at this size).
const convertBelow = 64 << 20

// incrementalVacuum makes the file return the pages of swept rows to the
// file system (Sweep's incremental vacuum). SQLite fixes the mode when the
// first table is created; a file made before without it is converted by a
// VACUUM, which rewrites it, when it is under convertBelow and no other
// process is using it; a larger one keeps its mode (AutoVacuum reports it,
// and ora dev says how to convert it).
func (d *DB) incrementalVacuum(ctx context.Context) error {
	var tables, mode int
	if err := d.w.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&tables); err != nil {
		return d.fileError("read the tables of", err)
	}
	if err := d.w.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&mode); err != nil {
		return d.fileError("read the tables of", err)
	}
	if mode == 2 {
		return nil
	}
	if tables > 0 {
		fi, err := os.Stat(d.path)
		if err != nil || fi.Size() >= convertBelow {
			return nil
		}
	}
	// The file is in WAL mode (the connection's pragmas), where the new mode
	// takes effect at a VACUUM: instant on an empty file.
	if _, err := d.w.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
		return d.fileError("set up", err)
	}
	if _, err := d.w.ExecContext(ctx, "VACUUM"); err != nil {
		if tables > 0 && ora.ErrorCode(translate(err)) == ora.ETRANSIENT {
			return nil // another process has it open: converted another time
		}
		return d.fileError("set up", err)
	}
	return nil
}

func (d *DB) migrate(ctx context.Context) error {
	schemaMu.Lock()
	names := make([]string, 0, len(schemas))
	for n := range schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	ddl := make([]string, len(names))
	for i, n := range names {
		ddl[i] = schemas[n]
	}
	schemaMu.Unlock()
	for _, stmt := range ddl {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := d.w.ExecContext(ctx, stmt); err != nil {
			// The error names the file, never the feature whose tables
			// failed first (which says nothing to a user).
			return d.fileError("set up the tables of", err)
		}
	}
	return nil
}

// The statements run on every wave, prepared once by Open (each pool prepares
// a statement on a connection the first time it runs there, then reuses it).
const (
	stmtInsertEntry    = "insert entry"
	stmtEntry          = "entry"
	stmtEntries        = "entries"
	stmtEntriesOfKinds = "entries of kinds"
	stmtRecent         = "recent"
	stmtSaveExecution  = "save execution"
	stmtAppendEvent    = "append event"
	stmtPutDefinition  = "put definition"
	stmtPutPart        = "put checkpoint part"
	stmtSaveCheckpoint = "save checkpoint"
)

// prepared lists each statement with the pool it runs on.
var prepared = map[string]struct {
	write bool
	query string
}{
	stmtInsertEntry: {true, `INSERT INTO ledger_entries (` + entryColumns + `, kind_rank)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`},
	stmtEntry: {false, `SELECT ` + entryColumns + ` FROM ledger_entries
		WHERE signal_id = ? AND kind = ? AND qualifier = ?`},
	stmtEntries: {false, `SELECT ` + entryColumns + ` FROM ledger_entries WHERE signal_id = ?
		ORDER BY created_at, kind_rank, qualifier`},
	stmtEntriesOfKinds: {false, `SELECT ` + entryColumns + ` FROM ledger_entries WHERE signal_id = ?
		AND kind IN (` + kindsPlaceholders + `) ORDER BY created_at, kind_rank, qualifier`},
	stmtRecent: {false, `SELECT ` + entryColumns + ` FROM ledger_entries
		WHERE kind = ? AND created_at >= ? AND created_at < ?
		ORDER BY created_at DESC, signal_id, qualifier LIMIT ?`},
	stmtSaveExecution: {true, `UPDATE stepfn_executions SET status = ?, execution = ?, definition = ?, checkpoint = ?
		WHERE arn = ?`},
	stmtSaveCheckpoint: {true, `UPDATE stepfn_executions SET checkpoint = ? WHERE arn = ?`},
	stmtAppendEvent:    {true, `INSERT INTO stepfn_history (arn, id, event) VALUES (?, ?, ?)`},
	stmtPutDefinition: {true, `INSERT INTO stepfn_definitions (ref, definition) VALUES (?, ?)
		ON CONFLICT (ref) DO NOTHING`},
	stmtPutPart: {true, `INSERT INTO stepfn_checkpoint_parts (arn, key, data) VALUES (?, ?, ?)
		ON CONFLICT (arn, key) DO UPDATE SET data = excluded.data`},
}

func (d *DB) prepare(ctx context.Context) error {
	d.stmts = make(map[string]*sql.Stmt, len(prepared))
	for name, p := range prepared {
		pool := d.r
		if p.write {
			pool = d.w
		}
		s, err := pool.PrepareContext(ctx, p.query)
		if err != nil {
			return fmt.Errorf("sqlite: prepare %s: %w", name, err)
		}
		d.stmts[name] = s
	}
	return nil
}

// stmt returns a prepared statement of the writer; in tx, when tx is not nil.
func (d *DB) stmt(ctx context.Context, tx *sql.Tx, name string) *sql.Stmt {
	if tx != nil {
		return tx.StmtContext(ctx, d.stmts[name])
	}
	return d.stmts[name]
}

// Close closes the database.
func (d *DB) Close() error {
	var errs []error
	if d.cp != nil {
		close(d.stopCP)
		<-d.cpDone
		errs = append(errs, d.cp.Close())
	}
	for _, s := range d.stmts {
		errs = append(errs, s.Close())
	}
	if d.r != nil {
		errs = append(errs, d.r.Close())
	}
	errs = append(errs, d.w.Close())
	return errors.Join(errs...)
}

// Path returns the file the database lives in.
func (d *DB) Path() string { return d.path }
