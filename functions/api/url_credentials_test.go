package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// A proposal whose http rule's URL carries a credential, posted through
// the api Lambda on DynamoDB Local: the stored proposal and every answer
// hold the redacted URL, never the credential.
func TestProposalURLCredentialsOnDynamoDB(t *testing.T) {
	const token = "canary-lambda-url-token-91c4"
	ctx := context.Background()
	client := dynamotest.Client(t)
	table := dynamotest.TableName("api-urlcred")
	if err := dynamo.CreateLedgerTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	secrets := ora.NewSecrets()
	ledger := dynamo.New(client, table, func(o *dynamo.Options) { o.Secrets = secrets })
	svc := orient.NewService(ledger, func(o *orient.Options) {
		o.Secrets = secrets
		o.Sources = map[string]orient.Source{orient.FamilyHTTP: orient.HTTP{Allow: []string{"https://status.example.com/"}}}
	})
	h := New(ledger, nil, nil, DefaultResourceServer, nil, func(s *httpapi.Server) { s.Orientation = svc })
	base := loadEvent(t, "get-signal.json")
	req := func(method, path, body string) []byte {
		ev := withPath(base, path)
		ev.RequestContext.HTTP.Method, ev.Body, ev.IsBase64Encoded = method, body, false
		ev = withClaims(ev, map[string]string{"sub": "agent-1", "token_use": "access", "scope": "ora/orientation.propose ora/orientation.read"}, nil)
		resp := invoke(t, h, ev)
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, resp.Body)
		}
		return []byte(resp.Body)
	}
	pred, _ := json.Marshal(orient.HTTPPredicate{URLs: []string{"https://status.example.com/v1/summary?api_key=" + token}})
	rule, _ := json.Marshal(ora.AttentionRule{ID: "status", SourceType: orient.FamilyHTTP, Predicate: pred, Band: ora.BandSituational, PriorityWeight: 0.5, Enabled: true})
	var seen strings.Builder
	seen.Write(req("POST", "/api/orientation/proposals", `{"proposal_id":"p-cred","base_profile_id":"default","base_profile_version":1,"effective_waves":2,"horizon_policy":"revert","change":{"rules":[`+string(rule)+`]}}`))
	out, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	items, _ := json.Marshal(out.Items)
	seen.Write(items)
	if !strings.Contains(seen.String(), "status.example.com/v1/summary?api_key=[redacted:url:status.example.com:api_key]") {
		t.Errorf("nothing holds the redacted URL: the search looked at nothing")
	}
	if strings.Contains(seen.String(), token) {
		t.Errorf("the credential is in the table or an answer")
	}
}
