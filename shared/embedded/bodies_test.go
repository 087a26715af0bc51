package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
)

// A webhook whose signal entry is over the ledger's item limit (its payload
// and raw bytes are both kept) is taken by ora dev: the entry's body goes to
// the local object folder under its content address and reads back whole.
func TestLargeWebhookBodyByReference(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	src, _ := cfg.Source("demo")
	body := []byte(`{"confidence":"low","pad":"` + strings.Repeat("x", 200<<10) + `"}`)
	h, _ := observe.SignDelivery(src, body, time.Now(), "large-1")
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/demo", bytes.NewReader(body))
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook: %v %v", resp, err)
	}
	var rec observe.Receipt
	_ = json.NewDecoder(resp.Body).Decode(&rec)
	resp.Body.Close()
	entries, err := r.ledger.Entries(ctx, rec.SignalID)
	if err != nil {
		t.Fatal(err)
	}
	var sig ora.Entry
	for _, e := range entries {
		if e.Kind == ora.KindSignalReceived {
			sig = e
		}
	}
	if ora.EntrySize(sig) <= ora.MaxItemBytes {
		t.Fatalf("signal entry of %d bytes fits an item; the test needs a larger body", ora.EntrySize(sig))
	}
	var s ora.NormalizedSignal
	if err := json.Unmarshal(sig.Body, &s); err != nil || ora.Digest(s.Raw) != s.RawDigest || len(s.Payload) < len(body) || ora.Digest(sig.Body) != sig.Digest {
		t.Fatalf("the signal read back is not the one received (%v)", err)
	}
	stored, err := os.ReadFile(filepath.Join(cfg.Actions.Object.Root, filepath.FromSlash(ora.BodyKey(sig.Digest))))
	if err != nil || !bytes.Equal(stored, sig.Body) {
		t.Errorf("the object folder holds no body %s: %v", ora.BodyKey(sig.Digest), err)
	}
	waitIntent(t, r, rec.SignalID) // the wave reads the signal back and goes on
}
