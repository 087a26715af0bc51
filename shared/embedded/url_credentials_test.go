package embedded

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// TestURLCredentialsNeverLeave puts a profile version whose http rule GETs
// two URLs carrying canary credentials (a token in the query, a user and
// password), runs a wave, and checks that the fetcher sent the real
// credentials while the profile, the jobs, the facts, the packet, the
// ledger (either store), the data dir, the logs, the API answers and the
// console pages hold none of them.
func TestURLCredentialsNeverLeave(t *testing.T) {
	canaries := map[string]string{"query token": "canary-url-token-3c9e71", "password": "canary-url-password-8b24d0"}
	for _, store := range []string{"sqlite", "dynamodb"} {
		t.Run(store, func(t *testing.T) {
			ctx := context.Background()
			var mu sync.Mutex
			got := map[string]bool{}
			target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				switch u, p, _ := r.BasicAuth(); {
				case r.URL.Path == "/status" && r.URL.Query().Get("token") == canaries["query token"]:
					got["query token"] = true
				case r.URL.Path == "/health" && u == "ops" && p == canaries["password"]:
					got["password"] = true
				default:
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"status":"all systems nominal","path":"` + r.URL.Path + `"}`))
			}))
			defer target.Close()
			host := strings.TrimPrefix(target.URL, "http://")

			cfg := testConfig(t, t.TempDir())
			if store == "dynamodb" {
				onDynamoDBLocal(t, &cfg, "url-credentials")
			}
			cfg.Orientation.HTTPAllow = []string{target.URL + "/"}
			if err := cfg.complete(); err != nil {
				t.Fatal(err)
			}
			r, srv, logs := startLoggingSecrets(t, cfg)

			profiles := orient.NewProfiles(r.ledger, r.orientOptions())
			cur, err := profiles.Current(ctx, "default")
			if err != nil {
				t.Fatal(err)
			}
			next := cur
			next.Version++
			next.UpdatedAt = cur.UpdatedAt.Add(1)
			next.Limits.HTTPAllow = []string{target.URL + "/"}
			pred, _ := json.Marshal(orient.HTTPPredicate{URLs: []string{
				target.URL + "/status?token=" + canaries["query token"] + "&verbose=1",
				"http://ops:" + canaries["password"] + "@" + host + "/health",
			}})
			next.Rules = append(append([]ora.AttentionRule{}, cur.Rules...), ora.AttentionRule{ID: "service-status", SourceType: orient.FamilyHTTP,
				Predicate: pred, Band: ora.BandSituational, PriorityWeight: 0.9, Enabled: true})
			if _, err := profiles.Put(ctx, next); err != nil {
				t.Fatalf("put profile: %v", err)
			}

			rec := send(t, r, srv.URL, "url-credentials", `{"confidence":"high"}`)
			if st := waitOperator(t, r, rec.WaveID, operate.StateSuccess, operate.StateFailed, operate.StatePaused); st.State != operate.StateSuccess {
				t.Fatalf("the wave ended %+v, want %s", st, operate.StateSuccess)
			}
			mu.Lock()
			for name := range canaries {
				if !got[name] {
					t.Errorf("the target never got the request with the %s: the fetcher did not use the real URL", name)
				}
			}
			mu.Unlock()

			leaks := &leakSearch{canaries: canaries}
			leaks.entries(t, r, rec.SignalID)
			leaks.entries(t, r, orient.ProfileKey("default"))
			leaks.dataDir(cfg.DataDir)
			if store == "dynamodb" {
				leaks.dynamoDB(t, cfg)
			}
			token := cfg.Tokens[0].Token
			packet := leaks.get(t, srv.URL, token, "/api/orientation/packets/"+rec.WaveID)
			if !strings.Contains(string(packet), "all systems nominal") {
				t.Errorf("the packet holds no fact of the http rule: %.400s", packet)
			}
			for _, p := range []string{"/api/orientation/profile/current", "/signals/" + rec.SignalID, "/waves/" + rec.WaveID,
				"/console/", "/console/waves/" + rec.WaveID, "/console/orientation"} {
				leaks.get(t, srv.URL, token, p)
			}
			leaks.check("the logs", []byte(logs.String()))
			leaks.report(t, "service-status", ora.Marker("url:"+host+":token"), "all systems nominal")
		})
	}
}
