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
// checkpoint), their history events (JSON, in id order), and the parts of
// their checkpoints (stepfn.PartStore: one row per Parallel branch or Map
// iteration, rewritten only when it changes).
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
);
CREATE TABLE IF NOT EXISTS stepfn_checkpoint_parts (
	arn  TEXT NOT NULL REFERENCES stepfn_executions (arn),
	key  TEXT NOT NULL,
	data BLOB NOT NULL,
	PRIMARY KEY (arn, key)
);`

var _ = registerSchema("stepfn", executionsDDL)

// ExecutionStore keeps the stepfn engine's executions and history in the
// database, so they survive a restart (stepfn.Engine.Resume continues the
// RUNNING ones). Open creates the tables.
type ExecutionStore struct {
	db *DB
	// lastDef and lastRef remember the reference of the last definition
	// saved: the engine passes the same slice on every save of an
	// execution, so its sha256 is computed once, not once an event.
	refMu   sync.Mutex
	lastDef []byte
	lastRef string
	// The group commit's queue of saves, and whether a caller is
	// committing it (SaveExecutionParts).
	qmu     sync.Mutex
	queue   []*saveReq
	leading bool
	// running maps the ARN of each execution whose stored description is
	// RUNNING to its redrive count: its saves need not write it again.
	running sync.Map // string -> int
	// stored holds the references of definitions known to be committed to
	// stepfn_definitions, so a save does not write them again.
	stored sync.Map // string -> struct{}
}

var _ stepfn.PartStore = (*ExecutionStore)(nil)

// NewExecutionStore returns the execution store of db.
func NewExecutionStore(db *DB) *ExecutionStore { return &ExecutionStore{db: db} }

// ref returns definitionRef(def), remembering the last one.
func (s *ExecutionStore) ref(def []byte) string {
	s.refMu.Lock()
	defer s.refMu.Unlock()
	if len(def) > 0 && len(def) == len(s.lastDef) && &def[0] == &s.lastDef[0] {
		return s.lastRef
	}
	s.lastDef, s.lastRef = def, definitionRef(def)
	return s.lastRef
}

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
	ref := s.ref(rec.Definition)
	err = s.inTx(ctx, what, func(tx *sql.Tx) error {
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
	if err == nil {
		s.stored.Store(ref, struct{}{})
		s.noteStatus(rec)
	}
	return err
}

// noteStatus remembers, once a save of rec is committed, whether the stored
// description is that of a RUNNING execution at its redrive count.
func (s *ExecutionStore) noteStatus(rec stepfn.ExecutionRecord) {
	if rec.Status == stepfn.StatusRunning {
		s.running.Store(rec.ExecutionArn, rec.RedriveCount)
	} else {
		s.running.Delete(rec.ExecutionArn)
	}
}

// SaveExecution replaces the execution's row and appends events, in one
// transaction; an error wrapping stepfn.ErrNotFound for an unknown ARN.
func (s *ExecutionStore) SaveExecution(ctx context.Context, rec stepfn.ExecutionRecord, events []stepfn.HistoryEvent) error {
	return s.SaveExecutionParts(ctx, rec, nil, events)
}

// SaveExecutionParts is SaveExecution that also writes checkpoint parts, in
// the same transaction. Once the execution has SUCCEEDED its parts are
// deleted: nothing resumes or redrives it.
//
// Saves made at the same time share a transaction (group commit): the first
// caller to find no commit under way writes every save queued by then in one
// transaction, and each caller returns once its own save is committed, so
// every save is as durable when it returns as it was alone; concurrent
// executions pay one commit between them instead of one each. When a shared
// transaction fails, each of its saves is tried again alone, so one save's
// error (an unknown ARN) never fails another's.
func (s *ExecutionStore) SaveExecutionParts(ctx context.Context, rec stepfn.ExecutionRecord, parts []stepfn.CheckpointPart, events []stepfn.HistoryEvent) error {
	req := &saveReq{rec: rec, parts: parts, events: events, ref: s.ref(rec.Definition), wake: make(chan struct{}, 1)}
	// A RUNNING execution's description (its input included) is the same
	// on every save until it stops or is redriven: written once.
	if v, ok := s.running.Load(rec.ExecutionArn); !ok || rec.Status != stepfn.StatusRunning || v.(int) != rec.RedriveCount {
		desc, err := json.Marshal(rec.Execution)
		if err != nil {
			return fmt.Errorf("sqlite: stepfn save %s: %w", rec.ExecutionArn, err)
		}
		req.desc, req.withDesc = string(desc), true
	}
	s.qmu.Lock()
	s.queue = append(s.queue, req)
	if s.leading {
		s.qmu.Unlock()
		<-req.wake
		if !req.lead {
			return req.err
		}
		s.qmu.Lock() // handed the lead, with its save still queued
	}
	s.leading = true
	batch := s.queue
	s.queue = nil
	s.qmu.Unlock()
	// The batch holds others' saves: the caller's cancellation is not theirs.
	s.commitBatch(context.WithoutCancel(ctx), batch)
	s.qmu.Lock()
	if len(s.queue) > 0 {
		// Hand the lead to the next waiter: it commits what queued meanwhile.
		next := s.queue[0]
		next.lead = true
		next.wake <- struct{}{}
	} else {
		s.leading = false
	}
	s.qmu.Unlock()
	return req.err
}

// saveReq is one SaveExecutionParts call waiting in the group-commit queue.
type saveReq struct {
	rec       stepfn.ExecutionRecord
	parts     []stepfn.CheckpointPart
	events    []stepfn.HistoryEvent
	desc, ref string
	withDesc  bool // desc is to be written
	err       error
	lead      bool          // woken to commit the queue, not because its save is done
	wake      chan struct{} // receives once: done, or lead
}

// commitBatch writes the saves in one transaction, or, when that fails, each
// in a transaction of its own; it sets each one's err and wakes the waiters.
func (s *ExecutionStore) commitBatch(ctx context.Context, batch []*saveReq) {
	what := "save " + batch[0].rec.ExecutionArn
	if len(batch) > 1 {
		what = fmt.Sprintf("save %d executions", len(batch))
	}
	err := s.inTx(ctx, what, func(tx *sql.Tx) error {
		for _, r := range batch {
			if err := s.save(ctx, tx, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && len(batch) > 1 {
		for _, r := range batch {
			r.err = s.inTx(ctx, "save "+r.rec.ExecutionArn, func(tx *sql.Tx) error { return s.save(ctx, tx, r) })
		}
	} else {
		for _, r := range batch {
			r.err = err
		}
	}
	for _, r := range batch {
		if r.err == nil {
			s.stored.Store(r.ref, struct{}{})
			s.noteStatus(r.rec)
		}
	}
	for _, r := range batch[1:] { // batch[0] is the caller committing it
		r.wake <- struct{}{}
	}
}

// save writes one save within tx.
func (s *ExecutionStore) save(ctx context.Context, tx *sql.Tx, r *saveReq) error {
	rec := r.rec
	if err := s.putDefinition(ctx, tx, r.ref, rec.Definition); err != nil {
		return err
	}
	var res sql.Result
	var err error
	if r.withDesc {
		res, err = s.db.stmt(ctx, tx, stmtSaveExecution).ExecContext(ctx, rec.Status, r.desc, r.ref, rec.Checkpoint, rec.ExecutionArn)
	} else {
		res, err = s.db.stmt(ctx, tx, stmtSaveCheckpoint).ExecContext(ctx, rec.Checkpoint, rec.ExecutionArn)
	}
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return stepfn.ErrNotFound
	}
	if len(r.parts) > 0 {
		put := s.db.stmt(ctx, tx, stmtPutPart)
		for _, p := range r.parts {
			if _, err := put.ExecContext(ctx, rec.ExecutionArn, p.Key, p.Data); err != nil {
				return fmt.Errorf("checkpoint part %s: %w", p.Key, err)
			}
		}
	}
	if rec.Status == stepfn.StatusSucceeded {
		if _, err := tx.ExecContext(ctx, `DELETE FROM stepfn_checkpoint_parts WHERE arn = ?`, rec.ExecutionArn); err != nil {
			return fmt.Errorf("checkpoint parts: %w", err)
		}
	}
	return s.appendEvents(ctx, tx, rec.ExecutionArn, r.events)
}

// CheckpointParts returns the checkpoint parts stored for the execution, by
// key (none for an unknown ARN).
func (s *ExecutionStore) CheckpointParts(ctx context.Context, execArn string) (map[string][]byte, error) {
	rows, err := s.db.r.QueryContext(ctx, `SELECT key, data FROM stepfn_checkpoint_parts WHERE arn = ?`, execArn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: stepfn checkpoint parts %s: %w", execArn, err)
	}
	defer rows.Close()
	var out map[string][]byte
	for rows.Next() {
		var k string
		var b []byte
		if err := rows.Scan(&k, &b); err != nil {
			return nil, fmt.Errorf("sqlite: stepfn checkpoint parts %s: %w", execArn, err)
		}
		if out == nil {
			out = map[string][]byte{}
		}
		out[k] = b
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: stepfn checkpoint parts %s: %w", execArn, err)
	}
	return out, nil
}

// inTx runs fn in a write transaction.
func (s *ExecutionStore) inTx(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
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
