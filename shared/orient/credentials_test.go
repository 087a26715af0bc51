package orient_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/orient/orienttest"
)

func TestURLCredentialsRedact(t *testing.T) {
	tests := []struct {
		name, url, want string
		registered      []string // values the registry must now hold
		unheld          bool     // the URL holds a marker nobody gave a credential for
	}{
		{name: "query token", url: "https://api.example.com/v1/status?token=canary-tok-0001&verbose=1",
			want: "https://api.example.com/v1/status?token=[redacted:url:api.example.com:token]&verbose=1", registered: []string{"canary-tok-0001"}},
		{name: "escaped query key", url: "https://api.example.com/s?X-Amz-Signature=abc%2Fdef0123",
			want: "https://api.example.com/s?X-Amz-Signature=[redacted:url:api.example.com:X-Amz-Signature]", registered: []string{"abc%2Fdef0123", "abc/def0123"}},
		{name: "user and password", url: "https://ops:canary-pass-0002@api.example.com:8443/health",
			want: "https://api.example.com:8443/health", registered: []string{"canary-pass-0002"}},
		{name: "a token as the user", url: "https://canary-user-token-0003@git.example.com/o/r.git",
			want: "https://git.example.com/o/r.git", registered: []string{"canary-user-token-0003"}},
		{name: "nothing to redact", url: "https://api.example.com/v1/status?page=2", want: "https://api.example.com/v1/status?page=2"},
		{name: "already redacted", url: "https://api.example.com/s?token=[redacted:url:api.example.com:token]",
			want: "https://api.example.com/s?token=[redacted:url:api.example.com:token]", unheld: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			secrets := ora.NewSecrets()
			c := orient.NewURLCredentials(secrets)
			got := c.Redact(tc.url)
			if got != tc.want {
				t.Errorf("Redact = %q, want %q", got, tc.want)
			}
			for _, v := range tc.registered {
				if _, found := secrets.Find([]byte(v)); !found {
					t.Errorf("%q is not in the registry", v)
				}
			}
			real, ok := c.Real(got)
			if ok == tc.unheld || (ok && real != tc.url) {
				t.Errorf("Real(%q) = %q, %v; want %q, %v", got, real, ok, tc.url, !tc.unheld)
			}
		})
	}
	t.Run("a marker this process does not hold", func(t *testing.T) {
		target := "https://api.example.com/s?token=[redacted:url:api.example.com:token]"
		if _, ok := orient.NewURLCredentials(nil).Real(target); ok {
			t.Errorf("Real(%q) resolved a credential nobody gave", target)
		}
	})
}

// TestProfileURLCredentials: a profile version and a proposal carrying
// credentials in their http URLs are stored redacted, and the fetcher GETs
// the real URL while its fact, and its errors, name the redacted one.
func TestProfileURLCredentials(t *testing.T) {
	const token = "canary-profile-token-7a1f"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("token") != token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/down" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"status":"green"}`))
	}))
	defer srv.Close()
	ctx := context.Background()
	store := orienttest.NewStore()
	secrets := ora.NewSecrets()
	opts := func(o *orient.Options) {
		o.Secrets = secrets
		o.Sources = map[string]orient.Source{orient.FamilyHTTP: orient.HTTP{Allow: []string{srv.URL + "/"}}}
	}
	profiles := orient.NewProfiles(store, opts)
	p := orient.DefaultProfile()
	p.Limits.HTTPAllow = []string{srv.URL + "/"}
	p.Rules = append(p.Rules, httpRule(srv.URL+"/status?token="+token, srv.URL+"/down?token="+token))
	if _, err := profiles.Put(ctx, p); err != nil {
		t.Fatal(err)
	}
	prop := proposal("more-status", p, func(q *ora.ProfileProposal) {
		r := httpRule(srv.URL + "/eu/status?token=" + token)
		r.ID = "web-eu"
		q.Change.Rules = append(p.Rules, r)
	})
	if _, err := profiles.Propose(ctx, prop, orient.Principal{Subject: "alice", Namespace: "main"}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{orient.ProfileKey(p.ID), orient.ProposalKey(prop.ID)} {
		es, err := store.Entries(ctx, key)
		if err != nil || len(es) == 0 {
			t.Fatalf("entries of %s: %v", key, err)
		}
		for _, e := range es {
			if strings.Contains(string(e.Body), token) {
				t.Errorf("the token is in %s's %s entry: %s", key, e.Kind, e.Body)
			}
		}
	}
	cur, err := profiles.Current(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	var pred orient.HTTPPredicate
	_ = json.Unmarshal(cur.Rules[len(cur.Rules)-1].Predicate, &pred)
	if len(pred.URLs) != 2 || !strings.Contains(pred.URLs[0], ora.Marker("url:"+strings.TrimPrefix(srv.URL, "http://")+":token")) {
		t.Fatalf("stored URLs %v, want the redacted forms", pred.URLs)
	}
	f := orient.NewFetcher(store, opts)
	job := func(u string) orient.Job {
		return orient.Job{ID: "web.00000", Family: orient.FamilyHTTP, Kind: "get", Target: u,
			Weights: &orient.Weights{Priority: 1}, Params: orient.Params{AsOf: t0, Limit: 1}}
	}
	facts, err := f.Observe(ctx, "s", job(pred.URLs[0]))
	if err != nil {
		t.Fatalf("Observe: %v (the fetcher did not GET the real URL)", err)
	}
	b, _ := json.Marshal(facts)
	if !strings.Contains(string(b), "green") || strings.Contains(string(b), token) {
		t.Errorf("fact %s: want the answer, without the token", b)
	}
	if _, err := f.Observe(ctx, "s", job(pred.URLs[1])); ora.ErrorCode(err) != ora.ETRANSIENT || strings.Contains(err.Error(), token) {
		t.Errorf("Observe /down: %v, want ETRANSIENT naming the redacted URL", err)
	}
	// Another process (a restart, another Lambda) holds no credential.
	other := orient.NewFetcher(store, func(o *orient.Options) {
		o.Sources = map[string]orient.Source{orient.FamilyHTTP: orient.HTTP{Allow: []string{srv.URL + "/"}}}
	})
	if _, err := other.Observe(ctx, "s", job(pred.URLs[0])); ora.ErrorCode(err) != ora.EINVALID || !strings.Contains(err.Error(), "does not hold the credential") {
		t.Errorf("Observe in another process: %v, want EINVALID saying the credential is not held", err)
	}
}
