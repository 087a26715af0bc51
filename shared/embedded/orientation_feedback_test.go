package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// syncMetrics counts orientation metrics from several goroutines.
type syncMetrics struct {
	mu   sync.Mutex
	adds map[string]float64
}

func (m *syncMetrics) Add(name string, d float64, labels ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.adds[name+fmt.Sprint(labels)] += d
}
func (m *syncMetrics) Observe(string, float64, ...string) {}
func (m *syncMetrics) get(name string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.adds[name]
}

// Feedback closes the loop in both stores: a human's rejection records a
// regret by itself, feedback submitted over the API is recorded (and
// refused, naming the field, when malformed), decision_regret_total counts
// both, and a wave's packet is verified over the API (its bodies read back
// from the object folder on DynamoDB Local).
func TestOrientationFeedbackAndVerify(t *testing.T) {
	for _, store := range []string{"sqlite", "dynamodb"} {
		t.Run(store, func(t *testing.T) {
			ctx := context.Background()
			cfg := testConfig(t, t.TempDir())
			if store == "dynamodb" {
				onDynamoDBLocal(t, &cfg, "feedback")
			}
			cfg.Tokens = []httpapi.Token{
				{Token: "reader-token-0000", Subject: "reader", Scopes: []string{httpapi.ScopeOrientationRead}},
				{Token: "agent-token-00000", Subject: "agent", Scopes: []string{httpapi.ScopeOrientationPropose, httpapi.ScopeOrientationRead}},
			}
			m := &syncMetrics{adds: map[string]float64{}}
			puts := &countingBodies{}
			r, err := New(ctx, cfg, func(o *Options) {
				o.Logger, o.OrientationMetrics = discard(), m
				o.WrapBodies = func(b ora.BodyStore) ora.BodyStore { puts.BodyStore = b; return puts }
				// Offload every body over 512 bytes (4 KB as stored by default), so the
				// packet and its facts are read back from the object folder.
				o.DynamoDBLedger = func(d *dynamo.Options) { d.OffloadAbove = 512 }
			})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(r.Handler())
			t.Cleanup(func() { srv.Close(); _ = r.Close() })

			// A low-confidence wave waits for a human, who rejects it.
			low := send(t, r, srv.URL, "fb-low-"+store, `{"confidence":"low"}`)
			decision := waitIntent(t, r, low.WaveID)
			if _, err := r.reviews().Reject(ctx, decision, "ada", "wrong repository"); err != nil {
				t.Fatal(err)
			}
			regret := waitFeedback(t, srv, low.WaveID, func(f ora.Feedback) bool { return f.Source == "human" && f.DecisionRegret })
			if !strings.Contains(regret.OperatorFeedback, "wrong repository") || regret.PacketID == "" {
				t.Errorf("human regret %+v, want the reason and the wave's packet", regret)
			}

			// A high-confidence wave completes; feedback on it over the API.
			high := send(t, r, srv.URL, "fb-high-"+store, `{"confidence":"high"}`)
			waitFeedback(t, srv, high.WaveID, func(f ora.Feedback) bool { return f.Source == "validator" })
			bad := []struct{ body, field string }{
				{`{"feedback_id":"q1","decision_quality_score":1.5}`, "decision_quality_score"},
				{`{"decision_regret":true}`, "feedback_id"},
				{`{"feedback_id":"q1","grade":"A"}`, "grade"},
			}
			for _, b := range bad {
				code, out := call(t, srv, "POST", "/api/orientation/feedback/"+high.WaveID, "agent-token-00000", json.RawMessage(b.body))
				if code != http.StatusBadRequest || !strings.Contains(string(out), b.field) {
					t.Errorf("feedback %s: %d %s, want 400 naming %s", b.body, code, out, b.field)
				}
			}
			for range 2 { // a repeat is harmless and counts once
				code, out := call(t, srv, "POST", "/api/orientation/feedback/"+high.WaveID, "agent-token-00000",
					map[string]any{"feedback_id": "q1", "decision_quality_score": 0.2, "decision_regret": true, "operator_feedback": "labelled the wrong team"})
				if code != http.StatusOK || !strings.Contains(string(out), `"by":"agent"`) {
					t.Fatalf("feedback: %d %s", code, out)
				}
			}
			if got := m.get(orient.MetricDecisionRegret + "[]"); got != 2 {
				t.Errorf("decision_regret_total %v, want 2 (the human's rejection and the API's feedback)", got)
			}

			// Verification replays the packet and records it.
			code, out := call(t, srv, "POST", "/api/orientation/packets/"+high.WaveID+"/verify", "reader-token-0000", nil)
			var v orient.Verification
			if err := json.Unmarshal(out, &v); code != http.StatusOK || err != nil || !v.Match || v.StoredDigest == "" {
				t.Fatalf("verify: %d %s", code, out)
			}
			es, _ := r.ledger.Entries(ctx, high.WaveID)
			verified := 0
			for _, e := range es {
				if e.Kind == ora.KindOrientationAudit && strings.HasPrefix(e.Qualifier, ora.AuditPacketReplayVerified) {
					verified++
				}
			}
			if verified != 1 {
				t.Errorf("%d replay_verified audit entries, want 1", verified)
			}
			if n := puts.n.Load(); store == "dynamodb" && n == 0 {
				t.Errorf("no body went to the object folder: the packets were not offloaded as on AWS")
			}
		})
	}
}

// countingBodies counts the bodies written through it.
type countingBodies struct {
	ora.BodyStore
	n atomic.Int64
}

func (c *countingBodies) PutBody(ctx context.Context, key string, body []byte) error {
	c.n.Add(1)
	return c.BodyStore.PutBody(ctx, key, body)
}

// waitFeedback waits for a wave's feedback record that ok accepts.
func waitFeedback(t *testing.T, srv *httptest.Server, waveID string, ok func(ora.Feedback) bool) ora.Feedback {
	t.Helper()
	var last []byte
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_, b := call(t, srv, "GET", "/api/orientation/feedback/"+waveID, "reader-token-0000", nil)
		last = b
		var out struct{ Feedback []ora.Feedback }
		_ = json.Unmarshal(b, &out)
		for _, f := range out.Feedback {
			if ok(f) {
				return f
			}
		}
	}
	t.Fatalf("no such feedback for %s: %s", waveID, last)
	return ora.Feedback{}
}
