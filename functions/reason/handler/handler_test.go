package handler

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/rules"
	"github.com/ora-runtime/ora/shared/sqlite"
)

var at = time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)

// reasonerFunc is a hand-written fake reasoner.
type reasonerFunc func(ctx context.Context, in ora.ReasonerInput) (ora.ReasonerDecision, error)

func (f reasonerFunc) Reason(ctx context.Context, in ora.ReasonerInput) (ora.ReasonerDecision, error) {
	return f(ctx, in)
}

func openLedger(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// oriented stores a test-source signal with the given payload and compiles
// its packet, as Plan, Fetch and Compile would.
func oriented(t *testing.T, db *sqlite.DB, id, payload string) {
	t.Helper()
	ctx := context.Background()
	sig := ora.NormalizedSignal{
		ID: id, Source: ora.Source{Type: ora.SourceWebhook, Name: "test", Provider: "hmac"},
		Timestamp: at, NormalizedAt: at, Payload: json.RawMessage(payload), DedupKey: "d-" + id, RawDigest: ora.Digest([]byte(payload)),
	}
	e, err := ora.NewEntry(id, ora.KindSignalReceived, "", sig)
	if err != nil {
		t.Fatal(err)
	}
	e.CreatedAt = at
	if _, err := db.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := orient.NewCompiler(db).Compile(ctx, id); err != nil {
		t.Fatal(err)
	}
}

func invoke(t *testing.T, h Handler, payload string) (Output, error) {
	t.Helper()
	out, err := lambda.NewHandler(h.Handle).Invoke(context.Background(), []byte(payload))
	if err != nil {
		return Output{}, err
	}
	var got Output
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("output %s: %v", out, err)
	}
	return got, nil
}

func decisions(t *testing.T, db *sqlite.DB, id string) []ora.Entry {
	t.Helper()
	entries, err := db.Entries(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []ora.Entry
	for _, e := range entries {
		if e.Kind == ora.KindReasonerDecision {
			out = append(out, e)
		}
	}
	return out
}

func TestHandleWithTheDefaultRules(t *testing.T) {
	set, err := rules.Parse(defaultrules.Default)
	if err != nil {
		t.Fatal(err)
	}
	db := openLedger(t)
	h := Handler{Ledger: db, Reasoner: rules.New(set)}
	tests := []struct {
		confidence string
		want       Output
	}{
		{"high", Output{Confidence: 0.95, Band: "high", Tier: 1, ActionType: "notify"}},
		{"medium", Output{Confidence: 0.65, Band: "medium", Tier: 2, ActionType: "notify"}},
		{"low", Output{Confidence: 0.3, Band: "low", Tier: 3, ActionType: "commitment.open"}},
		{"fail", Output{Confidence: 0.95, Band: "high", Tier: 1, ActionType: "http.request"}},
	}
	for _, tt := range tests {
		t.Run(tt.confidence, func(t *testing.T) {
			id := "sig-" + tt.confidence
			oriented(t, db, id, `{"confidence":"`+tt.confidence+`"}`)
			got, err := invoke(t, h, `{"signal_id":"`+id+`","packet":{"packet_id":"x"},"escalation_timeout_seconds":86400}`)
			if err != nil {
				t.Fatal(err)
			}
			state, err := db.Decision(context.Background(), got.DecisionID)
			if err != nil {
				t.Fatalf("the decision's status record: %v", err)
			}
			tt.want.DecisionID = rules.DecisionID(id, set.Version())
			tt.want.Digest = state.Digest
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if state.Status != ora.StatusDecided {
				t.Errorf("status: got %s, want decided", state.Status)
			}
			again, err := invoke(t, h, `{"signal_id":"`+id+`"}`)
			if err != nil || again != got {
				t.Errorf("retry: got %+v, %v; want %+v", again, err, got)
			}
			if n := len(decisions(t, db, id)); n != 1 {
				t.Errorf("the wave holds %d decisions, want 1", n)
			}
		})
	}
}

func TestHandleRetries(t *testing.T) {
	decide := func(id string, confidence float64) ora.ReasonerDecision {
		return ora.ReasonerDecision{
			ID: id, SignalID: "sig-1", ActionType: "notify", Confidence: confidence, Reasoning: "r",
			AuthorType: ora.AuthorAuditor, Scope: ora.Scope{AllowedOperations: []string{"notify"}}, Tier: 1, Timestamp: at,
		}
	}
	t.Run("a retry returns the stored decision without asking again", func(t *testing.T) {
		db := openLedger(t)
		oriented(t, db, "sig-1", `{}`)
		calls := 0
		h := Handler{Ledger: db, Reasoner: reasonerFunc(func(context.Context, ora.ReasonerInput) (ora.ReasonerDecision, error) {
			calls++
			return decide("dec-"+string(rune('0'+calls)), 0.9), nil // a model might answer differently each time
		})}
		first, err := invoke(t, h, `{"signal_id":"sig-1"}`)
		if err != nil {
			t.Fatal(err)
		}
		second, err := invoke(t, h, `{"signal_id":"sig-1"}`)
		if err != nil || second != first || calls != 1 {
			t.Errorf("got %+v, %v after %d calls; want %+v after 1", second, err, calls, first)
		}
	})
	t.Run("a concurrent run that recorded first wins", func(t *testing.T) {
		db := openLedger(t)
		oriented(t, db, "sig-1", `{}`)
		h := Handler{Ledger: db, Reasoner: reasonerFunc(func(ctx context.Context, in ora.ReasonerInput) (ora.ReasonerDecision, error) {
			other := decide("dec-1", 0.6)
			if _, err := db.RecordDecision(ctx, other); err != nil { // the other run
				t.Fatal(err)
			}
			return decide("dec-1", 0.9), nil
		})}
		got, err := invoke(t, h, `{"signal_id":"sig-1"}`)
		if err != nil {
			t.Fatal(err)
		}
		if got.Confidence != 0.6 || got.Band != "medium" || got.DecisionID != "dec-1" {
			t.Errorf("got %+v, want the stored decision dec-1 at 0.6", got)
		}
	})
	t.Run("the reasoner sees the signal and the stored packet", func(t *testing.T) {
		db := openLedger(t)
		oriented(t, db, "sig-1", `{"k":1}`)
		want, err := orient.Input(context.Background(), db, "sig-1")
		if err != nil {
			t.Fatal(err)
		}
		h := Handler{Ledger: db, Reasoner: reasonerFunc(func(_ context.Context, in ora.ReasonerInput) (ora.ReasonerDecision, error) {
			if in.Packet.Digest != want.Packet.Digest || string(in.Signal.Payload) != `{"k":1}` {
				t.Errorf("input: packet %s payload %s; want %s {\"k\":1}", in.Packet.Digest, in.Signal.Payload, want.Packet.Digest)
			}
			return decide("dec-1", 0.9), nil
		})}
		if _, err := invoke(t, h, `{"signal_id":"sig-1"}`); err != nil {
			t.Fatal(err)
		}
	})
}

func TestHandleErrors(t *testing.T) {
	db := openLedger(t)
	oriented(t, db, "sig-1", `{}`)
	e, err := ora.NewEntry("no-packet", ora.KindSignalReceived, "", ora.NormalizedSignal{
		ID: "no-packet", Source: ora.Source{Type: ora.SourceWebhook, Provider: "hmac"}, Timestamp: at, NormalizedAt: at,
		Payload: json.RawMessage(`{}`), DedupKey: "d", RawDigest: ora.Digest([]byte(`{}`)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	fail := func(err error) ora.Reasoner {
		return reasonerFunc(func(context.Context, ora.ReasonerInput) (ora.ReasonerDecision, error) {
			return ora.ReasonerDecision{}, err
		})
	}
	ok := fail(nil)
	tests := []struct {
		name     string
		reasoner ora.Reasoner
		payload  string
		want     string
	}{
		{"missing signal id", ok, `{}`, "InvalidInput"},
		{"unknown signal", ok, `{"signal_id":"nope"}`, "NotFound"},
		{"no packet yet", ok, `{"signal_id":"no-packet"}`, "NotFound"},
		{"model throttled", fail(ora.Transient(nil, "throttled")), `{"signal_id":"sig-1"}`, "TransientError"},
		{"invalid decision", ok, `{"signal_id":"sig-1"}`, "InternalError"}, // the fake returns an empty decision for another signal
		{"reasoner bug", fail(ora.Errorf(ora.EINTERNAL, "boom")), `{"signal_id":"sig-1"}`, "InternalError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := invoke(t, Handler{Ledger: db, Reasoner: tt.reasoner}, tt.payload)
			if got := errorType(err); got != tt.want {
				t.Errorf("got %s (%v), want %s", got, err, tt.want)
			}
		})
	}
	if n := len(decisions(t, db, "sig-1")); n != 0 {
		t.Errorf("failed runs recorded %d decisions", n)
	}
}

// errorType is the name Step Functions sees for err (aws-lambda-go reports
// the element type's name for a pointer).
func errorType(err error) string {
	if err == nil {
		return "<nil>"
	}
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// TestOutputCarriesModelUsage: a model's decision reports its tokens and cost
// in the task's result, where telemetry counts them; a rules decision has none.
func TestOutputCarriesModelUsage(t *testing.T) {
	tests := []struct {
		name  string
		model *ora.ModelTrace
		want  [3]float64
	}{
		{"rules", nil, [3]float64{}},
		{"model", &ora.ModelTrace{ModelID: "m", Usage: ora.Usage{InputTokens: 1200, OutputTokens: 80}, CostUSD: 0.0021}, [3]float64{1200, 80, 0.0021}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openLedger(t)
			oriented(t, db, "sig-1", `{}`)
			h := Handler{Ledger: db, Reasoner: reasonerFunc(func(context.Context, ora.ReasonerInput) (ora.ReasonerDecision, error) {
				return ora.ReasonerDecision{
					ID: "dec-1", SignalID: "sig-1", ActionType: "notify", Confidence: 0.9, Reasoning: "r",
					AuthorType: ora.AuthorAuditor, Scope: ora.Scope{AllowedOperations: []string{"notify"}}, Tier: 1, Timestamp: at, Model: tt.model,
				}, nil
			})}
			got, err := invoke(t, h, `{"signal_id":"sig-1"}`)
			if err != nil {
				t.Fatal(err)
			}
			if g := [3]float64{float64(got.InputTokens), float64(got.OutputTokens), got.CostUSD}; g != tt.want {
				t.Errorf("usage %v, want %v", g, tt.want)
			}
		})
	}
}

// TestLowBandIsRecordedAsArchitect: whoever proposed it, a decision in the
// low band is recorded as the architect's (intent, which the actor runs only
// once approved); a decision above it keeps its author.
func TestLowBandIsRecordedAsArchitect(t *testing.T) {
	tests := []struct {
		name       string
		confidence float64
		author     ora.AuthorType
		want       ora.AuthorType
	}{
		{"low auditor becomes architect", 0.3, ora.AuthorAuditor, ora.AuthorArchitect},
		{"low architect stays", 0.3, ora.AuthorArchitect, ora.AuthorArchitect},
		{"medium auditor stays", 0.6, ora.AuthorAuditor, ora.AuthorAuditor},
		{"high architect stays", 0.9, ora.AuthorArchitect, ora.AuthorArchitect},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openLedger(t)
			oriented(t, db, "sig-1", `{}`)
			h := Handler{Ledger: db, Reasoner: reasonerFunc(func(context.Context, ora.ReasonerInput) (ora.ReasonerDecision, error) {
				return ora.ReasonerDecision{
					ID: "dec-1", SignalID: "sig-1", ActionType: "notify", Confidence: tt.confidence, Reasoning: "r",
					AuthorType: tt.author, Scope: ora.Scope{AllowedOperations: []string{"notify"}}, Tier: 1, Timestamp: at,
				}, nil
			})}
			if _, err := invoke(t, h, `{"signal_id":"sig-1"}`); err != nil {
				t.Fatal(err)
			}
			var d ora.ReasonerDecision
			_ = json.Unmarshal(decisions(t, db, "sig-1")[0].Body, &d)
			if d.AuthorType != tt.want {
				t.Errorf("recorded as %s, want %s", d.AuthorType, tt.want)
			}
			if relabelled := tt.author != tt.want; relabelled != (len(d.Reasoning) > 1 && d.Reasoning != "r") {
				t.Errorf("reasoning %q: the relabel is said exactly when it happens", d.Reasoning)
			}
		})
	}
}
