package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type receiptWebhooks WebhookReceipt

func (r receiptWebhooks) Webhook(context.Context, string, http.Header, []byte) (WebhookReceipt, error) {
	return WebhookReceipt(r), nil
}

// Each receipt maps to its status: a provider's endpoint check (Slack's
// ssl_check) is a 200 that captured nothing.
func TestWebhookReceiptStatuses(t *testing.T) {
	tests := []struct {
		name    string
		receipt WebhookReceipt
		want    int
	}{
		{"captured", WebhookReceipt{SignalID: "sig_1", WaveID: "sig_1"}, http.StatusAccepted},
		{"duplicate", WebhookReceipt{SignalID: "sig_1", WaveID: "sig_1", Duplicate: true}, http.StatusOK},
		{"challenge", WebhookReceipt{Challenge: "c"}, http.StatusOK},
		{"probe", WebhookReceipt{Probe: true}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Server{Webhooks: receiptWebhooks(tt.receipt)}
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("POST", "/webhooks/slack", strings.NewReader("ssl_check=1&token=t"))
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("status %d (%s), want %d", rec.Code, rec.Body, tt.want)
			}
			var got map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if tt.receipt.Probe && (got["probe"] != true || got["signal_id"] != nil) {
				t.Errorf("body %v, want probe and no signal", got)
			}
		})
	}
}
