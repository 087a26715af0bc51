package embedded

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
)

// TestDiagnosticModeAfterACriticalIncident: a wave that fails at Act pauses
// with an open incident the operator classifies motor (critical); the next
// wave's kernel is not green, so it runs in diagnostic mode: the model is
// asked only for GuardFailureInterpreter, SafeOPSDecision is recorded
// BLOCKED in the decision's trace, and the decision is none with the
// diagnosis; the wave completes. It runs on both ledgers: SQLite, and
// DynamoDB Local (the AWS home's store, read by the same kernel).
func TestDiagnosticModeAfterACriticalIncident(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	for _, store := range []string{"sqlite", "dynamodb"} {
		t.Run(store, func(t *testing.T) { diagnosticMode(t, store) })
	}
}

func diagnosticMode(t *testing.T, store string) {
	ctx := context.Background()
	diagnosis := bedrocktest.Tool(reason.ObservationTool, map[string]any{
		"content": "waves fail at Act under this motor", "layers": []string{"SIGNAL"}, "confidence": 0.9,
		"decision": map[string]any{"root_cause": "the act stage fails under the current motor", "remediation_plan": "resume the paused wave after fixing the motor", "is_transient": false},
	})
	fake := bedrocktest.NewFunc(t, func(q bedrocktest.Request) bedrocktest.Reply {
		if strings.Contains(*q.Messages[0].Content[0].Text, "PROGRAM: "+string(ora.ProgramGuardFailureInterpreter)) {
			return diagnosis
		}
		return observation(0.97, act.TypeNone, map[string]any{"reason": "a heartbeat"})
	})
	cfg := testConfig(t, t.TempDir())
	cfg.Reasoner.Kind, cfg.Reasoner.BedrockEndpoint, cfg.Reasoner.Region = "bedrock", fake.URL, "us-east-1"
	cfg.Reasoner.Bedrock.Batch.Window = 0
	cfg.Faults = []FaultConfig{{State: "Act", Error: "InternalError", Cause: "drill", Times: 1}}
	if store == "dynamodb" {
		cfg.Store.Kind = "dynamodb"
		cfg.Store.DynamoDB.Endpoint = dynamotest.Endpoint(t)
		cfg.Store.DynamoDB.Table = dynamotest.TableName("diag")
		cfg.Store.DynamoDB.IdempotencyTable = dynamotest.TableName("diag-idem")
		cfg.Store.DynamoDB.CreateTables = true
	}
	r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()

	first := send(t, r, srv.URL, "diag-first", `{"status":"ok"}`)
	st := waitOperator(t, r, first.WaveID, operate.StatePaused)
	inc, err := r.ops.Incident(ctx, st.IncidentID)
	if err != nil || !reason.CriticalIncident(inc) {
		t.Fatalf("incident %+v (%v): want an open critical one", inc, err)
	}
	if d := decisionOf(t, r, first.SignalID); d.Model == nil || d.Model.Mode != reason.ModePipeline || d.Model.Program != ora.ProgramSafeOPSDecision {
		t.Fatalf("first decision's trace %+v: want SafeOPSDecision in pipeline mode", d.Model)
	}
	before := len(fake.Requests())

	second := send(t, r, srv.URL, "diag-second", `{"status":"ok"}`)
	w, err := waves{r}.Wave(ctx, second.WaveID)
	for deadline := time.Now().Add(30 * time.Second); err == nil && w.Status == "RUNNING" && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		w, err = waves{r}.Wave(ctx, second.WaveID)
	}
	if err != nil || w.Status != "SUCCEEDED" {
		t.Fatalf("second wave: %+v, %v", w, err)
	}
	d := decisionOf(t, r, second.SignalID)
	if d.ActionType != act.TypeNone || d.Model == nil || d.Model.Mode != reason.ModeDiagnostic || d.Model.Program != ora.ProgramGuardFailureInterpreter ||
		!slices.Equal(d.Model.BlockedPrograms, []ora.ProgramID{ora.ProgramSafeOPSDecision}) {
		t.Fatalf("second decision %s, trace %+v: want none by GuardFailureInterpreter in diagnostic mode, SafeOPSDecision blocked", d.ActionType, d.Model)
	}
	if !strings.Contains(string(d.Parameters), st.IncidentID) || !strings.Contains(string(d.Parameters), "the act stage fails") {
		t.Errorf("parameters %s do not name the incident and the diagnosis", d.Parameters)
	}
	for _, q := range fake.Requests()[before:] {
		if p := *q.Messages[0].Content[0].Text; !strings.Contains(p, "PROGRAM: "+string(ora.ProgramGuardFailureInterpreter)) {
			t.Errorf("a diagnostic-mode call ran another program: %.80s", p)
		}
	}
}

// decisionOf returns the signal's recorded decision.
func decisionOf(t *testing.T, r *Runtime, signalID string) ora.ReasonerDecision {
	t.Helper()
	entries, err := r.ledger.Entries(context.Background(), signalID)
	if err != nil {
		t.Fatal(err)
	}
	var d ora.ReasonerDecision
	for _, e := range entries {
		if e.Kind == ora.KindReasonerDecision {
			_ = json.Unmarshal(e.Body, &d)
		}
	}
	return d
}
