// Package ora holds the domain of the Observer-Reasoner-Actor runtime: the
// signals observers normalize, the decisions reasoners make, the results actors
// and validators produce, the ledger entries that record a wave, the error kinds
// every layer speaks, and the small interfaces the services need.
//
// The package imports nothing from AWS (a test enforces it): adapters such as
// shared/sqlite and shared/dynamo implement its interfaces, and services depend
// on those interfaces only.
package ora
