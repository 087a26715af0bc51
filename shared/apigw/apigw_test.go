package apigw

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/ora-runtime/ora/shared/apitoken"
)

var (
	key       = []byte("0123456789abcdef0123456789abcdef")
	now       = time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	methodArn = "arn:aws:execute-api:us-east-1:000000000000:abc123/prod/GET/signals/sig-1"
)

// A REST API proxy event (payload 1.0) as API Gateway v1 sends it after the
// TOKEN authorizer allowed it.
const v1Event = `{
  "resource": "/signals/{id}", "path": "/signals/sig-1", "httpMethod": "GET",
  "headers": {"Authorization": "Bearer x", "X-Request-Id": "r-1"},
  "multiValueHeaders": {"Accept": ["application/json", "text/plain"]},
  "queryStringParameters": {"limit": "5"},
  "multiValueQueryStringParameters": {"limit": ["5"], "kind": ["a", "b"]},
  "pathParameters": {"id": "sig-1"},
  "requestContext": {"requestId": "req-1", "stage": "prod", "domainName": "abc123.execute-api.localhost.localstack.cloud",
    "identity": {"sourceIp": "10.0.0.7"},
    "authorizer": {"principalId": "e2e", "sub": "e2e", "scope": "orientation.read", "ora_namespace": "team-a", "integrationLatency": 3}},
  "body": "eyJhIjoxfQ==", "isBase64Encoded": true
}`

func invoke(t *testing.T, h func(context.Context, json.RawMessage) (any, error), event string) ([]byte, error) {
	t.Helper()
	return lambda.NewHandler(h).Invoke(context.Background(), []byte(event))
}

func TestDispatchPayload10(t *testing.T) {
	var got events.APIGatewayV2HTTPRequest
	h := Dispatch(func(_ context.Context, in events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		got = in
		return events.APIGatewayV2HTTPResponse{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json"},
			Body: `{"ok":true}`, Cookies: []string{"a=1"}}, nil
	}, nil)
	out, err := invoke(t, h, v1Event)
	if err != nil {
		t.Fatal(err)
	}
	if got.RequestContext.HTTP.Method != "GET" || got.RawPath != "/signals/sig-1" || got.PathParameters["id"] != "sig-1" ||
		got.RequestContext.HTTP.SourceIP != "10.0.0.7" || got.RequestContext.RequestID != "req-1" || got.Body != "eyJhIjoxfQ==" || !got.IsBase64Encoded {
		t.Errorf("request %+v", got)
	}
	if got.RawQueryString != "kind=a&kind=b&limit=5" {
		t.Errorf("query %q", got.RawQueryString)
	}
	if got.Headers["accept"] != "application/json,text/plain" || got.Headers["x-request-id"] != "r-1" {
		t.Errorf("headers %v", got.Headers)
	}
	claims := got.RequestContext.Authorizer.JWT.Claims
	if claims["sub"] != "e2e" || claims["scope"] != "orientation.read" || claims["ora_namespace"] != "team-a" {
		t.Errorf("claims %v", claims)
	}
	if _, ok := claims["principalId"]; ok {
		t.Errorf("principalId leaked into the claims: %v", claims)
	}
	var resp map[string]any
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	if resp["statusCode"] != float64(201) || resp["body"] != `{"ok":true}` || !strings.Contains(string(out), `"Set-Cookie":["a=1"]`) {
		t.Errorf("response %s", out)
	}
	if _, ok := resp["cookies"]; ok {
		t.Errorf("a payload 1.0 response carries the 2.0 cookies field: %s", out)
	}
}

func TestDispatchPayload20AndOthers(t *testing.T) {
	calls := 0
	h := Dispatch(func(_ context.Context, in events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		calls++
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: in.RawPath}, nil
	}, nil)
	out, err := invoke(t, h, `{"version":"2.0","rawPath":"/waves/w","requestContext":{"http":{"method":"GET"}}}`)
	if err != nil || !strings.Contains(string(out), `"body":"/waves/w"`) || calls != 1 {
		t.Errorf("2.0: %s, %v", out, err)
	}
	if _, err := invoke(t, h, `{"type":"TOKEN","authorizationToken":"Bearer x","methodArn":"`+methodArn+`"}`); err == nil || !strings.Contains(err.Error(), "no token key") {
		t.Errorf("authorizer event without an authorizer: %v", err)
	}
	if _, err := invoke(t, h, `{"Records":[]}`); err == nil {
		t.Error("an S3 event was served")
	}
	if calls != 1 {
		t.Errorf("handler called %d times, want 1", calls)
	}
}

func TestAuthorizer(t *testing.T) {
	a := &Authorizer{Key: func(context.Context) ([]byte, error) { return key, nil }, Now: func() time.Time { return now }}
	good, err := apitoken.Sign(key, apitoken.Claims{Subject: "e2e", Scope: "ora.approve orientation.read", Namespace: "team-a"}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.Handle(context.Background(), events.APIGatewayCustomAuthorizerRequest{Type: "TOKEN", AuthorizationToken: "Bearer " + good, MethodArn: methodArn})
	if err != nil {
		t.Fatalf("Handle: %v", err)
	}
	st := resp.PolicyDocument.Statement
	if resp.PrincipalID != "e2e" || len(st) != 1 || st[0].Effect != "Allow" ||
		strings.Join(st[0].Resource, ",") != "arn:aws:execute-api:us-east-1:000000000000:abc123/prod/*" {
		t.Errorf("policy %+v", resp)
	}
	if resp.Context["sub"] != "e2e" || resp.Context["scope"] != "ora.approve orientation.read" || resp.Context["ora_namespace"] != "team-a" {
		t.Errorf("context %v", resp.Context)
	}
	expired, _ := apitoken.Sign(key, apitoken.Claims{Subject: "e2e"}, now.Add(-2*time.Hour), time.Hour)
	for name, header := range map[string]string{
		"no bearer":     good,
		"empty bearer":  "Bearer ",
		"forged":        "Bearer " + good[:len(good)-2] + "xx",
		"expired":       "Bearer " + expired,
		"not a JWT":     "Bearer hello",
		"basic instead": "Basic dXNlcjpwYXNz",
	} {
		if _, err := a.Handle(context.Background(), events.APIGatewayCustomAuthorizerRequest{Type: "TOKEN", AuthorizationToken: header, MethodArn: methodArn}); !errors.Is(err, ErrUnauthorized) || err.Error() != "Unauthorized" {
			t.Errorf("%s: %v, want Unauthorized", name, err)
		}
	}
	broken := &Authorizer{Key: func(context.Context) ([]byte, error) { return nil, errors.New("secrets manager down") }}
	if _, err := broken.Handle(context.Background(), events.APIGatewayCustomAuthorizerRequest{AuthorizationToken: "Bearer " + good, MethodArn: methodArn}); err == nil || errors.Is(err, ErrUnauthorized) {
		t.Errorf("key failure: %v, want an error other than Unauthorized (a 500, not a 401)", err)
	}
}

func TestStageARN(t *testing.T) {
	for in, want := range map[string]string{
		methodArn: "arn:aws:execute-api:us-east-1:000000000000:abc123/prod",
		"arn:aws-cn:execute-api:cn-north-1:1:api/v1/POST/webhooks/github": "arn:aws-cn:execute-api:cn-north-1:1:api/v1",
		"arn:aws:lambda:us-east-1:1:function:x":                           "",
		"arn:aws:execute-api:us-east-1:1:api":                             "",
		"nonsense":                                                        "",
	} {
		got, err := StageARN(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("StageARN(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

type countingSecrets struct{ calls int }

func (c *countingSecrets) GetSecretValue(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	c.calls++
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(string(key))}, nil
}

func TestSecretKeyCaches(t *testing.T) {
	c := &countingSecrets{}
	s := &SecretKey{Client: c, ARN: "arn:secret", TTL: time.Hour}
	for range 3 {
		k, err := s.Key(context.Background())
		if err != nil || string(k) != string(key) {
			t.Fatalf("Key = %q, %v", k, err)
		}
	}
	if c.calls != 1 {
		t.Errorf("%d GetSecretValue calls within the TTL, want 1", c.calls)
	}
	s.TTL = 0
	if _, err := s.Key(context.Background()); err != nil || c.calls != 2 {
		t.Errorf("after the TTL: %d calls, %v; want 2", c.calls, err)
	}
}
