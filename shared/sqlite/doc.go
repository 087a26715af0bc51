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
//     Recent. AppendNew writes a batch (a fetch job's facts) in one
//     transaction, each row as conditionally as Append does.
//   - ledger_decisions: a decision's status record. RecordDecision inserts it
//     and the decision's entry in one transaction; TransitionDecision is an
//     UPDATE ... WHERE status = the expected old status.
//   - ledger_commitments: commitments, with a partial index on the open ones.
//   - debounce: key and expires_at (Unix nanoseconds). One upsert takes a key
//     that is new or whose window has ended (expires_at < now).
//   - fact_bodies: facts' normalized bodies, once each under their sha256;
//     observed-fact and orientation-packet rows refer to them (factrefs.go).
//   - ledger_expired: the digest of each orientation packet removed at its
//     expiry, for ora.ExpiryReader.
//
// A DB holds two pools on the file, in WAL mode with synchronous=NORMAL (a
// committed transaction survives a crash of the process). Every write goes
// through one connection, so this process's writers queue in Go for it instead
// of polling SQLite's lock (whose busy back-off sleeps up to 100 ms a try);
// reads go through read-only connections that run beside the writer and see
// every transaction committed before they start. Write transactions take the
// lock at BEGIN (IMMEDIATE); a writer of another process sharing the file
// waits up to BusyTimeout, after which the database is ETRANSIENT. The
// statements every wave runs are prepared once.
//
// The execution store keeps each state machine definition once, in
// stepfn_definitions under its sha256, and the execution's row refers to it,
// so saving an execution (once per history event) rewrites a small row.
// SQLite has no TTL: Sweep deletes what has expired (entries, fact bodies,
// debounce and idempotency records, finished executions) in bounded batches,
// returns the space to the file system on files created with incremental
// vacuum, and truncates a grown WAL; ora dev runs it beside the waves.
package sqlite
