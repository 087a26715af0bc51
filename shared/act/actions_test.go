package act_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/smithy-go"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/ora"
)

func TestForbidden(t *testing.T) {
	patterns := []string{"secrets", "/etc/", "*.pem", "infra/*/prod"}
	cases := []struct {
		target string
		want   bool
	}{
		{"secrets", true},
		{"secrets/db.txt", true},
		{"out/secrets.txt", false},
		{"/etc/passwd", true},
		{"etc/passwd", true},
		{"keys/server.pem", true},
		{"infra/eu/prod/main.tf", true},
		{"infra/eu/dev/main.tf", false},
		{"https://api.example.com/secrets/1", true},
		{"https://api.example.com/v1/items", false},
		{"out/../secrets/x", true},
	}
	for _, tc := range cases {
		t.Run(tc.target, func(t *testing.T) {
			_, got := act.Forbidden(tc.target, patterns)
			if got != tc.want {
				t.Errorf("Forbidden(%q): got %v, want %v", tc.target, got, tc.want)
			}
		})
	}
}

func TestHTTPRequest(t *testing.T) {
	var gotSig, gotKey, gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotSig, gotKey, gotBody = r.Header.Get(act.HeaderSignature), r.Header.Get(act.HeaderIdempotencyKey), string(b)
		if r.URL.Path == "/slow" {
			<-r.Context().Done() // answers only after the client gave up
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	srvHost := strings.TrimPrefix(srv.URL, "http://")
	h := act.NewHTTPRequest(act.HTTPConfig{AllowedHosts: []string{srvHost}, SigningSecret: "k", TimeoutSeconds: 1}, nil)
	ctx := act.WithInvocation(context.Background(), act.Invocation{Key: "d1/0"})

	r, err := h.Run(ctx, json.RawMessage(`{"url":"`+srv.URL+`/ok","body":{"a":1}}`))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if r.StatusCode != http.StatusCreated || gotBody != `{"a":1}` || gotSig != act.Sign("k", []byte(`{"a":1}`)) || gotKey != "d1/0" {
		t.Errorf("got status %d body %q sig %q key %q, want 201, the body, its signature and d1/0", r.StatusCode, gotBody, gotSig, gotKey)
	}
	if !strings.HasPrefix(gotSig, "sha256=") {
		t.Errorf("signature: got %q, want sha256=...", gotSig)
	}

	bad := []struct {
		name, params, code string
	}{
		{"host not allowed", `{"url":"http://example.com/x"}`, ora.EFORBIDDEN},
		{"allowed host, another port", `{"url":"http://127.0.0.1:1/x"}`, ora.EFORBIDDEN},
		{"allowed host, default port", `{"url":"http://127.0.0.1/x"}`, ora.EFORBIDDEN},
		{"not http", `{"url":"file:///etc/passwd"}`, ora.EINVALID},
		{"no url", `{}`, ora.EINVALID},
		{"bad method", `{"url":"` + srv.URL + `","method":"TRACE"}`, ora.EINVALID},
		{"credentials in url", `{"url":"http://u:p@127.0.0.1/"}`, ora.EINVALID},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.Check(json.RawMessage(tc.params))
			if got := ora.ErrorCode(err); got != tc.code {
				t.Errorf("Check: got %q (%v), want %q", got, err, tc.code)
			}
		})
	}
	t.Run("a redirect is not followed", func(t *testing.T) {
		var elsewhere atomic.Int32
		other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
		defer other.Close()
		redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/stolen", http.StatusTemporaryRedirect)
		}))
		defer redirector.Close()
		h := act.NewHTTPRequest(act.HTTPConfig{AllowedHosts: []string{strings.TrimPrefix(redirector.URL, "http://"), strings.TrimPrefix(other.URL, "http://")}, SigningSecret: "k", TimeoutSeconds: 1}, nil)
		r, err := h.Run(ctx, json.RawMessage(`{"url":"`+redirector.URL+`/x","body":{"a":1}}`))
		if err == nil || r.StatusCode != http.StatusTemporaryRedirect {
			t.Errorf("Run: got status %d, %v; want the 307 as a failure", r.StatusCode, err)
		}
		if elsewhere.Load() != 0 {
			t.Errorf("the redirect's target received %d requests, want 0", elsewhere.Load())
		}
	})
	t.Run("timeout", func(t *testing.T) {
		_, err := h.Run(ctx, json.RawMessage(`{"url":"`+srv.URL+`/slow"}`))
		if err == nil || ora.ErrorCode(err) == ora.ETRANSIENT {
			t.Errorf("Run: got %v, want a failure (not retried)", err)
		}
	})
}

// Allow-list entries match scheme, host and port exactly; a missing port is
// the scheme's.
func TestAllowedBy(t *testing.T) {
	tests := []struct {
		entry, url string
		want       bool
	}{
		{"api.example.com", "https://api.example.com/x", true},
		{"api.example.com", "http://api.example.com/x", true},
		{"api.example.com", "https://API.example.com:443/x", true},
		{"api.example.com", "https://api.example.com:8443/x", false},
		{"api.example.com", "http://api.example.com:8080/x", false},
		{"api.example.com:8443", "https://api.example.com:8443/x", true},
		{"api.example.com:8443", "https://api.example.com/x", false},
		{"https://api.example.com", "https://api.example.com/x", true},
		{"https://api.example.com", "http://api.example.com:443/x", false},
		{"http://127.0.0.1:9000", "http://127.0.0.1:9000/hook", true},
		{"http://127.0.0.1:9000", "http://127.0.0.1:8080/decisions/d/approve", false},
		{"127.0.0.1", "http://127.0.0.1:8080/", false},
		{"[::1]:9000", "http://[::1]:9000/", true},
		{"api.example.com", "https://api.example.com.evil.test/", false},
		{"user@api.example.com", "https://api.example.com/", false},
		{"", "https://api.example.com/", false},
	}
	for _, tt := range tests {
		t.Run(tt.entry+" "+tt.url, func(t *testing.T) {
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			if got := act.AllowedBy(tt.entry, u); got != tt.want {
				t.Errorf("AllowedBy(%q, %s) = %v, want %v", tt.entry, tt.url, got, tt.want)
			}
		})
	}
}

func TestObjectPutKeys(t *testing.T) {
	o := act.NewObjectPut(act.Folder{Root: t.TempDir()}, []string{"out/"})
	cases := []struct{ key, code string }{
		{"out/a.txt", ""},
		{"out/../etc/passwd", ora.EINVALID},
		{"/out/a", ora.EINVALID},
		{"out//a", ora.EINVALID},
		{"in/a", ora.EFORBIDDEN},
		{"", ora.EINVALID},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			_, err := o.Check(acttest.Params(t, map[string]string{"key": tc.key, "body": "x"}))
			if got := ora.ErrorCode(err); got != tc.code {
				t.Errorf("Check(%q): got %q (%v), want %q", tc.key, got, err, tc.code)
			}
		})
	}
}

// fakeS3 and fakeSNS are fakes with function fields.
type fakeS3 struct {
	put  func(*s3.PutObjectInput) (*s3.PutObjectOutput, error)
	head func(*s3.HeadObjectInput) (*s3.HeadObjectOutput, error)
}

func (f fakeS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	return f.put(in)
}

func (f fakeS3) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	return f.head(in)
}

func TestS3(t *testing.T) {
	var meta map[string]string
	store := act.S3{Bucket: "b", Client: fakeS3{
		put: func(in *s3.PutObjectInput) (*s3.PutObjectOutput, error) {
			meta = in.Metadata
			return &s3.PutObjectOutput{VersionId: aws.String("v1")}, nil
		},
		head: func(in *s3.HeadObjectInput) (*s3.HeadObjectOutput, error) {
			if aws.ToString(in.Key) != "out/a" {
				return nil, &smithy.GenericAPIError{Code: "NotFound"}
			}
			return &s3.HeadObjectOutput{Metadata: meta, ContentLength: aws.Int64(2)}, nil
		},
	}}
	ctx := context.Background()
	info, err := store.PutObject(ctx, "out/a", []byte("hi"), "text/plain")
	if err != nil || info.Version != "v1" || info.Digest != ora.Digest([]byte("hi")) {
		t.Fatalf("PutObject: got %+v, %v", info, err)
	}
	head, err := store.HeadObject(ctx, "out/a")
	if err != nil || head.Digest != info.Digest {
		t.Errorf("HeadObject: got %+v, %v, want digest %s", head, err, info.Digest)
	}
	if _, err := store.HeadObject(ctx, "out/missing"); ora.ErrorCode(err) != ora.ENOTFOUND {
		t.Errorf("HeadObject missing: got %v, want ENOTFOUND", err)
	}
}

type fakeSNS struct {
	publish func(*sns.PublishInput) (*sns.PublishOutput, error)
}

func (f fakeSNS) Publish(_ context.Context, in *sns.PublishInput, _ ...func(*sns.Options)) (*sns.PublishOutput, error) {
	return f.publish(in)
}

func TestSNSNotify(t *testing.T) {
	var got *sns.PublishInput
	n := act.NewSNSNotify(fakeSNS{publish: func(in *sns.PublishInput) (*sns.PublishOutput, error) {
		got = in
		return &sns.PublishOutput{MessageId: aws.String("m-1")}, nil
	}}, "arn:aws:sns:eu-west-1:1:t")
	r, err := n.Run(context.Background(), json.RawMessage(`{"subject":"s","message":"m"}`))
	if err != nil || r.ID != "m-1" || aws.ToString(got.TopicArn) != "arn:aws:sns:eu-west-1:1:t" || aws.ToString(got.Message) != "m" {
		t.Errorf("Run: got %+v, %v, input %+v", r, err, got)
	}
	if _, err := n.Run(context.Background(), json.RawMessage(`{"subject":"s"}`)); ora.ErrorField(err) != "notify.parameters.message" {
		t.Errorf("Run without message: got %v, want EINVALID on the message", err)
	}
}

func TestCommitmentActionsAreIdempotent(t *testing.T) {
	db := acttest.DB(t)
	ctx := act.WithInvocation(context.Background(), act.Invocation{SignalID: "s1", DecisionID: "d1", Index: 0})
	open, closer := act.NewCommitmentOpen(db), act.NewCommitmentClose(db)
	for i := range 2 {
		if r, err := open.Run(ctx, json.RawMessage(`{"id":"c1","title":"t"}`)); err != nil || r.ID != "c1" {
			t.Fatalf("open #%d: got %+v, %v", i, r, err)
		}
	}
	for i := range 2 {
		if _, err := closer.Run(ctx, json.RawMessage(`{"id":"c1"}`)); err != nil {
			t.Fatalf("close #%d: %v", i, err)
		}
	}
	other := act.WithInvocation(context.Background(), act.Invocation{SignalID: "s2", DecisionID: "d2"})
	if _, err := closer.Run(other, json.RawMessage(`{"id":"c1"}`)); ora.ErrorCode(err) != ora.ECONFLICT {
		t.Errorf("close by another decision: got %v, want ECONFLICT", err)
	}
	if _, err := open.Run(other, json.RawMessage(`{"id":"c1","title":"t"}`)); err == nil {
		t.Errorf("open of another signal's commitment: got nil, want an error")
	}
}

type fakeSecrets struct {
	get func(*secretsmanager.GetSecretValueInput) (*secretsmanager.GetSecretValueOutput, error)
}

func (f fakeSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	return f.get(in)
}

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{
		act.EnvConfig:           `{"http":{"allowed_hosts":["api.example.com"],"timeout_seconds":3},"object":{"allowed_prefixes":["out/"]}}`,
		act.EnvTopicARN:         "arn:topic",
		act.EnvBucket:           "bucket",
		act.EnvSigningSecretARN: "arn:secret",
	}
	secrets := fakeSecrets{get: func(in *secretsmanager.GetSecretValueInput) (*secretsmanager.GetSecretValueOutput, error) {
		if aws.ToString(in.SecretId) != "arn:secret" {
			return nil, errors.New("unknown secret")
		}
		return &secretsmanager.GetSecretValueOutput{SecretString: aws.String("shh")}, nil
	}}
	c, err := act.ConfigFromEnv(context.Background(), func(k string) string { return env[k] }, secrets)
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.AllowedHosts[0] != "api.example.com" || c.HTTP.Timeout() != 3*time.Second || c.HTTP.SigningSecret != "shh" ||
		c.Object.AllowedPrefixes[0] != "out/" || c.Object.Bucket != "bucket" || c.Notify.TopicARN != "arn:topic" {
		t.Errorf("config: got %+v", c)
	}
	env[act.EnvConfig] = `{"http":`
	if _, err := act.ConfigFromEnv(context.Background(), func(k string) string { return env[k] }, secrets); ora.ErrorField(err) != act.EnvConfig {
		t.Errorf("bad JSON: got %v, want EINVALID on %s", err, act.EnvConfig)
	}
}
