package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observe/observetest"
	"github.com/ora-runtime/ora/shared/observerlambda"
	"github.com/ora-runtime/ora/shared/ora"
)

// TestWitnessOfARedactedDelivery runs the AWS home's path on DynamoDB
// Local: the webhook observer as its Lambda builds it (the sources' secrets
// in the function's registry) captures GitHub's sample issues delivery, once
// as published and once with the webhook secret pasted into the issue's
// body; the witness Lambda's handler, in a process of its own with an empty
// registry, passes both and states the redaction of the second, and the
// secret is nowhere in the table, the stored raw input included.
func TestWitnessOfARedactedDelivery(t *testing.T) {
	const secret = "canary-github-webhook-secret-5d1e"
	source := observe.SourceConfig{Name: "github", Type: observe.TypeGitHub, Secret: secret}
	var sample events.APIGatewayV2HTTPRequest
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "webhook", "github-issues.json"))
	if err != nil || json.Unmarshal(b, &sample) != nil {
		t.Fatalf("sample: %v", err)
	}
	ctx := context.Background()
	client := dynamotest.Client(t)
	table := dynamotest.TableName("witness")
	if err := dynamo.CreateLedgerTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	registry := ora.NewSecrets()
	deps := observerlambda.Deps{
		Ledger:  dynamo.New(client, table, func(o *dynamo.Options) { o.Secrets = registry }),
		Starter: &observetest.Waves{},
		Secrets: registry,
		Options: func(*observe.Options) {},
	}
	obs, err := deps.Observer([]observe.SourceConfig{source})
	if err != nil {
		t.Fatal(err)
	}
	witness := lambda.NewHandler(handler(dynamo.New(client, table)).Handle)

	tests := []struct {
		name, body, delivery string
		redacted             bool
	}{
		{name: "as published", body: sample.Body, delivery: "9a0c4f7e-a725-11f0-8e6f-2b1d7e0e5c31"},
		{name: "secret pasted into the issue", redacted: true, delivery: "9a0c4f7e-a725-11f0-8e6f-2b1d7e0e5c32",
			body: strings.Replace(sample.Body, "the wave stays in Escalate.", "the wave stays in Escalate. My webhook secret is "+secret+".", 1)},
	}
	var signals []string
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.redacted == (tc.body == sample.Body) {
				t.Fatal("the sample's issue body changed: the secret was not planted")
			}
			h, err := observe.Sign(source, []byte(tc.body), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			h.Set("Content-Type", "application/json")
			h.Set("X-GitHub-Event", "issues")
			h.Set("X-GitHub-Delivery", tc.delivery)
			rec, err := obs.Webhook(ctx, "github", h, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			signals = append(signals, rec.SignalID)
			decision := acttest.Decision("d"+string(rune('1'+i)), rec.SignalID, ora.Scope{AllowedOperations: []string{act.TypeNotify}},
				ora.Action{Type: act.TypeNotify, Parameters: acttest.Params(t, map[string]any{"message": "triaged"})})
			acttest.Record(t, deps.Ledger, decision)
			out, err := witness.Invoke(ctx, []byte(`{"signal_id":"`+rec.SignalID+`","decision_id":"`+decision.ID+`"}`))
			if err != nil {
				t.Fatalf("witness: %v", err)
			}
			var r ora.ValidatorResult
			if err := json.Unmarshal(out, &r); err != nil || r.Verdict != ora.Pass {
				t.Fatalf("witness: %s (%v), want PASS", out, err)
			}
			if got := strings.Contains(r.Summary, "redacted form") && strings.Contains(r.Summary, "source:github"); got != tc.redacted {
				t.Errorf("summary %q states a redaction: %v, want %v", r.Summary, got, tc.redacted)
			}
		})
	}
	// The whole table, and each signal's raw input decoded (base64 in the
	// entry, the delivery's body base64 again inside it).
	items, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := json.Marshal(items.Items)
	raws := ""
	for _, id := range signals {
		es, err := dynamo.New(client, table).Entries(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			var s ora.NormalizedSignal
			if e.Kind == ora.KindSignalReceived && json.Unmarshal(e.Body, &s) == nil {
				var d observe.Delivery
				_ = json.Unmarshal(s.Raw, &d)
				raws += string(s.Raw) + string(d.Body)
			}
		}
	}
	if !strings.Contains(raws, "My webhook secret is "+ora.Marker("source:github")) {
		t.Errorf("no stored raw input holds the redacted issue body: the search looked at nothing")
	}
	if strings.Contains(string(all), secret) || strings.Contains(raws, secret) {
		t.Errorf("the secret is in the ledger table")
	}
}
