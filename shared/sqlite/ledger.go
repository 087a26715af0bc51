package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ora-runtime/ora/shared/ora"
)

var (
	_ ora.Ledger     = (*DB)(nil)
	_ ora.Debouncer  = (*DB)(nil)
	_ ora.KindReader = (*DB)(nil)
)

var _ = registerSchema("ledger", `
CREATE TABLE IF NOT EXISTS ledger_entries (
	signal_id   TEXT    NOT NULL,
	kind        TEXT    NOT NULL,
	qualifier   TEXT    NOT NULL,
	kind_rank   INTEGER NOT NULL,
	author_type TEXT    NOT NULL,
	body        BLOB    NOT NULL,
	meta        TEXT,
	digest      TEXT    NOT NULL,
	created_at  TEXT    NOT NULL,
	expires_at  TEXT,
	PRIMARY KEY (signal_id, kind, qualifier)
);
CREATE INDEX IF NOT EXISTS ledger_entries_recent ON ledger_entries (kind, created_at);
CREATE TABLE IF NOT EXISTS ledger_decisions (
	decision_id TEXT    NOT NULL PRIMARY KEY,
	signal_id   TEXT    NOT NULL,
	status      TEXT    NOT NULL,
	digest      TEXT    NOT NULL,
	reason      TEXT    NOT NULL,
	version     INTEGER NOT NULL,
	updated_at  TEXT    NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger_commitments (
	id        TEXT    NOT NULL PRIMARY KEY,
	signal_id TEXT    NOT NULL,
	title     TEXT    NOT NULL,
	body      BLOB,
	status    TEXT    NOT NULL,
	opened_at TEXT    NOT NULL,
	closed_at TEXT,
	closed_by TEXT    NOT NULL,
	version   INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_commitments_open ON ledger_commitments (opened_at, id) WHERE status = 'open';
`)

// timeLayout is a fixed-width UTC layout: its strings sort as the instants do,
// so created_at can be compared and ordered as text.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlite: stored time %q: %w", s, err)
	}
	return t, nil
}

func nullTime(t *time.Time) sql.NullString {
	if t == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: formatTime(*t), Valid: true}
}

func parseNullTime(s sql.NullString) (*time.Time, error) {
	if !s.Valid {
		return nil, nil
	}
	t, err := parseTime(s.String)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// translate maps driver failures onto the domain's kinds: a busy or locked
// database, or a context deadline, is ETRANSIENT; anything else stays as it is
// (EINTERNAL to ora.ErrorCode).
func translate(err error) error {
	var se *msqlite.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se) && (se.Code()&0xff == sqlite3.SQLITE_BUSY || se.Code()&0xff == sqlite3.SQLITE_LOCKED):
		return ora.Transient(err, "database is busy")
	case errors.Is(err, context.DeadlineExceeded):
		return ora.Transient(err, "timed out")
	}
	return err
}

const entryColumns = `signal_id, kind, qualifier, author_type, body, meta, digest, created_at, expires_at`

// insertEntry writes e unless its identity exists, in tx when it is not nil;
// it reports whether it did.
func (d *DB) insertEntry(ctx context.Context, tx *sql.Tx, e ora.Entry) (bool, error) {
	return insertEntryWith(ctx, d.stmt(ctx, tx, stmtInsertEntry), e)
}

// insertEntryWith runs the prepared insert of an entry.
func insertEntryWith(ctx context.Context, ins *sql.Stmt, e ora.Entry) (bool, error) {
	var meta sql.NullString
	if len(e.Meta) > 0 {
		b, err := json.Marshal(e.Meta)
		if err != nil {
			return false, ora.Invalid("meta", "cannot encode: %v", err)
		}
		meta = sql.NullString{String: string(b), Valid: true}
	}
	res, err := ins.ExecContext(ctx,
		e.SignalID, string(e.Kind), e.Qualifier, string(e.AuthorType), []byte(e.Body), meta, e.Digest,
		formatTime(e.CreatedAt), nullTime(e.ExpiresAt), e.Kind.Rank())
	if err != nil {
		return false, translate(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, translate(err)
	}
	return n == 1, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanEntry(s scanner) (ora.Entry, error) {
	var (
		e                     ora.Entry
		kind, author, created string
		body                  []byte
		meta, expires         sql.NullString
	)
	if err := s.Scan(&e.SignalID, &kind, &e.Qualifier, &author, &body, &meta, &e.Digest, &created, &expires); err != nil {
		return ora.Entry{}, err
	}
	e.Kind, e.AuthorType, e.Body = ora.EntryKind(kind), ora.AuthorType(author), json.RawMessage(body)
	if meta.Valid {
		m, err := decodeMeta(meta.String)
		if err != nil {
			return ora.Entry{}, fmt.Errorf("sqlite: stored meta: %w", err)
		}
		e.Meta = m
	}
	var err error
	if e.CreatedAt, err = parseTime(created); err != nil {
		return ora.Entry{}, err
	}
	if e.ExpiresAt, err = parseNullTime(expires); err != nil {
		return ora.Entry{}, err
	}
	return e, nil
}

// metaCache holds decoded meta documents by their text: a wave's entries
// carry a handful of distinct ones (a fact's job id and kind), read again by
// every step, and decoding JSON costs more than copying a small map.
var metaCache struct {
	sync.Mutex
	m map[string]map[string]string
}

// metaCacheSize bounds metaCache; metaCacheMax is the longest text it keeps.
const (
	metaCacheSize = 1024
	metaCacheMax  = 256
)

// decodeMeta decodes a stored meta document into a map of the caller's own.
func decodeMeta(s string) (map[string]string, error) {
	if len(s) > metaCacheMax {
		var m map[string]string
		err := json.Unmarshal([]byte(s), &m)
		return m, err
	}
	metaCache.Lock()
	m, ok := metaCache.m[s]
	metaCache.Unlock()
	if ok {
		return maps.Clone(m), nil
	}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, err
	}
	metaCache.Lock()
	if metaCache.m == nil || len(metaCache.m) >= metaCacheSize {
		metaCache.m = map[string]map[string]string{}
	}
	metaCache.m[s] = maps.Clone(m)
	metaCache.Unlock()
	return m, nil
}

// conflictEntry reads the entry already stored under e's identity (in tx
// when it is not nil) and returns the ECONFLICT error carrying it.
func (d *DB) conflictEntry(ctx context.Context, tx *sql.Tx, e ora.Entry) error {
	args := []any{e.SignalID, string(e.Kind), e.Qualifier}
	var row *sql.Row
	if tx != nil {
		row = tx.QueryRowContext(ctx, prepared[stmtEntry].query, args...)
	} else {
		row = d.stmts[stmtEntry].QueryRowContext(ctx, args...)
	}
	stored, err := scanEntry(row)
	if err != nil {
		return fmt.Errorf("read the conflicting entry: %w", translate(err))
	}
	one := []ora.Entry{stored}
	if err := d.resolveFacts(ctx, one); err != nil {
		return fmt.Errorf("read the conflicting entry: %w", err)
	}
	if err := d.loadBodies(ctx, one); err != nil {
		return fmt.Errorf("read the conflicting entry: %w", err)
	}
	stored = one[0]
	return ora.Conflict(stored, "entry %s/%s/%q exists", e.SignalID, e.Kind, e.Qualifier)
}

// insertByRef writes row with body (its facts by reference) and the fact
// bodies it refers to, in one transaction; it reports whether it wrote the
// row.
func (d *DB) insertByRef(ctx context.Context, row ora.Entry, body []byte, facts []factBody) (bool, error) {
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return false, translate(err)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	put, err := d.putFactBodies(ctx, tx, facts)
	if err != nil {
		return false, err
	}
	full := row.Body
	row.Body = body
	ok, err := d.insertEntry(ctx, tx, row)
	if err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, translate(err)
	}
	d.noteFactBodies(put)
	d.keepWhole(row.Digest, full)
	return ok, nil
}

// Append writes e once; see ora.Ledger.
func (d *DB) Append(ctx context.Context, in ora.Entry) (ora.Entry, error) {
	e, err := d.secrets.RedactEntry(in).Prepared(d.now())
	if err != nil {
		return ora.Entry{}, fmt.Errorf("ledger: append %s: %w", in.Kind, err)
	}
	e = d.keep.Apply(e)
	row := e
	if off, err := d.sizeChecked([]ora.Entry{e}); err != nil {
		return ora.Entry{}, fmt.Errorf("ledger: append %s: %w", e.Kind, err)
	} else if off[0] {
		if row, err = d.offload(ctx, e); err != nil {
			return ora.Entry{}, fmt.Errorf("ledger: append %s: %w", e.Kind, err)
		}
	}
	var ok bool
	if body, facts := splitFacts(row); len(facts) > 0 {
		ok, err = d.insertByRef(ctx, row, body, facts)
	} else {
		ok, err = d.insertEntry(ctx, nil, row)
	}
	if err != nil {
		return ora.Entry{}, fmt.Errorf("ledger: append %s: %w", e.Kind, err)
	}
	if !ok {
		// The row was committed before the insert found it, so a reader
		// starting now sees it.
		return ora.Entry{}, fmt.Errorf("ledger: append %s: %w", e.Kind, d.conflictEntry(ctx, nil, e))
	}
	return e, nil
}

// AppendNew writes each of entries whose identity is not stored yet, all in
// one transaction, and leaves the ones already stored as they are (whatever
// their content); it returns how many it wrote. Each write is the conditional
// write of Append, so running it again is harmless; being one commit, it
// costs one WAL write, not one per entry. Errors: EINVALID naming the entry
// (nothing is written), ETRANSIENT.
func (d *DB) AppendNew(ctx context.Context, entries []ora.Entry) (int, error) {
	if len(entries) == 0 {
		return 0, nil
	}
	now := d.now()
	prepared := make([]ora.Entry, len(entries))
	for i, in := range entries {
		e, err := d.secrets.RedactEntry(in).Prepared(now)
		if err != nil {
			return 0, fmt.Errorf("ledger: append entries: [%d] %s %q: %w", i, in.Kind, in.Qualifier, err)
		}
		prepared[i] = d.keep.Apply(e)
	}
	// Every size is checked before anything is written, so an entry over
	// the limit leaves the whole batch unwritten.
	off, err := d.sizeChecked(prepared)
	if err != nil {
		return 0, fmt.Errorf("ledger: append entries: %w", err)
	}
	for i, e := range prepared {
		if off[i] {
			if prepared[i], err = d.offload(ctx, e); err != nil {
				return 0, fmt.Errorf("ledger: append entries: [%d] %s %q: %w", i, e.Kind, e.Qualifier, err)
			}
		}
	}
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("ledger: append entries: %w", translate(err))
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	n := 0
	ins := d.stmt(ctx, tx, stmtInsertEntry)
	var (
		stored []factBody
		whole  []ora.Entry // the entries kept by reference, whole
	)
	for i, e := range prepared {
		if body, facts := splitFacts(e); len(facts) > 0 {
			put, err := d.putFactBodies(ctx, tx, facts)
			if err != nil {
				return 0, fmt.Errorf("ledger: append entries: [%d] %s %q: %w", i, e.Kind, e.Qualifier, err)
			}
			stored = append(stored, put...)
			whole = append(whole, e)
			e.Body = body
		}
		ok, err := insertEntryWith(ctx, ins, e)
		if err != nil {
			return 0, fmt.Errorf("ledger: append entries: [%d] %s %q: %w", i, e.Kind, e.Qualifier, err)
		}
		if ok {
			n++
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("ledger: append entries: commit: %w", translate(err))
	}
	d.noteFactBodies(stored)
	for _, e := range whole {
		d.keepWhole(e.Digest, e.Body)
	}
	return n, nil
}

// Entries returns a signal's entries in order; see ora.Ledger.
func (d *DB) Entries(ctx context.Context, signalID string) ([]ora.Entry, error) {
	out, err := d.queryEntries(ctx, stmtEntries, signalID)
	if err != nil {
		return nil, fmt.Errorf("ledger: entries of %s: %w", signalID, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("ledger: entries of %s: %w", signalID, ora.Errorf(ora.ENOTFOUND, "signal %q has no entries", signalID))
	}
	return out, nil
}

// maxKinds is how many kinds EntriesOfKinds's prepared statement takes; a
// shorter list repeats its first kind, a longer one reads every entry. It
// is above the count of ora.EntryKinds: at 16 the act and validate stages'
// list (every kind but facts and packets, 18) read every entry of the wave,
// facts and packet included, four times a wave (7% of its CPU).
const maxKinds = 32

var kindsPlaceholders = strings.TrimSuffix(strings.Repeat("?, ", maxKinds), ", ")

// EntriesOfKinds returns the signal's entries of the given kinds, in
// Entries' order, reading no other row; see ora.KindReader.
func (d *DB) EntriesOfKinds(ctx context.Context, signalID string, kinds ...ora.EntryKind) ([]ora.Entry, error) {
	if len(kinds) == 0 {
		return nil, nil
	}
	if len(kinds) > maxKinds {
		all, err := d.queryEntries(ctx, stmtEntries, signalID)
		if err != nil {
			return nil, fmt.Errorf("ledger: entries of %s: %w", signalID, err)
		}
		return slices.DeleteFunc(all, func(e ora.Entry) bool { return !slices.Contains(kinds, e.Kind) }), nil
	}
	args := make([]any, 1+maxKinds)
	args[0] = signalID
	for i := range maxKinds {
		args[1+i] = string(kinds[min(i, len(kinds)-1)])
	}
	out, err := d.queryEntries(ctx, stmtEntriesOfKinds, args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: entries of %s: %w", signalID, err)
	}
	return out, nil
}

// Recent returns entries of one kind created in [from, to), newest first; see
// ora.Ledger.
func (d *DB) Recent(ctx context.Context, kind ora.EntryKind, from, to time.Time, limit int) ([]ora.Entry, error) {
	if err := checkRecent(kind, from, to, limit); err != nil {
		return nil, fmt.Errorf("ledger: recent %s: %w", kind, err)
	}
	if limit == 0 {
		limit = -1 // SQLite: no limit
	}
	out, err := d.queryEntries(ctx, stmtRecent,
		string(kind), formatTime(from), formatTime(to), limit)
	if err != nil {
		return nil, fmt.Errorf("ledger: recent %s: %w", kind, err)
	}
	return out, nil
}

func checkRecent(kind ora.EntryKind, from, to time.Time, limit int) error {
	switch {
	case kind.Rank() < 0:
		return ora.Invalid("kind", "%q is not a ledger entry kind", kind)
	case !kind.Indexed():
		return ora.Invalid("kind", "%q is not indexed by kind (ora.RecentKinds)", kind)
	case to.Before(from):
		return ora.Invalid("to", "%v is before from %v", to, from)
	case limit < 0:
		return ora.Invalid("limit", "%d is negative", limit)
	case from.Year() < 1 || to.Year() > 9999:
		return ora.Invalid("from", "the range must lie within the years 1..9999")
	}
	return nil
}

func (d *DB) queryEntries(ctx context.Context, stmt string, args ...any) ([]ora.Entry, error) {
	rows, err := d.stmts[stmt].QueryContext(ctx, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []ora.Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	if err := d.resolveFacts(ctx, out); err != nil {
		return nil, err
	}
	if err := d.loadBodies(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// decisionEntry builds the reasoner-decision entry for d.
func decisionEntry(d ora.ReasonerDecision, now time.Time) (ora.Entry, error) {
	if err := d.Validate(); err != nil {
		return ora.Entry{}, err
	}
	body, err := json.Marshal(d)
	if err != nil {
		return ora.Entry{}, ora.Invalid("decision", "cannot encode: %v", err)
	}
	return ora.Entry{
		SignalID:   d.SignalID,
		Kind:       ora.KindReasonerDecision,
		Qualifier:  d.ID,
		AuthorType: d.AuthorType,
		Body:       body,
	}.Prepared(now)
}

// RecordDecision writes the decision's entry and its status record in one
// transaction; see ora.Ledger.
func (d *DB) RecordDecision(ctx context.Context, dec ora.ReasonerDecision) (ora.Entry, error) {
	e, err := decisionEntry(dec, d.now())
	e = d.secrets.RedactEntry(e)
	if err == nil {
		_, err = ora.SizeCheck(e, false) // a decision is never stored by reference
	}
	if err != nil {
		return ora.Entry{}, fmt.Errorf("ledger: record decision %s: %w", dec.ID, err)
	}
	if err := d.recordDecision(ctx, e, dec); err != nil {
		return ora.Entry{}, fmt.Errorf("ledger: record decision %s: %w", dec.ID, err)
	}
	return e, nil
}

func (d *DB) recordDecision(ctx context.Context, e ora.Entry, dec ora.ReasonerDecision) error {
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return translate(err)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	ok, err := d.insertEntry(ctx, tx, e)
	if err != nil {
		return err
	}
	if !ok {
		return d.conflictEntry(ctx, tx, e)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO ledger_decisions
		(decision_id, signal_id, status, digest, reason, version, updated_at)
		VALUES (?, ?, ?, ?, '', 1, ?) ON CONFLICT DO NOTHING`,
		dec.ID, dec.SignalID, string(ora.StatusDecided), e.Digest, formatTime(e.CreatedAt))
	if err != nil {
		return translate(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return translate(err)
	} else if n == 0 {
		st, err := scanDecision(tx.QueryRowContext(ctx, `SELECT `+decisionColumns+` FROM ledger_decisions WHERE decision_id = ?`, dec.ID))
		if err != nil {
			return fmt.Errorf("read the conflicting decision: %w", translate(err))
		}
		return ora.Conflict(st, "decision %s exists for signal %s", dec.ID, st.SignalID)
	}
	return translate(tx.Commit())
}

const decisionColumns = `decision_id, signal_id, status, digest, reason, version, updated_at`

func scanDecision(s scanner) (ora.DecisionState, error) {
	var (
		st              ora.DecisionState
		status, updated string
	)
	if err := s.Scan(&st.DecisionID, &st.SignalID, &status, &st.Digest, &st.Reason, &st.Version, &updated); err != nil {
		return ora.DecisionState{}, err
	}
	st.Status = ora.DecisionStatus(status)
	var err error
	st.UpdatedAt, err = parseTime(updated)
	return st, err
}

// Decision returns a decision's status record; see ora.Ledger.
func (d *DB) Decision(ctx context.Context, decisionID string) (ora.DecisionState, error) {
	st, err := scanDecision(d.r.QueryRowContext(ctx, `SELECT `+decisionColumns+` FROM ledger_decisions WHERE decision_id = ?`, decisionID))
	if errors.Is(err, sql.ErrNoRows) {
		return ora.DecisionState{}, fmt.Errorf("ledger: decision %s: %w", decisionID, ora.Errorf(ora.ENOTFOUND, "decision %q not found", decisionID))
	}
	if err != nil {
		return ora.DecisionState{}, fmt.Errorf("ledger: decision %s: %w", decisionID, translate(err))
	}
	return st, nil
}

// TransitionDecision moves a decision's status by a conditional update on the
// expected old status; see ora.Ledger.
func (d *DB) TransitionDecision(ctx context.Context, decisionID string, from, to ora.DecisionStatus, reason string) (ora.DecisionState, error) {
	wrap := func(err error) error {
		return fmt.Errorf("ledger: transition decision %s %s -> %s: %w", decisionID, from, to, err)
	}
	if decisionID == "" {
		return ora.DecisionState{}, wrap(ora.Invalid("decision_id", "required"))
	}
	if !ora.CanTransition(from, to) {
		return ora.DecisionState{}, wrap(ora.Invalid("to", "%q -> %q is not an allowed transition", from, to))
	}
	st, err := scanDecision(d.w.QueryRowContext(ctx, `UPDATE ledger_decisions
		SET status = ?, reason = ?, version = version + 1, updated_at = ?
		WHERE decision_id = ? AND status = ?
		RETURNING `+decisionColumns,
		string(to), reason, formatTime(d.now()), decisionID, string(from)))
	if err == nil {
		return st, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return ora.DecisionState{}, wrap(translate(err))
	}
	cur, err := d.Decision(ctx, decisionID)
	if err != nil {
		return ora.DecisionState{}, wrap(err)
	}
	return ora.DecisionState{}, wrap(ora.Conflict(cur, "decision is %s, not %s", cur.Status, from))
}

const commitmentColumns = `id, signal_id, title, body, status, opened_at, closed_at, closed_by, version`

func scanCommitment(s scanner) (ora.Commitment, error) {
	var (
		c              ora.Commitment
		body           []byte
		opened, closed sql.NullString
	)
	if err := s.Scan(&c.ID, &c.SignalID, &c.Title, &body, &c.Status, &opened, &closed, &c.ClosedBy, &c.Version); err != nil {
		return ora.Commitment{}, err
	}
	if len(body) > 0 {
		c.Body = json.RawMessage(body)
	}
	var err error
	if c.OpenedAt, err = parseTime(opened.String); err != nil {
		return ora.Commitment{}, err
	}
	if c.ClosedAt, err = parseNullTime(closed); err != nil {
		return ora.Commitment{}, err
	}
	return c, nil
}

func (d *DB) commitment(ctx context.Context, id string) (ora.Commitment, error) {
	c, err := scanCommitment(d.r.QueryRowContext(ctx, `SELECT `+commitmentColumns+` FROM ledger_commitments WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return ora.Commitment{}, ora.Errorf(ora.ENOTFOUND, "commitment %q not found", id)
	}
	return c, translate(err)
}

// OpenCommitment stores c as open; see ora.Ledger.
func (d *DB) OpenCommitment(ctx context.Context, in ora.Commitment) (ora.Commitment, error) {
	c, err := in.Opened(d.now())
	if err != nil {
		return ora.Commitment{}, fmt.Errorf("ledger: open commitment %s: %w", in.ID, err)
	}
	var body []byte
	if len(c.Body) > 0 {
		body = c.Body
	}
	res, err := d.w.ExecContext(ctx, `INSERT INTO ledger_commitments (`+commitmentColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, NULL, '', ?) ON CONFLICT DO NOTHING`,
		c.ID, c.SignalID, c.Title, body, c.Status, formatTime(c.OpenedAt), c.Version)
	if err != nil {
		return ora.Commitment{}, fmt.Errorf("ledger: open commitment %s: %w", c.ID, translate(err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return ora.Commitment{}, fmt.Errorf("ledger: open commitment %s: %w", c.ID, translate(err))
	} else if n == 0 {
		stored, err := d.commitment(ctx, c.ID)
		if err != nil {
			return ora.Commitment{}, fmt.Errorf("ledger: open commitment %s: read the conflicting commitment: %w", c.ID, err)
		}
		return ora.Commitment{}, fmt.Errorf("ledger: open commitment %s: %w", c.ID, ora.Conflict(stored, "commitment exists"))
	}
	return c, nil
}

// CloseCommitment closes an open commitment; see ora.Ledger.
func (d *DB) CloseCommitment(ctx context.Context, id, closedBy string) (ora.Commitment, error) {
	if id == "" {
		return ora.Commitment{}, fmt.Errorf("ledger: close commitment: %w", ora.Invalid("id", "required"))
	}
	c, err := scanCommitment(d.w.QueryRowContext(ctx, `UPDATE ledger_commitments
		SET status = ?, closed_at = ?, closed_by = ?, version = version + 1
		WHERE id = ? AND status = ?
		RETURNING `+commitmentColumns,
		ora.CommitmentClosed, formatTime(d.now()), closedBy, id, ora.CommitmentOpen))
	if err == nil {
		return c, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return ora.Commitment{}, fmt.Errorf("ledger: close commitment %s: %w", id, translate(err))
	}
	cur, err := d.commitment(ctx, id)
	if err != nil {
		return ora.Commitment{}, fmt.Errorf("ledger: close commitment %s: %w", id, err)
	}
	return ora.Commitment{}, fmt.Errorf("ledger: close commitment %s: %w", id, ora.Conflict(cur, "commitment is %s", cur.Status))
}

// OpenCommitments returns open commitments, oldest first; see ora.Ledger.
func (d *DB) OpenCommitments(ctx context.Context, limit int) ([]ora.Commitment, error) {
	if limit < 0 {
		return nil, fmt.Errorf("ledger: open commitments: %w", ora.Invalid("limit", "%d is negative", limit))
	}
	if limit == 0 {
		limit = -1
	}
	rows, err := d.r.QueryContext(ctx, `SELECT `+commitmentColumns+` FROM ledger_commitments
		WHERE status = 'open' ORDER BY opened_at, id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("ledger: open commitments: %w", translate(err))
	}
	defer rows.Close()
	var out []ora.Commitment
	for rows.Next() {
		c, err := scanCommitment(rows)
		if err != nil {
			return nil, fmt.Errorf("ledger: open commitments: %w", translate(err))
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: open commitments: %w", translate(err))
	}
	return out, nil
}
