package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/stepfn"
)

// benchBody is a realistic observed-fact body (~300 bytes).
var benchBody = json.RawMessage(`{"fact_id":"f-1","source_type":"github","source_ref":"issues/42","normalized":{"title":"Build fails on main","labels":["bug","ci"],"author":"octocat","comments":3},"utility_score":0.82,"estimated_tokens":120,"provenance":{"job":"recent-actions","fetched_at":"2026-03-14T09:26:53Z"}}`)

func reportOps(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkLedgerAppend measures one conditional entry write.
func BenchmarkLedgerAppend(b *testing.B) {
	db := openDB(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := ora.Entry{SignalID: fmt.Sprintf("sig-%d", i), Kind: ora.KindObservedFact, Qualifier: "job-1", Body: benchBody}
		if _, err := db.Append(ctx, e); err != nil {
			b.Fatalf("Append: %v", err)
		}
	}
	reportOps(b)
}

// BenchmarkLedgerAppendParallel measures conditional entry writes from
// concurrent goroutines (as concurrent handlers would).
func BenchmarkLedgerAppendParallel(b *testing.B) {
	db := openDB(b)
	ctx := context.Background()
	var n atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			e := ora.Entry{SignalID: fmt.Sprintf("sig-%d", n.Add(1)), Kind: ora.KindObservedFact, Body: benchBody}
			if _, err := db.Append(ctx, e); err != nil {
				b.Errorf("Append: %v", err)
				return
			}
		}
	})
	reportOps(b)
}

// BenchmarkTransitionDecision measures one conditional status update
// (decided -> executing); recording each decision is outside the timer.
func BenchmarkTransitionDecision(b *testing.B) {
	db := openDB(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		d := benchDecision(i)
		if _, err := db.RecordDecision(ctx, d); err != nil {
			b.Fatalf("RecordDecision: %v", err)
		}
		b.StartTimer()
		if _, err := db.TransitionDecision(ctx, d.ID, ora.StatusDecided, ora.StatusExecuting, "bench"); err != nil {
			b.Fatalf("TransitionDecision: %v", err)
		}
	}
	reportOps(b)
}

// BenchmarkDebounce measures one debounce check on a fresh key.
func BenchmarkDebounce(b *testing.B) {
	db := openDB(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.Debounce(ctx, fmt.Sprintf("key-%d", i), ora.DebounceWindow); err != nil {
			b.Fatalf("Debounce: %v", err)
		}
	}
	reportOps(b)
}

func benchDecision(i int) ora.ReasonerDecision {
	return ora.ReasonerDecision{
		ID: fmt.Sprintf("dec-%d", i), SignalID: fmt.Sprintf("sig-%d", i), ActionType: "comment",
		Parameters: json.RawMessage(`{"text":"on it"}`), Confidence: 0.9, Reasoning: "rule matched",
		AuthorType: ora.AuthorArchitect, Scope: ora.Scope{AllowedOperations: []string{"comment"}},
		Tier: 1, Timestamp: time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC),
	}
}

// BenchmarkMapOnExecutionStore runs a Map of ORA_BENCH_MAP_ITEMS iterations
// (default 1,000) of one Task each on the SQLite execution store, the store
// `ora dev` checkpoints every event in: the cost per iteration stays flat as
// the Map grows when only the iterations that changed are written.
func BenchmarkMapOnExecutionStore(b *testing.B) {
	ctx := context.Background()
	items := 1000
	if v, err := strconv.Atoi(os.Getenv("ORA_BENCH_MAP_ITEMS")); err == nil && v > 0 {
		items = v
	}
	e := stepfn.NewEngine(func(o *stepfn.Options) { o.Store = NewExecutionStore(openDB(b)) })
	defer e.Close()
	e.RegisterHandler("job", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) {
		return []byte(`{"ok":true,"detail":"a result of some forty bytes"}`), nil
	}))
	sm, err := e.CreateStateMachine("map", []byte(`{"StartAt":"M","States":{"M":{"Type":"Map","MaxConcurrency":8,"End":true,
		"ItemProcessor":{"StartAt":"J","States":{"J":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:job","End":true}}}}}}`))
	if err != nil {
		b.Fatal(err)
	}
	in := make([]int, items)
	for i := range in {
		in[i] = i
	}
	input, _ := json.Marshal(in)
	b.ResetTimer()
	for i := range b.N {
		arn, err := e.StartExecution(ctx, sm, fmt.Sprintf("m-%d", i), input)
		if err != nil {
			b.Fatal(err)
		}
		if x, err := e.Wait(ctx, arn); err != nil || x.Status != stepfn.StatusSucceeded {
			b.Fatalf("%v %+v", err, x)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*items), "µs/iteration")
}
