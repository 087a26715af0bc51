package act_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/connect"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/mcp/mcptest"
	"github.com/ora-runtime/ora/shared/ora"
)

// authTarget is a connection's target: it serves /api, checks the
// credential each request carries against want, logs the idempotency key
// of every request it accepts and applies each key once (a target honouring
// the key), answers 401 to a wrong credential, and never answers /api/hang.
type authTarget struct {
	want func(*http.Request) bool

	mu      sync.Mutex
	keys    []string
	applied map[string]bool
	hits    int
}

func (a *authTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	a.mu.Lock()
	a.hits++
	ok := a.want(r)
	if ok && r.URL.Path != "/api/hang" {
		key := r.Header.Get(act.HeaderIdempotencyKey)
		a.keys = append(a.keys, key)
		if a.applied == nil {
			a.applied = map[string]bool{}
		}
		a.applied[key] = true
	}
	a.mu.Unlock()
	switch {
	case !ok:
		w.WriteHeader(http.StatusUnauthorized)
	case r.URL.Path == "/api/hang":
		<-r.Context().Done()
	default:
		w.WriteHeader(http.StatusCreated)
	}
}

func (a *authTarget) seen() (keys []string, hits int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.keys...), a.hits
}

// mintingTokens is an OAuth 2.0 token endpoint that checks the client's
// credential and mints oauth-minted-<n>; status, when set, is its answer
// instead.
type mintingTokens struct {
	client, secret string
	status         int

	mu     sync.Mutex
	issued []string
}

func (m *mintingTokens) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, sec, _ := r.BasicAuth()
	w.Header().Set("Content-Type", "application/json")
	if m.status != 0 {
		w.WriteHeader(m.status)
		_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
		return
	}
	if id != m.client || sec != m.secret {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
		return
	}
	m.mu.Lock()
	tok := "oauth-minted-" + string(rune('a'+len(m.issued)))
	m.issued = append(m.issued, tok)
	m.mu.Unlock()
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
}

func (m *mintingTokens) valid(tok string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Contains(m.issued, tok)
}

// failingSource is a secret store that cannot give the secret: err says
// how (not configured, throttled).
type failingSource struct{ err error }

func (f failingSource) Secret(context.Context, connect.Config) (string, error) { return "", f.err }

// authKind is one kind of connection auth with the check its target makes.
type authKind struct {
	name   string
	auth   func(tokenURL string) connect.Auth
	accept func(tokens *mintingTokens) func(*http.Request) bool
}

var authKinds = []authKind{
	{"bearer", func(string) connect.Auth {
		return connect.Auth{Kind: connect.KindBearer, Secret: "ghp_crash-bearer-secret"}
	},
		func(*mintingTokens) func(*http.Request) bool {
			return func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer ghp_crash-bearer-secret" }
		}},
	{"api_key", func(string) connect.Auth {
		return connect.Auth{Kind: connect.KindAPIKey, Header: "X-Api-Key", Secret: "crash-api-key-secret"}
	}, func(*mintingTokens) func(*http.Request) bool {
		return func(r *http.Request) bool { return r.Header.Get("X-Api-Key") == "crash-api-key-secret" }
	}},
	{"basic", func(string) connect.Auth {
		return connect.Auth{Kind: connect.KindBasic, Username: "ora-bot", Secret: "crash-basic-secret"}
	}, func(*mintingTokens) func(*http.Request) bool {
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte("ora-bot:crash-basic-secret"))
		return func(r *http.Request) bool { return r.Header.Get("Authorization") == want }
	}},
	{"oauth2_client_credentials", func(tokenURL string) connect.Auth {
		return connect.Auth{Kind: connect.KindClientCredentials, TokenURL: tokenURL, ClientID: "ora-client", Secret: "crash-client-secret", Scopes: []string{"issues:write"}}
	}, func(m *mintingTokens) func(*http.Request) bool {
		return func(r *http.Request) bool {
			return m.valid(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		}
	}},
}

// connectionActor is an actor whose http.request has one connection "svc"
// to target's /api with auth, its secrets read from src.
func connectionActor(t *testing.T, db ora.Ledger, once act.Once, targetURL string, auth connect.Auth, src connect.Source) *act.Service {
	t.Helper()
	conns, err := connect.New([]connect.Config{{Name: "svc", URL: targetURL + "/api", Auth: auth}}, src)
	if err != nil {
		t.Fatal(err)
	}
	reg := act.NewRegistry()
	reg.Register(act.TypeHTTPRequest, act.NewHTTPRequest(act.HTTPConfig{SigningSecret: secret, TimeoutSeconds: 1}, nil, conns))
	return act.New(db, reg, once, func(o *act.Options) { o.Log = quiet })
}

var connectionScope = ora.Scope{AllowedOperations: []string{act.TypeHTTPRequest}}

func connectionAction(t *testing.T, path string) ora.Action {
	return ora.Action{Type: act.TypeHTTPRequest, Parameters: acttest.Params(t, map[string]any{"connection": "svc", "path": path, "body": map[string]int{"issue": 7}})}
}

// TestConnectionAuthOutcomes drives each failure class of an http.request
// through a connection of each auth kind, through the actor: the outcome
// recorded, the decision's status, and whether the target was reached.
func TestConnectionAuthOutcomes(t *testing.T) {
	wrong := map[string]connect.Auth{
		"bearer":  {Kind: connect.KindBearer, Secret: "ghp_wrong"},
		"api_key": {Kind: connect.KindAPIKey, Header: "X-Api-Key", Secret: "wrong"},
		"basic":   {Kind: connect.KindBasic, Username: "ora-bot", Secret: "wrong"},
	}
	type outcomeCase struct {
		name    string
		path    string
		auth    func(k authKind, tokenURL string) connect.Auth
		src     connect.Source
		tokens  int // the token endpoint's answer (0: it mints)
		outcome string
		status  ora.DecisionStatus
		errIs   func(error) bool
		reached bool
	}
	own := func(k authKind, tokenURL string) connect.Auth { return k.auth(tokenURL) }
	cases := []outcomeCase{
		{name: "2xx: success", path: "/issues/7/labels", auth: own, outcome: act.OutcomeSuccess, status: ora.StatusExecuted, reached: true},
		{name: "no answer: unknown", path: "/hang", auth: own, outcome: act.OutcomeUnknown, status: ora.StatusUnknown, errIs: isUnknown, reached: true},
		{name: "secret not configured: failure, not sent", path: "/x", auth: own, src: failingSource{ora.Invalid("connections(svc).auth.secret", "not set")},
			outcome: act.OutcomeFailure, status: ora.StatusFailed, errIs: isFailed},
		{name: "secret store throttled: retried, nothing recorded", path: "/x", auth: own, src: failingSource{ora.Errorf(ora.ETRANSIENT, "secretsmanager: throttled")},
			status: ora.StatusExecuting, errIs: isTransient},
	}
	for _, k := range authKinds {
		t.Run(k.name, func(t *testing.T) {
			kc := slices.Clone(cases)
			if w, ok := wrong[k.name]; ok {
				kc = append(kc, outcomeCase{name: "401 (a wrong secret): failure", path: "/x", auth: func(authKind, string) connect.Auth { return w },
					outcome: act.OutcomeFailure, status: ora.StatusFailed, errIs: isFailed, reached: true})
			} else {
				kc = append(kc,
					outcomeCase{name: "token endpoint refuses the client: failure, not sent", path: "/x", auth: own, tokens: http.StatusBadRequest,
						outcome: act.OutcomeFailure, status: ora.StatusFailed, errIs: isFailed},
					outcomeCase{name: "token endpoint fails: retried, nothing recorded", path: "/x", auth: own, tokens: http.StatusServiceUnavailable,
						status: ora.StatusExecuting, errIs: isTransient})
			}
			for _, tc := range kc {
				t.Run(tc.name, func(t *testing.T) {
					tokens := &mintingTokens{client: "ora-client", secret: "crash-client-secret", status: tc.tokens}
					tokSrv := httptest.NewServer(tokens)
					t.Cleanup(tokSrv.Close)
					tgt := &authTarget{want: k.accept(tokens)}
					srv := httptest.NewServer(tgt)
					t.Cleanup(srv.Close)
					src := tc.src
					if src == nil {
						src = connect.Literal{}
					}
					db := acttest.DB(t)
					svc := connectionActor(t, db, acttest.Once(db), srv.URL, tc.auth(k, tokSrv.URL+"/token"), src)
					acttest.Record(t, db, acttest.Decision("d1", "s1", connectionScope, connectionAction(t, tc.path)))
					_, err := svc.Act(context.Background(), "s1", "d1")
					if tc.errIs == nil && err != nil || tc.errIs != nil && !tc.errIs(err) {
						t.Fatalf("Act: %T %v", err, err)
					}
					w, lerr := act.LoadWave(context.Background(), db, "s1", "d1")
					if lerr != nil {
						t.Fatal(lerr)
					}
					switch {
					case tc.outcome == "" && len(w.Evidence) != 0:
						t.Errorf("evidence %+v, want none (the task retries)", w.Evidence)
					case tc.outcome != "" && (len(w.Evidence) != 1 || w.Evidence[0].Outcome != tc.outcome):
						t.Errorf("evidence %+v, want outcome %s", w.Evidence, tc.outcome)
					}
					if got := acttest.Status(t, db, "d1"); got != tc.status {
						t.Errorf("status %s, want %s", got, tc.status)
					}
					if _, hits := tgt.seen(); (hits > 0) != tc.reached {
						t.Errorf("the target got %d requests, want reached=%v", hits, tc.reached)
					}
					for _, s := range []string{"crash-", "ghp_", "oauth-minted-"} {
						if err != nil && strings.Contains(err.Error(), s) {
							t.Errorf("the error holds a secret: %v", err)
						}
					}
				})
			}
		})
	}
}

// A process that dies while an http.request through a connection runs (the
// request went out with its credential, the result was never saved) leaves
// the action's lock; once it expires the retry sends the request again
// with the same idempotency key and the credential (an OAuth 2.0 token
// from a new process's first fetch), so a target honouring the key applies
// it once, and the decision ends executed: for each auth kind.
func TestConnectionCrashMidAction(t *testing.T) {
	for _, k := range authKinds {
		t.Run(k.name, func(t *testing.T) {
			tokens := &mintingTokens{client: "ora-client", secret: "crash-client-secret"}
			tokSrv := httptest.NewServer(tokens)
			t.Cleanup(tokSrv.Close)
			tgt := &authTarget{want: k.accept(tokens)}
			srv := httptest.NewServer(tgt)
			t.Cleanup(srv.Close)
			db := acttest.DB(t)
			once, clk := clockedOnce(db)
			acttest.Record(t, db, acttest.Decision("d1", "s1", connectionScope, connectionAction(t, "/issues/7/labels")))

			ran := make(chan struct{})
			dead := connectionActor(t, db, dying(once, ran), srv.URL, k.auth(tokSrv.URL+"/token"), connect.Literal{})
			go func() { _, _ = dead.Act(context.Background(), "s1", "d1") }()
			<-ran
			// The restarted process: a new actor with connections of its own.
			svc := connectionActor(t, db, once, srv.URL, k.auth(tokSrv.URL+"/token"), connect.Literal{})
			if _, err := svc.Act(context.Background(), "s1", "d1"); !isTransient(err) {
				t.Fatalf("retry while the lock holds: %v, want a TransientError", err)
			}
			if keys, _ := tgt.seen(); len(keys) != 1 {
				t.Fatalf("the target accepted %v while the lock held, want the dead run's one request", keys)
			}
			clk.Add(time.Second + act.LockMargin + time.Second)
			res, err := svc.Act(context.Background(), "s1", "d1")
			if err != nil || res.Outcome != act.OutcomeSuccess {
				t.Fatalf("retry after the lock expired: %+v, %v", res, err)
			}
			keys, hits := tgt.seen()
			if !slices.Equal(keys, []string{"d1/0", "d1/0"}) || hits != 2 {
				t.Errorf("the target accepted keys %v of %d requests, want d1/0 twice, with the credential", keys, hits)
			}
			if got := acttest.Status(t, db, "d1"); got != ora.StatusExecuted {
				t.Errorf("status %s, want executed", got)
			}
			w, _ := act.LoadWave(context.Background(), db, "s1", "d1")
			if len(w.Evidence) != 1 || w.Evidence[0].Outcome != act.OutcomeSuccess || w.Evidence[0].Receipt == nil || w.Evidence[0].Receipt.StatusCode != http.StatusCreated {
				t.Errorf("evidence %+v, want one success answered 201", w.Evidence)
			}
		})
	}
}

// A process that dies while an mcp.call runs (the tool was called, the
// result never saved) leaves the action's lock; once it expires the retry
// calls the tool again with the same idempotency key in _meta, and the
// decision ends executed with the tool's result: over streamable HTTP and
// over stdio (a new server process for the new actor).
func TestMCPCallCrashMidAction(t *testing.T) {
	srv, url := mcptest.HTTP(t)
	argv, env := mcptest.Command()
	homes := []struct {
		name   string
		server mcp.ServerConfig
		keys   func() []string
	}{
		{"streamable HTTP", mcp.ServerConfig{Name: "tracker", URL: url, ActTools: []string{"add_label"}, TimeoutSeconds: 5}, func() []string {
			var keys []string
			for _, c := range srv.Calls() {
				if c.Tool == "add_label" {
					k, _ := c.Meta[mcptest.MetaKey].(string)
					keys = append(keys, k)
				}
			}
			return keys
		}},
		{"stdio", mcp.ServerConfig{Name: "tracker", Command: argv, Env: env, ActTools: []string{"add_label"}, TimeoutSeconds: 5}, nil},
	}
	for _, home := range homes {
		t.Run(home.name, func(t *testing.T) {
			db := acttest.DB(t)
			once, clk := clockedOnce(db)
			acttest.Record(t, db, acttest.Decision("d1", "s1", mcpScope, mcpAction(t, "tracker", "add_label", map[string]any{"number": 7, "label": "bug"})))
			ran := make(chan struct{})
			dead := mcpActorWith(t, dying(once, ran), db, home.server)
			go func() { _, _ = dead.Act(context.Background(), "s1", "d1") }()
			<-ran
			svc := mcpActorWith(t, once, db, home.server)
			if _, err := svc.Act(context.Background(), "s1", "d1"); !isTransient(err) {
				t.Fatalf("retry while the lock holds: %v, want a TransientError", err)
			}
			clk.Add(5*time.Second + act.LockMargin + time.Second)
			res, err := svc.Act(context.Background(), "s1", "d1")
			if err != nil || res.Outcome != act.OutcomeSuccess {
				t.Fatalf("retry after the lock expired: %+v, %v", res, err)
			}
			if home.keys != nil {
				if got := home.keys(); !slices.Equal(got, []string{"d1/0", "d1/0"}) {
					t.Errorf("the tool got keys %v, want d1/0 twice", got)
				}
			}
			w, _ := act.LoadWave(context.Background(), db, "s1", "d1")
			if len(w.Evidence) != 1 || w.Evidence[0].Outcome != act.OutcomeSuccess || w.Evidence[0].Receipt == nil ||
				!strings.Contains(w.Evidence[0].Receipt.Output, `"idempotency_key":"d1/0"`) {
				t.Errorf("evidence %+v, want one success whose result echoes the key d1/0", w.Evidence)
			}
			if got := acttest.Status(t, db, "d1"); got != ora.StatusExecuted {
				t.Errorf("status %s, want executed", got)
			}
		})
	}
}
