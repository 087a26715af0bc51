package main

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/ora-runtime/ora/shared/apigw"
	"github.com/ora-runtime/ora/shared/apitoken"
	"github.com/ora-runtime/ora/shared/httpapi"
)

// TestRESTProfile drives the REST API profile (ora:api=rest) the way API
// Gateway v1 does: the TOKEN authorizer call first, then the proxy request
// (payload 1.0) carrying the authorizer's context, both through the one
// Dispatch handler main starts. The route's scope is checked by the api
// function from the token's claims: a token with the scope reads the
// signal, one without it gets 403, and a forged one never passes the
// authorizer.
func TestRESTProfile(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	now := time.Now()
	h := New(openLedger(t), fakeWaves{}, &fakeVerdicts{}, DefaultResourceServer, nil, func(s *httpapi.Server) {})
	auth := &apigw.Authorizer{Key: func(context.Context) ([]byte, error) { return key, nil }}
	handler := lambda.NewHandler(apigw.Dispatch(h.Handle, auth))
	const methodArn = "arn:aws:execute-api:us-east-1:000000000000:api1/prod/GET/signals/" + sampleSignal

	call := func(token string) (status int, body string) {
		t.Helper()
		authEvent, _ := json.Marshal(events.APIGatewayCustomAuthorizerRequest{Type: "TOKEN", AuthorizationToken: "Bearer " + token, MethodArn: methodArn})
		out, err := handler.Invoke(context.Background(), authEvent)
		if err != nil {
			return http.StatusUnauthorized, err.Error() // API Gateway answers 401 for "Unauthorized"
		}
		var allowed events.APIGatewayCustomAuthorizerResponse
		if err := json.Unmarshal(out, &allowed); err != nil {
			t.Fatalf("authorizer answer %s: %v", out, err)
		}
		authorizer := map[string]any{"principalId": allowed.PrincipalID}
		for k, v := range allowed.Context {
			authorizer[k] = v
		}
		req := events.APIGatewayProxyRequest{
			Resource: "/signals/{id}", Path: "/signals/" + sampleSignal, HTTPMethod: http.MethodGet,
			Headers:        map[string]string{"Authorization": "Bearer " + token},
			PathParameters: map[string]string{"id": sampleSignal},
			RequestContext: events.APIGatewayProxyRequestContext{RequestID: "req-1", Stage: "prod", Authorizer: authorizer},
		}
		ev, _ := json.Marshal(req)
		out, err = handler.Invoke(context.Background(), ev)
		if err != nil {
			t.Fatalf("proxy request: %v", err)
		}
		var resp events.APIGatewayProxyResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatalf("proxy response %s: %v", out, err)
		}
		return resp.StatusCode, resp.Body
	}
	reader, _ := apitoken.Sign(key, apitoken.Claims{Subject: "e2e", Scope: "ora/orientation.read"}, now, time.Hour)
	approver, _ := apitoken.Sign(key, apitoken.Claims{Subject: "e2e", Scope: "ora.approve"}, now, time.Hour)
	forged, _ := apitoken.Sign([]byte("not-the-key-not-the-key-not-the-key"), apitoken.Claims{Subject: "e2e", Scope: "orientation.read"}, now, time.Hour)
	cases := []struct {
		name  string
		token string
		want  int
	}{
		{"scope held", reader, http.StatusOK},
		{"scope missing", approver, http.StatusForbidden},
		{"forged token", forged, http.StatusUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if status, body := call(tc.token); status != tc.want {
				t.Errorf("status %d (%s), want %d", status, body, tc.want)
			}
		})
	}
}
