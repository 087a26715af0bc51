package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

const (
	ticketsStream = "arn:aws:dynamodb:us-east-1:123456789012:table/tickets/stream/2026-11-20T00:00:00.000"
	ordersStream  = "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-11-21T00:00:00.000"
)

// TestUserSources: ora:tables, ora:buckets and ora:eventRules become a
// stream mapping per table (its own on-failure queue, filter criteria, read
// grants on that stream alone) and an EventBridge rule per bucket and per
// pattern targeting observe-event with a retry policy and a dead-letter
// queue; the fetch function may read the buckets' prefixes, nothing more;
// cdk-nag finds nothing.
func TestUserSources(t *testing.T) {
	synth(t)
	ctx, err := CDKJSONContext("cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("ORA_INFRA_ROOT") != "" {
		ctx["ora:root"] = root
	}
	ctx["ora:tables"] = []map[string]any{
		{"name": "tickets", "stream_arn": ticketsStream, "events": []string{"INSERT"}, "new_image": map[string]any{"status": map[string]any{"S": []string{"open"}}}},
		{"name": "orders", "stream_arn": ordersStream},
	}
	ctx["ora:buckets"] = []map[string]any{{"name": "acme-invoices", "prefixes": []string{"incoming/"}, "suffixes": []string{".pdf"}}}
	ctx["ora:eventRules"] = []map[string]any{
		{"name": "alarms", "pattern": map[string]any{"source": []string{"aws.cloudwatch"}, "detail-type": []string{"CloudWatch Alarm State Change"}}},
		{"name": "orders-bus", "bus": "orders", "pattern": map[string]any{"source": []any{map[string]any{"prefix": "com.acme."}}}},
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	st := NewOraStack(app, "OraUserSources", ConfigFromContext(app))
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{}), nil)
	tpl := assertions.Template_FromStack(st.Stack, nil)
	var out map[string]any
	b, _ := json.Marshal(tpl.ToJSON())
	_ = json.Unmarshal(b, &out)
	res := out["Resources"].(map[string]any)
	of := func(typ string) []map[string]any {
		var l []map[string]any
		for _, r := range res {
			if m := r.(map[string]any); m["Type"] == typ {
				l = append(l, m["Properties"].(map[string]any))
			}
		}
		return l
	}

	t.Run("a mapping per stream", func(t *testing.T) {
		byArn := map[string]map[string]any{}
		for _, p := range of("AWS::Lambda::EventSourceMapping") {
			if arn, ok := p["EventSourceArn"].(string); ok {
				byArn[arn] = p
			}
		}
		queues := map[string]bool{}
		for _, arn := range []string{ticketsStream, ordersStream} {
			p, ok := byArn[arn]
			if !ok {
				t.Fatalf("no event source mapping of %s", arn)
			}
			dest, _ := json.Marshal(p["DestinationConfig"])
			queues[string(dest)] = true
			if p["BisectBatchOnFunctionError"] != true || !slices.Contains(toStrings(p["FunctionResponseTypes"]), "ReportBatchItemFailures") || p["StartingPosition"] != "LATEST" {
				t.Errorf("%s: %v", arn, p)
			}
		}
		for q := range queues {
			if !strings.Contains(q, "OnFailure") {
				t.Errorf("destination %s has no on-failure queue", q)
			}
		}
		if len(queues) != 2 {
			t.Errorf("on-failure destinations %v, want one queue per table", queues)
		}
		filter, _ := json.Marshal(byArn[ticketsStream]["FilterCriteria"])
		if !strings.Contains(string(filter), `{\"dynamodb\":{\"NewImage\":{\"status\":{\"S\":[\"open\"]}}},\"eventName\":[\"INSERT\"]}`) {
			t.Errorf("tickets filter criteria %s", filter)
		}
		if _, ok := byArn[ordersStream]["FilterCriteria"]; ok {
			t.Errorf("orders has filter criteria though ora:tables gives none")
		}
	})

	t.Run("stream reads on the configured streams alone", func(t *testing.T) {
		var streams []string
		for _, p := range of("AWS::IAM::Policy") {
			for _, s := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
				st := s.(map[string]any)
				if slices.Contains(toStrings(st["Action"]), "dynamodb:GetRecords") {
					streams = append(streams, toStrings(st["Resource"])...)
				}
			}
		}
		for _, arn := range []string{ticketsStream, ordersStream} {
			if !slices.Contains(streams, arn) {
				t.Errorf("GetRecords granted on %v, want %s among them", streams, arn)
			}
		}
		for _, s := range streams {
			if (strings.Contains(s, "table/tickets") || strings.Contains(s, "table/orders")) && strings.Contains(s, "*") {
				t.Errorf("a user's stream read granted on a wildcard %q", s)
			}
		}
	})

	t.Run("a rule per bucket and per pattern", func(t *testing.T) {
		rules := map[string]map[string]any{}
		for _, p := range of("AWS::Events::Rule") {
			rules[fmt.Sprint(p["Description"])] = p
		}
		want := map[string]string{
			"ora: objects of s3://acme-invoices to observe-event": `{"detail":{"bucket":{"name":["acme-invoices"]},"object":{"key":[{"wildcard":"incoming/*.pdf"}]}},"detail-type":["Object Created","Object Deleted"],"source":["aws.s3"]}`,
			"ora: events of alarms to observe-event":              `{"detail-type":["CloudWatch Alarm State Change"],"source":["aws.cloudwatch"]}`,
			"ora: events of orders-bus to observe-event":          `{"source":[{"prefix":"com.acme."}]}`,
		}
		for desc, pattern := range want {
			r, ok := rules[desc]
			if !ok {
				t.Errorf("no rule %q", desc)
				continue
			}
			got, _ := json.Marshal(r["EventPattern"])
			if string(got) != pattern {
				t.Errorf("%s: pattern %s, want %s", desc, got, pattern)
			}
			targets := r["Targets"].([]any)
			tg := targets[0].(map[string]any)
			retry, _ := tg["RetryPolicy"].(map[string]any)
			if len(targets) != 1 || tg["DeadLetterConfig"] == nil || retry["MaximumRetryAttempts"] != float64(UserEventRetries) || retry["MaximumEventAgeInSeconds"] != float64(UserEventMaxAgeSecs) {
				t.Errorf("%s: targets %v, want observe-event with a dead-letter queue and the retry policy", desc, targets)
			}
			bus := r["EventBusName"]
			if desc == "ora: events of orders-bus to observe-event" && bus != "orders" {
				t.Errorf("%s: bus %v, want orders", desc, bus)
			}
		}
	})

	t.Run("bucket reads on the prefixes", func(t *testing.T) {
		found := false
		for _, p := range of("AWS::IAM::Policy") {
			for _, s := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
				st := s.(map[string]any)
				if !slices.Contains(toStrings(st["Action"]), "s3:GetObject") {
					continue
				}
				b, _ := json.Marshal(st["Resource"])
				if strings.Contains(string(b), "acme-invoices") {
					found = true
					if !strings.Contains(string(b), `:s3:::acme-invoices/incoming/*`) {
						t.Errorf("bucket read on %s, want acme-invoices/incoming/* only", b)
					}
				}
			}
		}
		if !found {
			t.Error("no s3:GetObject grant on acme-invoices")
		}
	})

	t.Run("an alarm on every dead-letter queue", func(t *testing.T) {
		alarms := map[string]bool{}
		for _, p := range of("AWS::CloudWatch::Alarm") {
			alarms[fmt.Sprint(p["AlarmDescription"])] = true
		}
		for _, q := range []string{"TableTicketsDLQ", "TableOrdersDLQ", "EventsDLQ"} {
			if !alarms["ora: messages waiting in the "+q+" dead-letter queue"] {
				t.Errorf("no depth alarm on %s", q)
			}
		}
	})

	t.Run("nag", func(t *testing.T) {
		errs := assertions.Annotations_FromStack(st.Stack).FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))
		for _, e := range *errs {
			t.Errorf("cdk-nag: %+v", *e)
		}
	})
}
