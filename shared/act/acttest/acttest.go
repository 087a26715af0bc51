// Package acttest helps tests of the actor and the stages around it (validate,
// review, operate): a real SQLite ledger in a temporary folder, decisions
// recorded in it, and an actor over the standard actions.
package acttest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/idempotency"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/sqlite"
)

// DB opens a SQLite ledger in tb's temporary folder, closed at cleanup.
func DB(tb testing.TB) *sqlite.DB {
	tb.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "ora.db"))
	if err != nil {
		tb.Fatalf("open sqlite: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// Once returns an act.Once over db's idempotency records.
func Once(db *sqlite.DB) act.Once {
	return act.Idempotent(idempotency.New(sqlite.NewIdempotencyStore(db)))
}

// Store is a ledger with its idempotency records, as a test opens it.
type Store struct {
	Name   string
	Ledger ora.Ledger
	Once   act.Once
}

// Stores lists the ledgers the actor's contract tests run against: SQLite, and
// DynamoDB Local (skipped when it is missing, except under CI=true).
var Stores = []struct {
	Name string
	Open func(tb testing.TB) Store
}{
	{"sqlite", func(tb testing.TB) Store {
		db := DB(tb)
		return Store{Name: "sqlite", Ledger: db, Once: Once(db)}
	}},
	{"dynamodb", Dynamo},
}

// Dynamo creates a ledger table and an idempotency table on DynamoDB Local.
func Dynamo(tb testing.TB) Store {
	tb.Helper()
	client := dynamotest.Client(tb)
	ctx := context.Background()
	ledger, idem := dynamotest.TableName("act-ledger"), dynamotest.TableName("act-idem")
	if err := dynamo.CreateLedgerTable(ctx, client, ledger); err != nil {
		tb.Fatalf("create ledger table: %v", err)
	}
	if err := dynamo.CreateIdempotencyTable(ctx, client, idem); err != nil {
		tb.Fatalf("create idempotency table: %v", err)
	}
	once := act.Idempotent(idempotency.New(dynamo.NewIdempotencyStore(client, idem)))
	return Store{Name: "dynamodb", Ledger: dynamo.New(client, ledger), Once: once}
}

// Params encodes v as action parameters, failing tb when it cannot.
func Params(tb testing.TB, v any) json.RawMessage {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("encode params: %v", err)
	}
	return b
}

// Decision returns a valid tier-3 decision of signalID running actions within
// scope.
func Decision(id, signalID string, scope ora.Scope, actions ...ora.Action) ora.ReasonerDecision {
	d := ora.ReasonerDecision{
		ID: id, SignalID: signalID, Confidence: 0.9, Reasoning: "test",
		AuthorType: ora.AuthorArchitect, Scope: scope, Tier: 3,
		Timestamp: time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC),
	}
	if len(actions) > 0 {
		d.ActionType, d.Parameters = actions[0].Type, actions[0].Parameters
		if len(actions) > 1 {
			d.Actions = actions
		}
	}
	return d
}

// Record records d in l at decided, failing tb on error.
func Record(tb testing.TB, l ora.Ledger, d ora.ReasonerDecision) ora.Entry {
	tb.Helper()
	e, err := l.RecordDecision(context.Background(), d)
	if err != nil {
		tb.Fatalf("record decision: %v", err)
	}
	return e
}

// Status returns the decision's status, failing tb on error.
func Status(tb testing.TB, l ora.Ledger, decisionID string) ora.DecisionStatus {
	tb.Helper()
	st, err := l.Decision(context.Background(), decisionID)
	if err != nil {
		tb.Fatalf("read decision: %v", err)
	}
	return st.Status
}
