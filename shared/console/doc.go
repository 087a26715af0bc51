// Package console is the local console `ora dev` serves at /console: the
// waves, each wave's state machine graph coloured by status beside its ledger
// entries, the approvals waiting for a human, and the key metrics. Pages are
// server-rendered from html/template files embedded in the binary; links and
// forms work without JavaScript, and a little script refreshes lists.
//
// It reads through the same interfaces the HTTP API uses (the ledger's read
// calls, the waves, the verdicts) and never writes a store itself.
package console
