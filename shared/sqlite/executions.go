package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/ora-runtime/ora/shared/stepfn"
)

// executionsDDL holds the local Step Functions engine's executions (one row
// each: the description as JSON, the definition it runs and the engine's
// checkpoint) and their history events (JSON, in id order).
//
// The definition, the same large document on every save of an execution
// (10 kB for the wave), is kept once in stepfn_definitions under its sha256,
// and the execution's definition column holds the reference "sha256:<hex>"
// (as TEXT) instead of the document, so a save rewrites a row of 2-3 kB, not
// 13. Rows written before keep the document itself (a BLOB), and read as
// before.
const executionsDDL = `
CREATE TABLE IF NOT EXISTS stepfn_executions (
	arn        TEXT PRIMARY KEY,
	status     TEXT NOT NULL,
	execution  TEXT NOT NULL,
	definition BLOB NOT NULL,
	checkpoint BLOB
);
CREATE INDEX IF NOT EXISTS stepfn_executions_status ON stepfn_executions (status);
CREATE TABLE IF NOT EXISTS stepfn_history (
	arn   TEXT NOT NULL REFERENCES stepfn_executions (arn),
	id    INTEGER NOT NULL,
	event TEXT NOT NULL,
	PRIMARY KEY (arn, id)
);
CREATE TABLE IF NOT EXISTS stepfn_definitions (
	ref        TEXT PRIMARY KEY, -- sha256:<hex of the definition>
	definition BLOB NOT NULL
);`

var _ = registerSchema("stepfn", executionsDDL)

// ExecutionStore keeps the stepfn engine's executions and history in the
// database, so they survive a restart (stepfn.Engine.Resume continues the
// RUNNING ones). Open creates the tables.
type ExecutionStore struct {
	db *DB
	// stored holds the references of definitions known to be committed to
	// stepfn_definitions, so a save does not write them again.
	stored sync.Map // string -> struct{}
}

var _ stepfn.Store = (*ExecutionStore)(nil)

// NewExecutionStore returns the execution store of db.
func NewExecutionStore(db *DB) *ExecutionStore { return &ExecutionStore{db: db} }

// definitionRef returns the reference a definition is stored under.
func definitionRef(def []byte) string {
	sum := sha256.Sum256(def)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// putDefinition stores the definition under ref within tx, unless it is known
// to be stored already.
func (s *ExecutionStore) putDefinition(ctx context.Context, tx *sql.Tx, ref string, def []byte) error {
	if _, ok := s.stored.Load(ref); ok {
		return nil
	}
	if _, err := s.db.stmt(ctx, tx, stmtPutDefinition).ExecContext(ctx, ref, def); err != nil {
		return fmt.Errorf("definition: %w", err)
	}
	return nil
}

// CreateExecution inserts a new execution with its first events in one
// transaction. It returns an error wrapping stepfn.ErrExists, writing
// nothing, when the ARN is taken.
func (s *ExecutionStore) CreateExecution(ctx context.Context, rec stepfn.ExecutionRecord, events []stepfn.HistoryEvent) error {
	what := "create " + rec.ExecutionArn
	desc, err := json.Marshal(rec.Execution)
	if err != nil {
		return fmt.Errorf("sqlite: stepfn %s: %w", what, err)
	}
	ref := definitionRef(rec.Definition)
	return s.inTx(ctx, what, ref, func(tx *sql.Tx) error {
		if err := s.putDefinition(ctx, tx, ref, rec.Definition); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO stepfn_executions (arn, status, execution, definition, checkpoint)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (arn) DO NOTHING`,
			rec.ExecutionArn, rec.Status, string(desc), ref, rec.Checkpoint)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return stepfn.ErrExists
		}
		return s.appendEvents(ctx, tx, rec.ExecutionArn, events)
	})
}

// SaveExecution replaces the execution's row and appends events, in one
// transaction; an error wrapping stepfn.ErrNotFound for an unknown ARN.
func (s *ExecutionStore) SaveExecution(ctx context.Context, rec stepfn.ExecutionRecord, events []stepfn.HistoryEvent) error {
	what := "save " + rec.ExecutionArn
	desc, err := json.Marshal(rec.Execution)
	if err != nil {
		return fmt.Errorf("sqlite: stepfn %s: %w", what, err)
	}
	ref := definitionRef(rec.Definition)
	return s.inTx(ctx, what, ref, func(tx *sql.Tx) error {
		if err := s.putDefinition(ctx, tx, ref, rec.Definition); err != nil {
			return err
		}
		res, err := s.db.stmt(ctx, tx, stmtSaveExecution).ExecContext(ctx, rec.Status, string(desc), ref, rec.Checkpoint, rec.ExecutionArn)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return stepfn.ErrNotFound
		}
		return s.appendEvents(ctx, tx, rec.ExecutionArn, events)
	})
}

// inTx runs fn in a write transaction; once it commits, the definition
// under ref is known stored.
func (s *ExecutionStore) inTx(ctx context.Context, what, ref string, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: stepfn %s: %w", what, err)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	if err := fn(tx); err != nil {
		return fmt.Errorf("sqlite: stepfn %s: %w", what, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: stepfn %s: commit: %w", what, err)
	}
	s.stored.Store(ref, struct{}{})
	return nil
}

func (s *ExecutionStore) appendEvents(ctx context.Context, tx *sql.Tx, arn string, events []stepfn.HistoryEvent) error {
	if len(events) == 0 {
		return nil
	}
	ins := s.db.stmt(ctx, tx, stmtAppendEvent)
	for _, ev := range events {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		if _, err := ins.ExecContext(ctx, arn, ev.ID, string(b)); err != nil {
			return fmt.Errorf("event %d: %w", ev.ID, err)
		}
	}
	return nil
}

// GetExecution returns the execution's record; an error wrapping
// stepfn.ErrNotFound for an unknown ARN.
func (s *ExecutionStore) GetExecution(ctx context.Context, execArn string) (stepfn.ExecutionRecord, error) {
	row := s.db.r.QueryRowContext(ctx, `SELECT `+executionColumns+` WHERE e.arn = ?`, execArn)
	rec, err := scanExecution(row)
	if errors.Is(err, sql.ErrNoRows) {
		return stepfn.ExecutionRecord{}, fmt.Errorf("sqlite: stepfn get %s: %w", execArn, stepfn.ErrNotFound)
	}
	if err != nil {
		return stepfn.ExecutionRecord{}, fmt.Errorf("sqlite: stepfn get %s: %w", execArn, err)
	}
	return rec, nil
}

// executionColumns selects an execution's record from stepfn_executions e,
// its definition from stepfn_definitions when the row holds a reference.
const executionColumns = `e.execution, COALESCE(d.definition, e.definition), e.checkpoint
	FROM stepfn_executions e LEFT JOIN stepfn_definitions d ON d.ref = e.definition`

func scanExecution(row interface{ Scan(...any) error }) (stepfn.ExecutionRecord, error) {
	var desc string
	var rec stepfn.ExecutionRecord
	if err := row.Scan(&desc, &rec.Definition, &rec.Checkpoint); err != nil {
		return stepfn.ExecutionRecord{}, err
	}
	if err := json.Unmarshal([]byte(desc), &rec.Execution); err != nil {
		return stepfn.ExecutionRecord{}, fmt.Errorf("decode execution: %w", err)
	}
	return rec, nil
}

// RunningExecutions returns every RUNNING execution's record, by ARN.
func (s *ExecutionStore) RunningExecutions(ctx context.Context) ([]stepfn.ExecutionRecord, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT `+executionColumns+`
		WHERE e.status = ? ORDER BY e.arn`, stepfn.StatusRunning)
	if err != nil {
		return nil, fmt.Errorf("sqlite: stepfn running executions: %w", err)
	}
	defer rows.Close()
	var out []stepfn.ExecutionRecord
	for rows.Next() {
		rec, err := scanExecution(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: stepfn running executions: %w", err)
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: stepfn running executions: %w", err)
	}
	return out, nil
}

// History returns the execution's events in id order; an error wrapping
// stepfn.ErrNotFound for an unknown ARN.
func (s *ExecutionStore) History(ctx context.Context, execArn string) ([]stepfn.HistoryEvent, error) {
	var one int
	err := s.db.r.QueryRowContext(ctx, `SELECT 1 FROM stepfn_executions WHERE arn = ?`, execArn).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: stepfn history %s: %w", execArn, stepfn.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: stepfn history %s: %w", execArn, err)
	}
	rows, err := s.db.r.QueryContext(ctx, `SELECT event FROM stepfn_history WHERE arn = ? ORDER BY id`, execArn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: stepfn history %s: %w", execArn, err)
	}
	defer rows.Close()
	var out []stepfn.HistoryEvent
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			return nil, fmt.Errorf("sqlite: stepfn history %s: %w", execArn, err)
		}
		var ev stepfn.HistoryEvent
		dec := json.NewDecoder(strings.NewReader(b))
		if err := dec.Decode(&ev); err != nil {
			return nil, fmt.Errorf("sqlite: stepfn history %s: decode event: %w", execArn, err)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: stepfn history %s: %w", execArn, err)
	}
	return out, nil
}
