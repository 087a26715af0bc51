package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/ora-runtime/ora/shared/apigw"
)

// TestRESTProfilePayload10 replays signed samples as the REST API profile
// (ora:api=rest) delivers them, API Gateway v1's proxy payload 1.0, through
// the Dispatch handler main starts: the signature still verifies over the
// same bytes and the answer is a 1.0 response.
func TestRESTProfilePayload10(t *testing.T) {
	for name, want := range map[string]int{"github-push.json": 202, "github-push-forged.json": 401} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "..", "events", "webhook", name))
			if err != nil {
				t.Fatal(err)
			}
			var v2 events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal(b, &v2); err != nil {
				t.Fatal(err)
			}
			v1 := events.APIGatewayProxyRequest{
				Resource: "/webhooks/{source}", Path: v2.RawPath, HTTPMethod: "POST", Headers: v2.Headers,
				PathParameters: v2.PathParameters, Body: v2.Body, IsBase64Encoded: v2.IsBase64Encoded,
				RequestContext: events.APIGatewayProxyRequestContext{RequestID: "req-1", Stage: "prod"},
			}
			payload, _ := json.Marshal(v1)
			fx := newFixture(t)
			out, err := lambda.NewHandler(apigw.Dispatch(Handler{Observer: fx.obs}.Handle, nil)).Invoke(context.Background(), payload)
			if err != nil {
				t.Fatal(err)
			}
			var resp events.APIGatewayProxyResponse
			if err := json.Unmarshal(out, &resp); err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			if resp.StatusCode != want {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, resp.Body, want)
			}
			if starts := fx.waves.Calls(); (want == 202) != (starts == 1) {
				t.Errorf("%d wave starts for status %d", starts, want)
			}
		})
	}
}
