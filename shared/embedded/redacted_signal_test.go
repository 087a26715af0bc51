package embedded

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
)

// TestRedactedSignalPassesTheWitness sends a webhook whose payload and
// delivery id carry a value of the registry of secrets (a user pasted the
// signing secret into an issue): the wave completes with the witness
// passing over the redacted form it states, and the value is nowhere in
// the data dir, the ledger (either store), the logs, the API answers or the
// console pages.
func TestRedactedSignalPassesTheWitness(t *testing.T) {
	const canary = "canary-pasted-signing-secret-7f3a"
	for _, store := range []string{"sqlite", "dynamodb"} {
		t.Run(store, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir())
			if store == "dynamodb" {
				onDynamoDBLocal(t, &cfg, "redacted-signal")
			}
			cfg.Actions.HTTP.SigningSecret = canary
			if err := cfg.complete(); err != nil {
				t.Fatal(err)
			}
			r, srv, logs := startLoggingSecrets(t, cfg)

			body := `{"confidence":"high","issue":{"title":"deploy fails","body":"my config has signing_secret: ` + canary + `"}}`
			src, _ := cfg.Source("demo")
			h, _ := observe.SignDelivery(src, []byte(body), time.Now(), "delivery-"+canary)
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/demo", strings.NewReader(body))
			req.Header = h
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != http.StatusAccepted {
				t.Fatalf("webhook: %v %v", resp, err)
			}
			var rec observe.Receipt
			_ = json.NewDecoder(resp.Body).Decode(&rec)
			resp.Body.Close()
			if st := waitOperator(t, r, rec.WaveID, operate.StateSuccess, operate.StateFailed, operate.StatePaused); st.State != operate.StateSuccess {
				t.Fatalf("the wave ended %+v, want %s", st, operate.StateSuccess)
			}

			leaks := &leakSearch{canaries: map[string]string{"the pasted secret": canary}}
			var witness ora.ValidatorResult
			var signal ora.NormalizedSignal
			for _, e := range leaks.entries(t, r, rec.SignalID) {
				switch e.Kind {
				case ora.KindWitnessResult:
					_ = json.Unmarshal(e.Body, &witness)
				case ora.KindSignalReceived:
					_ = json.Unmarshal(e.Body, &signal)
				}
			}
			if witness.Verdict != ora.Pass {
				t.Errorf("witness %s: %s", witness.Verdict, witness.Summary)
			}
			if !strings.Contains(witness.Summary, "redacted form") || !strings.Contains(witness.Summary, signal.ReceivedDigest) || signal.ReceivedDigest == "" {
				t.Errorf("the witness's summary %q does not state the redaction and the received digest %q", witness.Summary, signal.ReceivedDigest)
			}
			if got, want := strings.Join(signal.Redacted, ","), "actions.http.signing_secret"; got != want {
				t.Errorf("signal.redacted = %q, want %q", got, want)
			}
			if err := signal.Validate(); err != nil {
				t.Errorf("the stored signal does not validate: %v", err)
			}

			leaks.dataDir(cfg.DataDir)
			if store == "dynamodb" {
				leaks.dynamoDB(t, cfg)
			}
			token := cfg.Tokens[0].Token
			for _, p := range []string{"/signals/" + rec.SignalID, "/waves/" + rec.WaveID, "/api/orientation/packets/" + rec.WaveID,
				"/console/", "/console/waves/" + rec.WaveID, "/console/waves/" + rec.WaveID + "/raw?entry=0"} {
				leaks.get(t, srv.URL, token, p)
			}
			leaks.check("the logs", []byte(logs.String()))
			leaks.report(t, "deploy fails", ora.Marker("actions.http.signing_secret"), `"verdict":"PASS"`)
		})
	}
}
