// Package sqlite implements ora's stores on SQLite through a pure-Go driver
// (modernc.org/sqlite, no cgo): the ledger, debounce, idempotency records and
// the local Step Functions engine's executions. It is the embedded runtime's
// default store.
//
// *DB implements ora.Ledger and ora.Debouncer with the same contract as the
// DynamoDB adapter (shared/ledgertest runs against both):
//
//   - ledger_entries: one row per (signal_id, kind, qualifier), the primary
//     key, written with INSERT ... ON CONFLICT DO NOTHING; a write that finds
//     the row returns ECONFLICT carrying the stored ora.Entry. The body is a
//     BLOB kept byte for byte. created_at and expires_at are fixed-width UTC
//     text, so they sort as instants; an index on (kind, created_at) serves
//     Recent.
//   - ledger_decisions: a decision's status record. RecordDecision inserts it
//     and the decision's entry in one transaction; TransitionDecision is an
//     UPDATE ... WHERE status = the expected old status.
//   - ledger_commitments: commitments, with a partial index on the open ones.
//   - debounce: key and expires_at (Unix nanoseconds). One upsert takes a key
//     that is new or whose window has ended (expires_at < now).
//
// Writes take the lock at BEGIN (IMMEDIATE) and wait up to BusyTimeout, so
// concurrent writers queue; a database still busy after that is ETRANSIENT.
// SQLite has no TTL: expires_at is kept for the record, and debounce checks it
// in the statement.
package sqlite
