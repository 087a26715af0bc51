// Package sqlite implements ora's stores on SQLite through a pure-Go driver
// (modernc.org/sqlite, no cgo): the ledger, debounce, idempotency records and
// the local Step Functions engine's executions. It is the embedded runtime's
// default store.
package sqlite
