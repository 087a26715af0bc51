package connect_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"

	"github.com/ora-runtime/ora/shared/connect"
	"github.com/ora-runtime/ora/shared/ora"
)

// seen records what a target received.
type seen struct {
	mu   sync.Mutex
	reqs []*http.Request
	body []string
}

func (s *seen) add(r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r)
	s.body = append(s.body, string(b))
}

func (s *seen) n() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

func target(t *testing.T, status func(r *http.Request) int) (*httptest.Server, *seen) {
	t.Helper()
	s := &seen{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.add(r)
		w.WriteHeader(status(r))
	}))
	t.Cleanup(srv.Close)
	return srv, s
}

func ok(*http.Request) int { return http.StatusOK }

func mustSet(t *testing.T, cfgs []connect.Config, opts ...func(*connect.Options)) *connect.Set {
	t.Helper()
	s, err := connect.New(cfgs, connect.Literal{}, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func TestAuthKinds(t *testing.T) {
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("ora-bot:pa55-w0rd-basic"))
	cases := []struct {
		name       string
		auth       connect.Auth
		header     string
		wantHeader string
	}{
		{"bearer", connect.Auth{Kind: connect.KindBearer, Secret: "ghp_bearer-secret-1"}, "Authorization", "Bearer ghp_bearer-secret-1"},
		{"api_key", connect.Auth{Kind: connect.KindAPIKey, Header: "X-Api-Key", Secret: "key-secret-2"}, "X-Api-Key", "key-secret-2"},
		{"basic", connect.Auth{Kind: connect.KindBasic, Username: "ora-bot", Secret: "pa55-w0rd-basic"}, "Authorization", basic},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, got := target(t, ok)
			set := mustSet(t, []connect.Config{{Name: "svc", URL: srv.URL + "/api/v3", Auth: tc.auth}})
			u, err := set.Resolve("svc", "/repos/o/r/issues/1/labels", url.Values{"per_page": {"5"}})
			if err != nil {
				t.Fatal(err)
			}
			cl, err := set.Client("svc", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := cl.Post(u.String(), "application/json", strings.NewReader(`{"labels":["bug"]}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got.n() != 1 {
				t.Fatalf("target got %d requests, want 1", got.n())
			}
			r := got.reqs[0]
			if h := r.Header.Get(tc.header); h != tc.wantHeader {
				t.Errorf("%s = %q, want %q", tc.header, h, tc.wantHeader)
			}
			if r.URL.Path != "/api/v3/repos/o/r/issues/1/labels" || r.URL.RawQuery != "per_page=5" {
				t.Errorf("request went to %s?%s", r.URL.Path, r.URL.RawQuery)
			}
			if got.body[0] != `{"labels":["bug"]}` {
				t.Errorf("body %q", got.body[0])
			}
		})
	}
}

func TestOutsideBaseIsRefusedBeforeSending(t *testing.T) {
	srv, got := target(t, ok)
	set := mustSet(t, []connect.Config{{Name: "svc", URL: srv.URL + "/api/", Auth: connect.Auth{Kind: connect.KindBearer, Secret: "bearer-secret-3"}}})
	c, _ := set.Lookup("svc")
	for _, p := range []string{"../admin", "a/../../admin", "%2e%2e/admin", "a%2f..%2f..%2fadmin", "//evil.example/x", "http://evil.example/", "x?y=1", "a\\..\\b"} {
		t.Run("resolve "+p, func(t *testing.T) {
			if u, err := c.Resolve(p, nil); err == nil {
				t.Errorf("Resolve(%q) = %s, want a refusal", p, u)
			}
		})
	}
	cl := c.Client(nil)
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("the other server was reached") }))
	defer other.Close()
	for _, raw := range []string{srv.URL + "/admin", srv.URL + "/api/%2e%2e/admin", other.URL + "/api/x", strings.Replace(srv.URL, "http:", "https:", 1) + "/api/x"} {
		t.Run("client "+raw, func(t *testing.T) {
			resp, err := cl.Get(raw)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("GET %s answered %d, want a refusal", raw, resp.StatusCode)
			}
			if !errors.Is(err, connect.ErrOutside) {
				t.Errorf("error %v, want ErrOutside", err)
			}
		})
	}
	if got.n() != 0 {
		t.Errorf("the target got %d requests, want 0", got.n())
	}
}

// tokenServer is an OAuth 2.0 token endpoint minting token-<n>.
type tokenServer struct {
	mu      sync.Mutex
	issued  int
	expires int64
	forms   []url.Values
	auths   []string
}

func (ts *tokenServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	ts.mu.Lock()
	ts.issued++
	n := ts.issued
	ts.forms = append(ts.forms, r.PostForm)
	ts.auths = append(ts.auths, r.Header.Get("Authorization"))
	ts.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "oauth-token-" + string(rune('0'+n)) + "-minted", "token_type": "Bearer", "expires_in": ts.expires})
}

func TestClientCredentials(t *testing.T) {
	ts := &tokenServer{expires: 3600}
	tokens := httptest.NewServer(ts)
	defer tokens.Close()
	var mu sync.Mutex
	refuse := map[string]bool{}
	srv, got := target(t, func(r *http.Request) int {
		mu.Lock()
		defer mu.Unlock()
		if refuse[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")] {
			return http.StatusUnauthorized
		}
		return http.StatusOK
	})
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	secrets := ora.NewSecrets()
	set := mustSet(t, []connect.Config{{Name: "svc", URL: srv.URL, Auth: connect.Auth{
		Kind: connect.KindClientCredentials, TokenURL: tokens.URL + "/oauth2/token", ClientID: "ora-client", Secret: "client-secret-4", Scopes: []string{"issues:write", "labels"},
	}}}, func(o *connect.Options) { o.Now, o.Secrets = clock, secrets })
	cl, _ := set.Client("svc", nil)
	post := func() int {
		t.Helper()
		resp, err := cl.Post(srv.URL+"/x", "text/plain", strings.NewReader("body"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	lastAuth := func() string {
		got.mu.Lock()
		defer got.mu.Unlock()
		return got.reqs[len(got.reqs)-1].Header.Get("Authorization")
	}

	t.Run("the token is fetched once and cached", func(t *testing.T) {
		post()
		post()
		if ts.issued != 1 {
			t.Errorf("tokens issued %d, want 1", ts.issued)
		}
		if a := lastAuth(); a != "Bearer oauth-token-1-minted" {
			t.Errorf("Authorization %q", a)
		}
		f := ts.forms[0]
		if f.Get("grant_type") != "client_credentials" || f.Get("scope") != "issues:write labels" {
			t.Errorf("token form %v", f)
		}
		if want := "Basic " + base64.StdEncoding.EncodeToString([]byte("ora-client:client-secret-4")); ts.auths[0] != want {
			t.Errorf("token request Authorization %q, want %q", ts.auths[0], want)
		}
		if _, found := secrets.Find([]byte("x oauth-token-1-minted x")); !found {
			t.Error("the minted token is not in the secrets registry")
		}
	})
	t.Run("an expired token is fetched again", func(t *testing.T) {
		mu.Lock()
		now = now.Add(3590 * time.Second) // inside the refresh margin
		mu.Unlock()
		post()
		if ts.issued != 2 || lastAuth() != "Bearer oauth-token-2-minted" {
			t.Errorf("issued %d, last Authorization %q; want a second token", ts.issued, lastAuth())
		}
	})
	t.Run("a 401 refreshes the token once and resends the body", func(t *testing.T) {
		mu.Lock()
		refuse["oauth-token-2-minted"] = true
		mu.Unlock()
		before := got.n()
		if code := post(); code != http.StatusOK {
			t.Errorf("status %d, want 200 after the refresh", code)
		}
		if got.n()-before != 2 || ts.issued != 3 {
			t.Errorf("target got %d requests and %d tokens were issued; want 2 and 3", got.n()-before, ts.issued)
		}
		if got.body[len(got.body)-1] != "body" {
			t.Errorf("resent body %q", got.body[len(got.body)-1])
		}
	})
	t.Run("a second 401 is the answer: no loop", func(t *testing.T) {
		mu.Lock()
		refuse["oauth-token-3-minted"], refuse["oauth-token-4-minted"] = true, true
		mu.Unlock()
		before := got.n()
		if code := post(); code != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", code)
		}
		if got.n()-before != 2 || ts.issued != 4 {
			t.Errorf("target got %d requests, %d tokens issued; want 2 and 4", got.n()-before, ts.issued)
		}
	})
}

func TestTokenEndpointRefusal(t *testing.T) {
	cases := []struct{ name, answer, want string }{
		{"an error code", `{"error":"invalid_client"}`, "invalid_client"},
		{"free text echoing the secret", `{"error":"client-secret-5 is wrong"}`, "answered 400"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(tc.answer))
			}))
			defer tokens.Close()
			srv, got := target(t, ok)
			set := mustSet(t, []connect.Config{{Name: "svc", URL: srv.URL, Auth: connect.Auth{Kind: connect.KindClientCredentials, TokenURL: tokens.URL, ClientID: "c", Secret: "client-secret-5"}}})
			cl, _ := set.Client("svc", nil)
			_, err := cl.Get(srv.URL + "/x")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to say %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "client-secret-5") {
				t.Errorf("the error holds the client secret: %v", err)
			}
			if got.n() != 0 {
				t.Errorf("target got %d requests, want 0", got.n())
			}
		})
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		c    connect.Config
		want string // the key the error names; "" means valid
	}{
		{"bearer", connect.Config{Name: "github", URL: "https://api.github.com", Auth: connect.Auth{Kind: "bearer", Secret: "s"}}, ""},
		{"bad name", connect.Config{Name: "Git Hub", URL: "https://api.github.com", Auth: connect.Auth{Kind: "bearer", Secret: "s"}}, "connections.name"},
		{"not http", connect.Config{Name: "x", URL: "ftp://h/", Auth: connect.Auth{Kind: "bearer", Secret: "s"}}, "connections(x).url"},
		{"query in url", connect.Config{Name: "x", URL: "https://h/?a=1", Auth: connect.Auth{Kind: "bearer", Secret: "s"}}, "connections(x).url"},
		{"credentials in url", connect.Config{Name: "x", URL: "https://u:p@h/", Auth: connect.Auth{Kind: "bearer", Secret: "s"}}, "connections(x).url"},
		{"unknown kind", connect.Config{Name: "x", URL: "https://h", Auth: connect.Auth{Kind: "digest", Secret: "s"}}, "connections(x).auth.kind"},
		{"api_key without header", connect.Config{Name: "x", URL: "https://h", Auth: connect.Auth{Kind: "api_key", Secret: "s"}}, "connections(x).auth.header"},
		{"basic without username", connect.Config{Name: "x", URL: "https://h", Auth: connect.Auth{Kind: "basic", Secret: "s"}}, "connections(x).auth.username"},
		{"oauth2 without token_url", connect.Config{Name: "x", URL: "https://h", Auth: connect.Auth{Kind: "oauth2_client_credentials", ClientID: "c", Secret: "s"}}, "connections(x).auth.token_url"},
		{"oauth2 without client_id", connect.Config{Name: "x", URL: "https://h", Auth: connect.Auth{Kind: "oauth2_client_credentials", TokenURL: "https://h/t", Secret: "s"}}, "connections(x).auth.client_id"},
		{"no secret", connect.Config{Name: "x", URL: "https://h", Auth: connect.Auth{Kind: "bearer"}}, "connections(x).auth.secret"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate(true)
			if got := ora.ErrorField(err); got != tc.want {
				t.Errorf("Validate() = %v (field %q), want field %q", err, got, tc.want)
			}
		})
	}
}

func TestResolveSecret(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"GITHUB_TOKEN": "from-the-env"}
	cases := []struct{ ref, want string }{
		{"literal-value", "literal-value"},
		{"${GITHUB_TOKEN}", "from-the-env"},
		{"file:" + file, "from-a-file"},
		{"${UNSET}", ""},
		{"file:" + filepath.Join(dir, "missing"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.ref, func(t *testing.T) {
			got, err := connect.ResolveSecret(tc.ref, func(k string) string { return env[k] })
			if got != tc.want || (tc.want == "") != (err != nil) {
				t.Errorf("ResolveSecret(%q) = %q, %v; want %q", tc.ref, got, err, tc.want)
			}
		})
	}
}

// fakeSM is a Secrets Manager fake answering from a map.
type fakeSM struct {
	values map[string]string
	calls  int
	err    error
}

func (f *fakeSM) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(f.values[aws.ToString(in.SecretId)])}, nil
}

func TestSecretsManagerSource(t *testing.T) {
	arn := "arn:aws:secretsmanager:us-east-1:123456789012:secret:ora/connection/github-AbCdEf"
	sm := &fakeSM{values: map[string]string{arn: "ghp_from-secrets-manager"}}
	reg := ora.NewSecrets()
	src := connect.NewSecretsManager(sm, time.Minute, reg)
	c := connect.Config{Name: "github", SecretARN: arn}
	for i := 0; i < 3; i++ {
		v, err := src.Secret(context.Background(), c)
		if err != nil || v != "ghp_from-secrets-manager" {
			t.Fatalf("Secret = %q, %v", v, err)
		}
	}
	if sm.calls != 1 {
		t.Errorf("GetSecretValue called %d times within the TTL, want 1", sm.calls)
	}
	if _, found := reg.Find([]byte("ghp_from-secrets-manager")); !found {
		t.Error("the secret read is not registered")
	}
	t.Run("throttling is transient", func(t *testing.T) {
		sm2 := &fakeSM{err: &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"}}
		_, err := connect.NewSecretsManager(sm2, 0, nil).Secret(context.Background(), c)
		if ora.ErrorCode(err) != ora.ETRANSIENT {
			t.Errorf("error %v, want ETRANSIENT", err)
		}
	})
	t.Run("no ARN is invalid", func(t *testing.T) {
		_, err := src.Secret(context.Background(), connect.Config{Name: "x"})
		if ora.ErrorCode(err) != ora.EINVALID {
			t.Errorf("error %v, want EINVALID", err)
		}
	})
}

func TestFromEnv(t *testing.T) {
	arn := "arn:aws:secretsmanager:us-east-1:123456789012:secret:ora-github-AbCdEf"
	cases := []struct {
		name, env string
		want      int
		field     string
	}{
		{"unset", "", 0, ""},
		{"one", `[{"name":"github","url":"https://api.github.com","auth":{"kind":"bearer"},"secret_arn":"` + arn + `"}]`, 1, ""},
		{"a secret in the environment", `[{"name":"github","url":"https://api.github.com","auth":{"kind":"bearer","secret":"ghp_x"},"secret_arn":"` + arn + `"}]`, 0, connect.EnvConnections},
		{"no arn", `[{"name":"github","url":"https://api.github.com","auth":{"kind":"bearer"}}]`, 0, connect.EnvConnections},
		{"not JSON", `{`, 0, connect.EnvConnections},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := connect.FromEnv(func(string) string { return tc.env })
			if len(got) != tc.want || ora.ErrorField(err) != tc.field {
				t.Errorf("FromEnv = %d connections, %v; want %d, field %q", len(got), err, tc.want, tc.field)
			}
		})
	}
}
