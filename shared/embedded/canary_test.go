package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/connect"
	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/reason"
)

// canaries are planted in every secret the configuration can hold, and one
// is minted by the OAuth 2.0 token endpoint at run time.
var canaries = map[string]string{
	"source hmac":         "canary-hmac-secret-0001",
	"source github":       "canary-github-secret-0002",
	"source slack":        "canary-slack-secret-0003",
	"source stripe":       "whsec_canary-stripe-0004",
	"api token":           "canary-api-token-0005",
	"signing secret":      "canary-signing-secret-0006",
	"connection bearer":   "canary-bearer-0007",
	"connection api_key":  "canary-apikey-0008",
	"connection basic":    "canary-basic-0009",
	"connection oauth2":   "canary-client-secret-0010",
	"oauth2 minted token": "canary-minted-token-0011",
}

const canaryRules = `version: canary-1
rules:
  - {name: bearer, when: {field: payload.case, equals: bearer}, then: {action: http.request, parameters: {connection: gh, path: "/repos/o/r/issues/1/labels", body: {labels: [bug]}}, confidence: 0.95, tier: 1, author_type: auditor, reasoning: label through a bearer connection, scope: {allowed_operations: [http.request]}}}
  - {name: api-key, when: {field: payload.case, equals: api_key}, then: {action: http.request, parameters: {connection: keyed, path: "/items", method: PUT, body: {a: 1}}, confidence: 0.95, tier: 1, author_type: auditor, reasoning: an api_key connection, scope: {allowed_operations: [http.request]}}}
  - {name: basic, when: {field: payload.case, equals: basic}, then: {action: http.request, parameters: {connection: legacy, path: "/v1/report", query: {n: "1"}}, confidence: 0.95, tier: 1, author_type: auditor, reasoning: a basic connection, scope: {allowed_operations: [http.request]}}}
  - {name: oauth2, when: {field: payload.case, equals: oauth2}, then: {action: http.request, parameters: {connection: svc, path: "/jobs"}, confidence: 0.95, tier: 1, author_type: auditor, reasoning: an oauth2 connection, scope: {allowed_operations: [http.request]}}}
  - {name: fail, when: {field: payload.case, equals: fail}, then: {action: http.request, parameters: {connection: gh, path: "/fail"}, confidence: 0.95, tier: 1, author_type: auditor, reasoning: the target answers 500, scope: {allowed_operations: [http.request]}}}
  - {name: unknown, when: {field: payload.case, equals: unknown}, then: {action: http.request, parameters: {connection: gh, path: "/hang"}, confidence: 0.95, tier: 1, author_type: auditor, reasoning: the target never answers, scope: {allowed_operations: [http.request]}}}
  - {name: pasted, when: {field: payload.case, equals: pasted}, then: {action: notify, parameters: {subject: pasted, message: "a user pasted canary-api-token-0005 and canary-minted-token-0011 into a rule"}, confidence: 0.95, tier: 1, author_type: auditor, reasoning: a secret slipped into a decision, scope: {allowed_operations: [notify]}}}
default: {action: notify, parameters: {subject: s, message: m}, confidence: 0.95, tier: 1, author_type: auditor, reasoning: default, scope: {allowed_operations: [notify]}}
`

// canaryTarget is the API the connections reach: it checks each
// connection's credential, answers 500 on /fail and never answers /hang.
func canaryTarget(t *testing.T) (*httptest.Server, *httptest.Server, func() map[string]int) {
	t.Helper()
	var mu sync.Mutex
	hits := map[string]int{}
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, secret, _ := r.BasicAuth(); secret != canaries["connection oauth2"] {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, canaries["oauth2 minted token"])
	}))
	t.Cleanup(tokens.Close)
	want := map[string]func(*http.Request) bool{
		"/gh/": func(r *http.Request) bool {
			return r.Header.Get("Authorization") == "Bearer "+canaries["connection bearer"]
		},
		"/keyed/": func(r *http.Request) bool { return r.Header.Get("X-Api-Key") == canaries["connection api_key"] },
		"/legacy/": func(r *http.Request) bool {
			u, p, ok := r.BasicAuth()
			return ok && u == "ora" && p == canaries["connection basic"]
		},
		"/svc/": func(r *http.Request) bool {
			return r.Header.Get("Authorization") == "Bearer "+canaries["oauth2 minted token"]
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		for prefix, ok := range want {
			if strings.HasPrefix(r.URL.Path, prefix) && !ok(r) {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/fail"):
			w.WriteHeader(http.StatusInternalServerError)
		case strings.HasSuffix(r.URL.Path, "/hang"):
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		default:
			w.WriteHeader(http.StatusCreated)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, tokens, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range hits {
			out[k] = v
		}
		return out
	}
}

// canaryConfig plants a canary in every secret of cfg.
func canaryConfig(t *testing.T, cfg *Config, target, tokens string) {
	t.Helper()
	dir := cfg.DataDir
	rules := filepath.Join(dir, "canary.rules.yaml")
	if err := os.WriteFile(rules, []byte(canaryRules), 0o600); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(t.TempDir(), "basic-secret")
	if err := os.WriteFile(secretFile, []byte(canaries["connection basic"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ORA_CANARY_BEARER", canaries["connection bearer"])
	cfg.RulesFile = rules
	cfg.Sources = []observe.SourceConfig{
		{Name: "demo", Type: observe.TypeHMAC, Secret: canaries["source hmac"], Header: "X-Ora-Signature", Hash: "sha256"},
		{Name: "github", Type: observe.TypeGitHub, Secret: canaries["source github"]},
		{Name: "slack", Type: observe.TypeSlack, Secret: canaries["source slack"]},
		{Name: "stripe", Type: observe.TypeStripe, Secret: canaries["source stripe"]},
	}
	cfg.Tokens = []httpapi.Token{{Token: canaries["api token"], Subject: "canary", Scopes: []string{httpapi.ScopeApprove, httpapi.ScopeRead, httpapi.ScopeOperate, httpapi.ScopeOperatorRead, httpapi.ScopeOrientationRead, httpapi.ScopeOrientationPropose}}}
	cfg.Actions.HTTP = act.HTTPConfig{SigningSecret: canaries["signing secret"], TimeoutSeconds: 1}
	cfg.Connections = []connect.Config{
		{Name: "gh", URL: target + "/gh", Auth: connect.Auth{Kind: connect.KindBearer, Secret: "${ORA_CANARY_BEARER}"}},
		{Name: "keyed", URL: target + "/keyed/", Auth: connect.Auth{Kind: connect.KindAPIKey, Header: "X-Api-Key", Secret: canaries["connection api_key"]}},
		{Name: "legacy", URL: target + "/legacy", Auth: connect.Auth{Kind: connect.KindBasic, Username: "ora", Secret: "file:" + secretFile}},
		{Name: "svc", URL: target + "/svc", Auth: connect.Auth{Kind: connect.KindClientCredentials, TokenURL: tokens + "/token", ClientID: "ora", Secret: canaries["connection oauth2"], Scopes: []string{"jobs"}}},
	}
	// The first action to run fails once: that wave pauses and is resumed.
	cfg.Faults = []FaultConfig{{State: "Act", Error: "InternalError", Cause: "drill", Times: 1}}
	cfg.Operate.AutoResumeTransient = false
	if err := cfg.complete(); err != nil {
		t.Fatal(err)
	}
}

// taskTokenField finds the task tokens a ledger entry holds.
var taskTokenField = regexp.MustCompile(`"task_?[tT]oken":"([^"]{20,})"`)

// TestCanarySecretsNeverLeave runs waves that succeed, fail, pause and
// resume with a canary planted in every secret, then searches everything
// ora wrote or answered: zero copies.
func TestCanarySecretsNeverLeave(t *testing.T) {
	for _, store := range []string{"sqlite", "dynamodb"} {
		t.Run(store, func(t *testing.T) {
			ctx := context.Background()
			target, tokens, hits := canaryTarget(t)
			cfg := testConfig(t, t.TempDir())
			if store == "dynamodb" {
				onDynamoDBLocal(t, &cfg, "canary")
			}
			canaryConfig(t, &cfg, target.URL, tokens.URL)
			r, srv, logs := startLoggingSecrets(t, cfg)

			// The first wave meets the fault at Act: it pauses, and resumes.
			first := send(t, r, srv.URL, "canary-bearer", `{"case":"bearer"}`)
			waitOperator(t, r, first.WaveID, operate.StatePaused)
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				_, err := r.ops.Resume(ctx, first.WaveID, operate.ResumeRequest{AsIs: true, By: "tester"})
				if err == nil || time.Now().After(deadline) || !strings.Contains(err.Error(), "pausing") {
					if err != nil {
						t.Fatalf("resume: %v", err)
					}
					break
				}
			}
			ended := map[string]string{"bearer": waitOperator(t, r, first.WaveID, operate.StateSuccess, operate.StateFailed).State}
			ids := []string{first.WaveID}
			sigs := []string{first.SignalID}
			for _, c := range []string{"api_key", "basic", "oauth2", "pasted", "fail", "unknown"} {
				rec := send(t, r, srv.URL, "canary-"+c, `{"case":"`+c+`"}`)
				ended[c] = waitOperator(t, r, rec.WaveID, operate.StateSuccess, operate.StateFailed, operate.StatePaused).State
				ids, sigs = append(ids, rec.WaveID), append(sigs, rec.SignalID)
			}
			for c, want := range map[string]string{"bearer": operate.StateSuccess, "api_key": operate.StateSuccess, "basic": operate.StateSuccess, "oauth2": operate.StateSuccess, "pasted": operate.StateSuccess} {
				if ended[c] != want {
					t.Errorf("wave %s ended %s, want %s", c, ended[c], want)
				}
			}
			for c, want := range map[string]string{"fail": operate.StateSuccess, "unknown": operate.StateSuccess} {
				if ended[c] == want {
					t.Errorf("wave %s ended %s: it should not succeed", c, ended[c])
				}
			}
			h := hits()
			for _, p := range []string{"/gh/repos/o/r/issues/1/labels", "/keyed/items", "/legacy/v1/report", "/svc/jobs", "/gh/fail", "/gh/hang"} {
				if h[p] == 0 {
					t.Errorf("the target never got %s (hits %v)", p, h)
				}
			}

			// What the search reads holds what the waves did (the search is
			// not looking at nothing), and the pasted secret's marker.
			var seen bytes.Buffer
			var found []string
			check := func(where string, b []byte) {
				seen.Write(b)
				for name, v := range canaries {
					if bytes.Contains(b, []byte(v)) {
						found = append(found, fmt.Sprintf("%s in %s", name, where))
					}
				}
			}
			// The unknown outcome is resolved through the API: the action ran.
			unknownWave := ids[len(ids)-1]
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/waves/"+unknownWave+"/resolve", strings.NewReader(`{"executed":true,"reason":"the target shows the call"}`))
				req.Header.Set("Authorization", "Bearer "+canaries["api token"])
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				check("POST /waves/{id}/resolve", b)
				if resp.StatusCode == http.StatusOK {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("resolve: %d %s", resp.StatusCode, b)
				}
			}
			if st := waitOperator(t, r, unknownWave, operate.StateSuccess, operate.StateFailed).State; st != operate.StateSuccess {
				t.Errorf("the resolved wave ended %s, want %s", st, operate.StateSuccess)
			}
			// Every file ora wrote: the SQLite files and their WAL, the
			// objects folder, the inbox.
			_ = filepath.WalkDir(cfg.DataDir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || filepath.Base(p) == "canary.rules.yaml" {
					return nil
				}
				b, _ := os.ReadFile(p)
				check(p, b)
				return nil
			})
			if store == "dynamodb" {
				db := dynamotest.NewClient(cfg.Store.DynamoDB.Endpoint)
				for _, table := range []string{cfg.Store.DynamoDB.Table, cfg.Store.DynamoDB.IdempotencyTable} {
					var start map[string]types.AttributeValue
					for {
						out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: start})
						if err != nil {
							t.Fatalf("scan %s: %v", table, err)
						}
						for _, item := range out.Items {
							b, _ := json.Marshal(item)
							check("DynamoDB table "+table, b)
						}
						if start = out.LastEvaluatedKey; len(start) == 0 {
							break
						}
					}
				}
			}
			// The task tokens of the waits (the first wave's pause) are
			// registered where they were received: every writer redacts them
			// but the ledger, where the wait is settled from.
			var taskTokens []string
			for _, sig := range sigs {
				es, err := r.ledger.Entries(ctx, sig)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range es {
					for _, m := range taskTokenField.FindAllSubmatch(e.Body, -1) {
						taskTokens = append(taskTokens, string(m[1]))
					}
				}
			}
			if len(taskTokens) == 0 {
				t.Error("no task token in the ledger: the first wave did not pause through a wait")
			}
			for _, tok := range taskTokens {
				if r.secrets.RedactString(tok) == tok {
					t.Errorf("task token %.12s... is not in the registry", tok)
				}
			}
			checkTokens := func(where string, b []byte) {
				for _, tok := range taskTokens {
					if bytes.Contains(b, []byte(tok)) {
						found = append(found, fmt.Sprintf("a task token in %s", where))
					}
				}
			}
			// Every read route of the API and every console page, asked
			// with the (canary) token.
			get := func(path string) {
				req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
				req.Header.Set("Authorization", "Bearer "+canaries["api token"])
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("GET %s: %v", path, err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				check("GET "+path, append([]byte(fmt.Sprint(resp.Header)), b...))
				checkTokens("GET "+path, b)
			}
			for _, p := range []string{"/healthz", "/incidents", "/motor/versions", "/motor/waves", "/metrics", "/api/orientation/profile/current",
				"/console/", "/console/approvals", "/console/metrics"} {
				get(p)
			}
			for i, id := range ids {
				for _, p := range []string{"/waves/" + id, "/signals/" + sigs[i], "/api/orientation/packets/" + id, "/api/orientation/feedback/" + id, "/console/waves/" + id} {
					get(p)
				}
				if w, err := (waves{r}).Wave(ctx, id); err == nil && w.Operator != nil && w.Operator.IncidentID != "" {
					get("/incidents/" + w.Operator.IncidentID)
				}
			}
			check("the logs", []byte(logs.String()))
			checkTokens("the logs", []byte(logs.String()))
			for _, want := range []string{"repos/o/r/issues/1/labels", "[redacted:tokens[0]]", "[redacted:connection:svc:token]"} {
				if !bytes.Contains(seen.Bytes(), []byte(want)) {
					t.Errorf("nothing searched holds %q", want)
				}
			}
			if len(found) > 0 {
				t.Errorf("canaries found (%d):\n%s", len(found), strings.Join(found, "\n"))
			}
			if !strings.Contains(logs.String(), `"type":"http.request"`) {
				t.Errorf("the logs hold no action line: the search looked at nothing")
			}
		})
	}
}

// TestCanaryNeverReachesTheModel runs waves through the Bedrock reasoner
// (a fake Converse server) whose model echoes a secret in its answer, which
// the next stage's request carries back: the captured Converse requests
// hold no canary.
func TestCanaryNeverReachesTheModel(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
	ctx := context.Background()
	target, tokens, _ := canaryTarget(t)
	cfg := testConfig(t, t.TempDir())
	canaryConfig(t, &cfg, target.URL, tokens.URL)
	fake := bedrocktest.NewFunc(t, func(bedrocktest.Request) bedrocktest.Reply {
		return bedrocktest.Tool(reason.ObservationTool, map[string]any{
			"confidence": 0.97, "layers": []string{"C01", "C02", "C03"},
			// A model that repeats a secret it should never have seen.
			"content": "the signing secret is canary-signing-secret-0006",
			"decision": map[string]any{
				"allowed_action": "PROCEED", "safety_check_summary": "a notification only",
				"action": map[string]any{"type": "notify", "parameters": map[string]any{"subject": "s", "message": "canary-api-token-0005"},
					"tier": 1, "allowed_operations": []string{"notify"}, "forbidden_paths": []string{}, "author_type": "auditor"},
				"then": []any{},
			},
		})
	})
	cfg.Reasoner.Kind, cfg.Reasoner.BedrockEndpoint, cfg.Reasoner.Region = "bedrock", fake.URL, "us-east-1"
	cfg.Reasoner.Bedrock.DailySpendCapUSD = 0
	// The model may notify on its own, so each wave ends without a human.
	one := 1.0
	cfg.Reasoner.Bedrock.Policy.Rules = []reason.PolicyRule{{Name: "canary", Actions: []string{"notify"}, MaxConfidence: &one}}
	cfg.Faults = nil
	if err := cfg.complete(); err != nil {
		t.Fatal(err)
	}
	r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	for _, c := range []string{"model-1", "model-2"} {
		rec := send(t, r, srv.URL, "canary-"+c, `{"case":"`+c+`"}`)
		waitOperator(t, r, rec.WaveID, operate.StateSuccess, operate.StateFailed, operate.StatePaused)
	}
	reqs := fake.Requests()
	if len(reqs) == 0 {
		t.Fatal("no Converse request was made")
	}
	b, _ := json.Marshal(reqs)
	if !bytes.Contains(b, []byte("model-2")) {
		t.Errorf("the captured requests do not hold the signal: the search looked at nothing")
	}
	for name, v := range canaries {
		if bytes.Contains(b, []byte(v)) {
			t.Errorf("%s reached the model", name)
		}
	}
}
