package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
)

// runSuite runs every end-to-end scenario against one target, over HTTP only.
func runSuite(t *testing.T, tg target) {
	if !tg.deployed { // a deployed stack routes no /healthz
		t.Run("health", func(t *testing.T) {
			if r := tg.do(t, http.MethodGet, "/healthz", nil, nil); r.status != http.StatusOK {
				t.Fatalf("GET /healthz: %d %s", r.status, r.body)
			}
		})
		t.Run("metrics move after a wave", func(t *testing.T) { metricsMove(t, tg) }) // ora dev's GET /metrics
	}

	t.Run("orientation routes need their scopes", func(t *testing.T) {
		// The approver token holds ora.approve and orientation.read, not
		// orientation.propose nor orientation.approve.
		reads := []string{"/api/orientation/profile/current", "/api/orientation/packets/none", "/api/orientation/feedback/none"}
		writes := []string{"/api/orientation/proposals", "/api/orientation/proposals/none/approve", "/api/orientation/proposals/none/reject"}
		for _, p := range append(append([]string{}, reads...), writes...) {
			method := http.MethodGet
			if strings.HasPrefix(p, "/api/orientation/proposals") {
				method = http.MethodPost
			}
			if r := tg.do(t, method, p, nil, []byte(`{}`)); r.status != http.StatusUnauthorized {
				t.Errorf("%s %s without a token: %d, want 401", method, p, r.status)
			}
			if method == http.MethodPost {
				if r := tg.do(t, method, p, tg.authed(), []byte(`{}`)); r.status != http.StatusForbidden {
					t.Errorf("%s %s without its scope: %d, want 403", method, p, r.status)
				}
			}
		}
		if r := tg.do(t, http.MethodGet, reads[0], tg.authed(), nil); r.status != http.StatusOK || !strings.Contains(string(r.body), `"profile_id"`) {
			t.Errorf("GET %s with orientation.read: %d %s, want 200 and the profile", reads[0], r.status, r.body)
		}
		if r := tg.do(t, http.MethodGet, reads[1], tg.authed(), nil); r.status != http.StatusNotFound {
			t.Errorf("GET %s with orientation.read: %d, want 404", reads[1], r.status)
		}
	})

	t.Run("high confidence executes and validates", func(t *testing.T) {
		r := tg.send(t, unique("high"), map[string]any{"confidence": "high"})
		if r.status != http.StatusAccepted {
			t.Fatalf("webhook: %d %s", r.status, r.body)
		}
		var rec receipt
		r.decode(t, &rec)
		if rec.SignalID == "" || rec.WaveID == "" || rec.Duplicate {
			t.Fatalf("receipt %+v", rec)
		}
		w := tg.waitWave(t, rec.WaveID, stopped)
		if w.Status != "SUCCEEDED" {
			t.Fatalf("wave %+v, want SUCCEEDED", w)
		}
		got := kinds(tg.entries(t, rec.SignalID))
		mustContain(t, got, "signal-received", "orientation-packet", "reasoner-decision", "execution-evidence",
			"validator-result", "witness-result", "final-verdict")
		mustNotContain(t, got, "review-requested", "architect-intent", "operator-decision")
	})

	t.Run("medium confidence executes and requests review", func(t *testing.T) {
		r := tg.send(t, unique("medium"), map[string]any{"confidence": "medium"})
		var rec receipt
		r.decode(t, &rec)
		if w := tg.waitWave(t, rec.WaveID, stopped); w.Status != "SUCCEEDED" {
			t.Fatalf("wave %+v, want SUCCEEDED", w)
		}
		got := kinds(tg.entries(t, rec.SignalID))
		mustContain(t, got, "review-requested", "execution-evidence", "final-verdict")
		if got["validator-result"] < 2 {
			t.Errorf("tier 2 wants technical and safety validators; kinds %v", got)
		}
	})

	t.Run("low confidence waits for approval then executes once", func(t *testing.T) {
		r := tg.send(t, unique("low"), map[string]any{"confidence": "low"})
		var rec receipt
		r.decode(t, &rec)
		tg.waitEntry(t, rec.SignalID, "architect-intent")
		es := tg.entries(t, rec.SignalID)
		mustNotContain(t, kinds(es), "execution-evidence")
		id := decisionID(t, es)

		// Without a token, or with one lacking the scope, nothing is settled.
		if r := tg.do(t, http.MethodPost, "/decisions/"+id+"/approve", nil, []byte(`{}`)); r.status != http.StatusUnauthorized {
			t.Errorf("approve without a token: %d, want 401", r.status)
		}
		if tg.readerToken != "" {
			h := http.Header{"Authorization": {"Bearer " + tg.readerToken}}
			if r := tg.do(t, http.MethodPost, "/decisions/"+id+"/approve", h, []byte(`{}`)); r.status != http.StatusForbidden {
				t.Errorf("approve with a token lacking ora.approve: %d, want 403", r.status)
			}
		}
		ok := tg.do(t, http.MethodPost, "/decisions/"+id+"/approve", tg.authed(), []byte(`{"reason":"looks right"}`))
		if ok.status != http.StatusOK {
			t.Fatalf("approve: %d %s", ok.status, ok.body)
		}
		if w := tg.waitWave(t, rec.WaveID, stopped); w.Status != "SUCCEEDED" {
			t.Fatalf("wave %+v, want SUCCEEDED", w)
		}
		got := kinds(tg.entries(t, rec.SignalID))
		mustContain(t, got, "human-verdict", "execution-evidence", "final-verdict")
		if got["execution-evidence"] != 1 {
			t.Errorf("execution-evidence entries: %d, want exactly 1", got["execution-evidence"])
		}
		again := tg.do(t, http.MethodPost, "/decisions/"+id+"/approve", tg.authed(), []byte(`{}`))
		if again.status != http.StatusConflict {
			t.Errorf("second approval: %d %s, want 409", again.status, again.body)
		}
		if r := tg.do(t, http.MethodPost, "/decisions/no-such-decision/approve", tg.authed(), []byte(`{}`)); r.status != http.StatusNotFound {
			t.Errorf("approving an unknown decision: %d, want 404", r.status)
		}
	})

	t.Run("rejected decision never executes", func(t *testing.T) {
		r := tg.send(t, unique("reject"), map[string]any{"confidence": "low"})
		var rec receipt
		r.decode(t, &rec)
		tg.waitEntry(t, rec.SignalID, "architect-intent")
		id := decisionID(t, tg.entries(t, rec.SignalID))
		if r := tg.do(t, http.MethodPost, "/decisions/"+id+"/reject", tg.authed(), []byte(`{"reason":"not now"}`)); r.status != http.StatusOK {
			t.Fatalf("reject: %d %s", r.status, r.body)
		}
		if w := tg.waitWave(t, rec.WaveID, stopped); w.Status != "SUCCEEDED" {
			t.Fatalf("wave %+v, want SUCCEEDED (ended as rejected)", w)
		}
		got := kinds(tg.entries(t, rec.SignalID))
		mustContain(t, got, "human-verdict", "final-verdict")
		mustNotContain(t, got, "execution-evidence")
		if r := tg.do(t, http.MethodPost, "/decisions/"+id+"/approve", tg.authed(), []byte(`{}`)); r.status != http.StatusConflict {
			t.Errorf("approving a rejected decision: %d, want 409", r.status)
		}
	})

	t.Run("redelivery gets the same ids and no second wave", func(t *testing.T) {
		delivery := unique("redeliver")
		first := tg.send(t, delivery, map[string]any{"confidence": "high"})
		if first.status != http.StatusAccepted {
			t.Fatalf("first delivery: %d %s", first.status, first.body)
		}
		var a, b receipt
		first.decode(t, &a)
		second := tg.send(t, delivery, map[string]any{"confidence": "high"})
		if second.status != http.StatusOK {
			t.Fatalf("redelivery: %d %s, want 200", second.status, second.body)
		}
		second.decode(t, &b)
		if !b.Duplicate || b.SignalID != a.SignalID || b.WaveID != a.WaveID {
			t.Fatalf("redelivery receipt %+v, want the first's ids %+v with duplicate", b, a)
		}
		tg.waitWave(t, a.WaveID, stopped)
		if got := kinds(tg.entries(t, a.SignalID)); got["signal-received"] != 1 || got["reasoner-decision"] != 1 {
			t.Errorf("one delivery, two waves? kinds %v", got)
		}
	})

	t.Run("200 concurrent duplicates start exactly one wave", func(t *testing.T) {
		delivery := unique("storm")
		body, _ := json.Marshal(map[string]any{"confidence": "high"})
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			accepted int
			ids      = map[string]bool{}
		)
		for i := 0; i < 200; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h, _ := observe.SignDelivery(tg.source, body, time.Now(), delivery)
				r := tg.do(t, http.MethodPost, "/webhooks/"+tg.source.Name, h, body)
				var rec receipt
				_ = json.Unmarshal(r.body, &rec)
				mu.Lock()
				defer mu.Unlock()
				switch r.status {
				case http.StatusAccepted:
					accepted++
				case http.StatusOK:
				default:
					t.Errorf("delivery: %d %s", r.status, r.body)
				}
				ids[rec.SignalID+"/"+rec.WaveID] = true
			}()
		}
		wg.Wait()
		if accepted != 1 || len(ids) != 1 {
			t.Fatalf("%d deliveries accepted and %d distinct ids, want 1 and 1", accepted, len(ids))
		}
		id := observe.SignalID(tg.source.Name, delivery)
		if !ids[id+"/"+id] {
			t.Fatalf("the deliveries were answered with %v, want %s", ids, id)
		}
		if w := tg.waitWave(t, id, stopped); w.Status != "SUCCEEDED" {
			t.Fatalf("wave %+v, want SUCCEEDED", w)
		}
		if got := kinds(tg.entries(t, id)); got["signal-received"] != 1 || got["reasoner-decision"] != 1 || got["execution-evidence"] != 1 {
			t.Errorf("200 deliveries of one signal: kinds %v, want one signal, one decision, one action", got)
		}
	})

	t.Run("failing action ends in operate, nothing executed twice", func(t *testing.T) {
		r := tg.send(t, unique("fail"), map[string]any{"confidence": "fail"})
		var rec receipt
		r.decode(t, &rec)
		w := tg.waitWave(t, rec.WaveID, stopped)
		if w.Status != "FAILED" || w.Error == "" {
			t.Fatalf("wave %+v, want FAILED with the error", w)
		}
		got := kinds(tg.entries(t, rec.SignalID))
		mustContain(t, got, "operator-decision", "final-verdict")
		if got["execution-evidence"] > 1 {
			t.Errorf("execution-evidence entries: %d, want at most 1", got["execution-evidence"])
		}
		mustNotContain(t, got, "validator-result")
	})

	t.Run("bad signatures get 401 and write nothing", func(t *testing.T) {
		body := []byte(`{"confidence":"high"}`)
		cases := map[string]func() http.Header{
			"forged": func() http.Header {
				forged := tg.source
				forged.Secret = "not-the-secret"
				h, _ := observe.Sign(forged, body, time.Now())
				return h
			},
			"missing": func() http.Header { return http.Header{"Content-Type": {"application/json"}} },
		}
		source := map[string]observe.SourceConfig{"forged": tg.source, "missing": tg.source}
		if tg.slack.Name != "" {
			// Slack signs a timestamp; one older than 5 minutes is stale.
			source["stale"] = tg.slack
			cases["stale"] = func() http.Header {
				h, _ := observe.Sign(tg.slack, body, time.Now().Add(-10*time.Minute))
				return h
			}
		}
		for name, header := range cases {
			t.Run(name, func(t *testing.T) {
				delivery := unique(name)
				h := header()
				h.Set("Idempotency-Key", delivery)
				r := tg.do(t, http.MethodPost, "/webhooks/"+source[name].Name, h, body)
				if r.status != http.StatusUnauthorized {
					t.Fatalf("%s signature: %d %s, want 401", name, r.status, r.body)
				}
				if name == "stale" {
					return // slack dedups on the body's event_id; the 401 is the check
				}
				id := observe.SignalID(source[name].Name, delivery)
				if g := tg.do(t, http.MethodGet, "/signals/"+id, tg.authed(), nil); g.status != http.StatusNotFound {
					t.Errorf("after a %s signature GET /signals/%s: %d, want 404", name, id, g.status)
				}
			})
		}
	})

	t.Run("unknown source and oversized body", func(t *testing.T) {
		if r := tg.do(t, http.MethodPost, "/webhooks/no-such-source", nil, []byte(`{}`)); r.status != http.StatusNotFound {
			t.Errorf("unknown source: %d, want 404", r.status)
		}
		big := make([]byte, 300<<10)
		for i := range big {
			big[i] = 'a'
		}
		if r := tg.do(t, http.MethodPost, "/webhooks/"+tg.source.Name, nil, big); r.status != http.StatusRequestEntityTooLarge {
			t.Errorf("oversized body: %d, want 413", r.status)
		}
	})
}
