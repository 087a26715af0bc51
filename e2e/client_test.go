package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
)

// target is one deployment the suite runs against: a local `ora dev` it
// started, or a deployed stack (LocalStack or AWS).
type target struct {
	name        string
	base        string               // API base URL, no trailing slash
	source      observe.SourceConfig // the webhook source the suite signs as
	slack       observe.SourceConfig // a slack source for the stale-signature case (optional)
	token       string               // a bearer token with ora.approve and orientation.read
	readerToken string               // a bearer token with orientation.read only (optional)
	deployed    bool
}

type response struct {
	status int
	body   []byte
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

func (tg target) do(t *testing.T, method, path string, header http.Header, body []byte) response {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, tg.base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, b}
}

func (tg target) authed() http.Header {
	return http.Header{"Authorization": {"Bearer " + tg.token}, "Content-Type": {"application/json"}}
}

// send posts a signed webhook delivery with a delivery id (Idempotency-Key).
func (tg target) send(t *testing.T, delivery string, payload any) response {
	t.Helper()
	body, _ := json.Marshal(payload)
	return tg.sendRaw(t, delivery, body)
}

// sendRaw posts body as it is to the target's source, signed as its
// provider signs, with a delivery id.
func (tg target) sendRaw(t *testing.T, delivery string, body []byte) response {
	t.Helper()
	h, err := observe.SignDelivery(tg.source, body, time.Now(), delivery)
	if err != nil {
		t.Fatal(err)
	}
	return tg.do(t, http.MethodPost, "/webhooks/"+tg.source.Name, h, body)
}

type receipt struct {
	SignalID  string `json:"signal_id"`
	WaveID    string `json:"wave_id"`
	Duplicate bool   `json:"duplicate"`
}

type entry struct {
	Kind      string          `json:"kind"`
	Qualifier string          `json:"qualifier"`
	Body      json.RawMessage `json:"body"`
}

func (tg target) entries(t *testing.T, signalID string) []entry {
	t.Helper()
	r := tg.do(t, http.MethodGet, "/signals/"+signalID, tg.authed(), nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /signals/%s: %d %s", signalID, r.status, r.body)
	}
	var out struct {
		Entries []entry `json:"entries"`
	}
	r.decode(t, &out)
	return out.Entries
}

func kinds(es []entry) map[string]int {
	m := map[string]int{}
	for _, e := range es {
		m[e.Kind]++
	}
	return m
}

type wave struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Cause  string `json:"cause"`
}

// waitWave polls the wave until its status satisfies done.
func (tg target) waitWave(t *testing.T, id string, done func(wave) bool) wave {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var w wave
	for time.Now().Before(deadline) {
		r := tg.do(t, http.MethodGet, "/waves/"+id, tg.authed(), nil)
		if r.status == http.StatusOK {
			r.decode(t, &w)
			if done(w) {
				return w
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("wave %s did not reach the expected status; last %+v", id, w)
	return w
}

func stopped(w wave) bool { return w.Status != "" && w.Status != "RUNNING" }

// waitEntry polls the ledger until an entry of kind appears.
func (tg target) waitEntry(t *testing.T, signalID, kind string) entry {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		r := tg.do(t, http.MethodGet, "/signals/"+signalID, tg.authed(), nil)
		if r.status == http.StatusOK {
			var out struct {
				Entries []entry `json:"entries"`
			}
			r.decode(t, &out)
			for _, e := range out.Entries {
				if e.Kind == kind {
					return e
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no %s entry for %s", kind, signalID)
	return entry{}
}

func decisionID(t *testing.T, es []entry) string {
	t.Helper()
	for _, e := range es {
		if e.Kind == "reasoner-decision" {
			var d struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(e.Body, &d); err != nil {
				t.Fatal(err)
			}
			return d.ID
		}
	}
	t.Fatalf("no reasoner-decision among %v", kinds(es))
	return ""
}

func unique(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
}

func mustContain(t *testing.T, got map[string]int, want ...string) {
	t.Helper()
	for _, k := range want {
		if got[k] == 0 {
			t.Errorf("no %s entry; kinds: %v", k, got)
		}
	}
}

func mustNotContain(t *testing.T, got map[string]int, unwanted ...string) {
	t.Helper()
	for _, k := range unwanted {
		if got[k] != 0 {
			t.Errorf("unexpected %s entry; kinds: %v", k, got)
		}
	}
}
