package orient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/orient/orienttest"
)

// A fact whose provenance is sensitive keeps a reference (kind and digest)
// in its place: the canary value reaches no fact entry, packet or log line,
// and the reference names why and lets a holder of the value check it.
func TestSensitiveProvenanceIsAReference(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"temp":3}`))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	secrets := ora.NewSecrets()
	secrets.Add("weather api key", "canary-registered-5521")
	cases := []struct {
		name, canary, target, kind string
		fields                     []string
	}{
		{"a URL with a password", "canary-pass-7731", "http://reader:canary-pass-7731@" + host + "/ok", orient.SensitiveURL, nil},
		{"a token in the query", "canary-token-9913", srv.URL + "/ok?city=oslo&access_token=canary-token-9913", orient.SensitiveURL, nil},
		{"a registered secret", "canary-registered-5521", srv.URL + "/ok/canary-registered-5521", orient.SensitiveSecret, nil},
		{"a field configured sensitive", "canary-path-4410", srv.URL + "/ok/canary-path-4410", orient.SensitiveField, []string{"url"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st := orienttest.NewStore()
			sig := ora.NormalizedSignal{ID: "sig-sensitive", Source: ora.Source{Type: ora.SourceWebhook, Name: "demo", Provider: "hmac"},
				Timestamp: t0, NormalizedAt: t0, DedupKey: "sig-sensitive", Payload: json.RawMessage(`{"city":"oslo"}`),
				Raw: []byte(`{"city":"oslo"}`), RawDigest: ora.Digest([]byte(`{"city":"oslo"}`))}
			e, err := ora.NewEntry(sig.ID, ora.KindSignalReceived, "", sig)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			opts := func(o *orient.Options) {
				o.Sources = map[string]orient.Source{orient.FamilyHTTP: orient.HTTP{Allow: []string{"http://"}}}
				o.Secrets, o.SensitiveProvenance = secrets, tc.fields
				o.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
				o.Now = func() time.Time { return t0 }
			}
			job := orient.Job{ID: "web.00000", Family: orient.FamilyHTTP, Kind: "get", Target: tc.target,
				Weights: &orient.Weights{Priority: 1}, Params: orient.Params{AsOf: t0, Limit: 1, MaxBytes: 1024}}
			if n, err := orient.NewFetcher(st, opts).Fetch(ctx, sig.ID, job); err != nil || n != 1 {
				t.Fatalf("Fetch: %d facts, %v", n, err)
			}
			packet, err := orient.NewCompiler(st, opts).Compile(ctx, sig.ID)
			if err != nil {
				t.Fatal(err)
			}
			var fact *ora.Fact
			for _, b := range packet.Bands {
				for i := range b.Facts {
					if b.Facts[i].SourceType == orient.FamilyHTTP {
						fact = &b.Facts[i]
					}
				}
			}
			if fact == nil {
				t.Fatalf("the packet has no http fact: %+v", packet)
			}
			if got, want := fact.Provenance["url"], orient.SensitiveRef(tc.kind, tc.target); got != want {
				t.Errorf("provenance url %q, want the reference %q", got, want)
			}
			if fact.Provenance[orient.ProvenanceSensitive] != "url" {
				t.Errorf("provenance %v does not list url as sensitive", fact.Provenance)
			}
			entries, _ := st.Entries(ctx, sig.ID)
			stored, _ := json.Marshal(entries)
			pj, _ := json.Marshal(packet)
			for what, b := range map[string][]byte{"stored entries": stored, "packet": pj, "logs": logs.Bytes()} {
				if bytes.Contains(b, []byte(tc.canary)) {
					t.Errorf("the canary %s is in the %s", tc.canary, what)
				}
			}
			if logs.Len() == 0 {
				t.Error("no log line was written: the log check proves nothing")
			}
		})
	}
}
