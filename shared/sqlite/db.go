package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver: no cgo
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

// Options tune a DB.
type Options struct {
	// Now returns the current time; tests replace it. Default time.Now.
	Now func() time.Time
	// BusyTimeout is how long a writer waits for the lock. Default 10 s.
	BusyTimeout time.Duration
}

// DB is an open SQLite database holding ora's records.
type DB struct {
	sql  *sql.DB
	path string
	now  func() time.Time
}

// Open opens (creating if needed) the database file at path and applies the
// schema. Writes take the lock at BEGIN (IMMEDIATE), so concurrent writers queue
// instead of failing, and the journal is in WAL mode.
func Open(ctx context.Context, path string, opts ...func(*Options)) (*DB, error) {
	o := Options{Now: time.Now, BusyTimeout: 10 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	if path == "" {
		return nil, fmt.Errorf("sqlite: open: empty path")
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", o.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_txlock", "immediate")
	dsn := "file:" + path + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	d := &DB{sql: db, path: path, now: o.Now}
	if err := d.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return d, nil
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
	for i, stmt := range ddl {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := d.sql.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("sqlite: apply schema %s: %w", names[i], err)
		}
	}
	return nil
}

// Close closes the database.
func (d *DB) Close() error { return d.sql.Close() }

// Path returns the file the database lives in.
func (d *DB) Path() string { return d.path }
