package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Commit writes a stage's entries and transitions in one transaction; see
// ora.Ledger. Every write runs inside it (the entries' conditional inserts,
// the transitions' conditional updates); when one of them finds its
// condition false the transaction rolls back, so a stage is all or nothing,
// and its one COMMIT is one WAL write.
func (d *DB) Commit(ctx context.Context, s ora.Stage) (ora.Committed, error) {
	wrap := func(err error) error { return fmt.Errorf("ledger: commit %s: %w", s.Name, err) }
	if err := s.Validate(); err != nil {
		return ora.Committed{}, wrap(err)
	}
	now := d.now()
	entries := make([]ora.Entry, len(s.Entries))
	size := 0
	for i, in := range s.Entries {
		e, err := d.secrets.RedactEntry(in).Prepared(now)
		if err != nil {
			return ora.Committed{}, wrap(fmt.Errorf("[%d] %s %q: %w", i, in.Kind, in.Qualifier, err))
		}
		entries[i] = d.keep.Apply(e)
	}
	// Every size is checked before anything is written.
	off, err := d.sizeChecked(entries)
	if err != nil {
		return ora.Committed{}, wrap(err)
	}
	rows := make([]ora.Entry, len(entries))
	for i, e := range entries {
		rows[i] = e
		if off[i] {
			rows[i].Body = nil
		}
		size += ora.EntrySize(rows[i])
	}
	if size > ora.MaxStageBytes {
		return ora.Committed{}, wrap(ora.Invalid("stage", "%d bytes: a stage commits at most %d at once", size, ora.MaxStageBytes))
	}
	for i, e := range entries {
		if off[i] {
			if rows[i], err = d.offload(ctx, e); err != nil {
				return ora.Committed{}, wrap(fmt.Errorf("[%d] %s %q: %w", i, e.Kind, e.Qualifier, err))
			}
		}
	}
	out, err := d.commitStage(ctx, s, entries, rows, now)
	if err != nil {
		return ora.Committed{}, wrap(err)
	}
	return out, nil
}

// commitStage runs the stage's transaction: entries (their row forms in
// rows) and transitions, then either COMMIT, or a rollback and the replay's
// stored records or the first conflict.
func (d *DB) commitStage(ctx context.Context, s ora.Stage, entries, rows []ora.Entry, now time.Time) (ora.Committed, error) {
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return ora.Committed{}, translate(err)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	ins := d.stmt(ctx, tx, stmtInsertEntry)
	var (
		stored []factBody
		whole  []ora.Entry // the entries kept by reference, whole
	)
	firstStored, allStored := -1, true
	for i, e := range rows {
		if body, facts := splitFacts(e); len(facts) > 0 {
			put, err := d.putFactBodies(ctx, tx, facts)
			if err != nil {
				return ora.Committed{}, fmt.Errorf("[%d] %s %q: %w", i, e.Kind, e.Qualifier, err)
			}
			stored = append(stored, put...)
			whole = append(whole, e)
			e.Body = body
		}
		ok, err := insertEntryWith(ctx, ins, e)
		if err != nil {
			return ora.Committed{}, fmt.Errorf("[%d] %s %q: %w", i, e.Kind, e.Qualifier, err)
		}
		if ok {
			allStored = false
		} else if firstStored < 0 {
			firstStored = i
		}
	}
	states := make([]ora.DecisionState, len(s.Transitions))
	firstMoved, allAtTo := -1, true
	for i, t := range s.Transitions {
		st, err := scanDecision(tx.QueryRowContext(ctx, `UPDATE ledger_decisions
			SET status = ?, reason = ?, version = version + 1, updated_at = ?
			WHERE decision_id = ? AND status = ?
			RETURNING `+decisionColumns,
			string(t.To), t.Reason, formatTime(now), t.DecisionID, string(t.From)))
		if err == nil {
			states[i], allAtTo = st, false
			continue
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return ora.Committed{}, fmt.Errorf("transition decision %s: %w", t.DecisionID, translate(err))
		}
		cur, err := scanDecision(tx.QueryRowContext(ctx, `SELECT `+decisionColumns+` FROM ledger_decisions WHERE decision_id = ?`, t.DecisionID))
		if errors.Is(err, sql.ErrNoRows) {
			return ora.Committed{}, ora.Errorf(ora.ENOTFOUND, "decision %q not found", t.DecisionID)
		}
		if err != nil {
			return ora.Committed{}, fmt.Errorf("transition decision %s: %w", t.DecisionID, translate(err))
		}
		states[i] = cur
		if cur.Status != t.To {
			allAtTo = false
		}
		if firstMoved < 0 {
			firstMoved = i
		}
	}
	if firstStored < 0 && firstMoved < 0 {
		if d.beforeCommit != nil {
			if err := d.beforeCommit(s); err != nil {
				return ora.Committed{}, err
			}
		}
		if err := tx.Commit(); err != nil {
			return ora.Committed{}, fmt.Errorf("commit: %w", translate(err))
		}
		d.noteFactBodies(stored)
		for _, e := range whole {
			d.keepWhole(e.Digest, e.Body)
		}
		return ora.Committed{Entries: entries}, nil
	}
	// Read what is stored inside the transaction, then roll it back.
	if allStored && allAtTo {
		got := make([]ora.Entry, len(entries))
		for i, e := range entries {
			if got[i], err = d.storedEntry(ctx, tx, e); err != nil {
				return ora.Committed{}, err
			}
		}
		return ora.Committed{Entries: got, Replayed: true}, nil
	}
	if firstStored >= 0 {
		e := entries[firstStored]
		prev, err := d.storedEntry(ctx, tx, e)
		if err != nil {
			return ora.Committed{}, err
		}
		return ora.Committed{}, ora.Conflict(prev, "entry %d, %s/%s/%q, exists: nothing written", firstStored, e.SignalID, e.Kind, e.Qualifier)
	}
	t, cur := s.Transitions[firstMoved], states[firstMoved]
	return ora.Committed{}, ora.Conflict(cur, "decision %s is %s, not %s: nothing written", t.DecisionID, cur.Status, t.From)
}

// storedEntry reads the entry stored under e's identity in tx, its body
// resolved.
func (d *DB) storedEntry(ctx context.Context, tx *sql.Tx, e ora.Entry) (ora.Entry, error) {
	stored, err := scanEntry(tx.QueryRowContext(ctx, prepared[stmtEntry].query, e.SignalID, string(e.Kind), e.Qualifier))
	if err != nil {
		return ora.Entry{}, fmt.Errorf("read the stored entry %s/%s/%q: %w", e.SignalID, e.Kind, e.Qualifier, translate(err))
	}
	one := []ora.Entry{stored}
	if err := d.resolveFacts(ctx, one); err != nil {
		return ora.Entry{}, err
	}
	if err := d.loadBodies(ctx, one); err != nil {
		return ora.Entry{}, err
	}
	return one[0], nil
}
