package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/ora-runtime/ora/shared/observe"
)

// UserBucket is one of the user's existing buckets (context ora:buckets): S3
// sends its Object Created and Object Deleted events to EventBridge (enable
// "Send notifications to Amazon EventBridge" on the bucket), a rule passes
// those under Prefixes and with Suffixes to observe-event, and the fetch
// function may read exactly those objects.
type UserBucket struct {
	Name     string   `json:"name"`
	Prefixes []string `json:"prefixes,omitempty"`
	Suffixes []string `json:"suffixes,omitempty"`
}

// EventRule is one EventBridge event pattern (context ora:eventRules) whose
// events observe-event captures; Bus is the default bus when empty, else a
// bus name or ARN.
type EventRule struct {
	Name    string         `json:"name"`
	Bus     string         `json:"bus,omitempty"`
	Pattern map[string]any `json:"pattern"`
}

// UserSources are the user's own tables, buckets and AWS events.
type UserSources struct {
	Tables     []observe.TableConfig
	Buckets    []UserBucket
	EventRules []EventRule
}

// Delivery settings of the user's sources: a stream mapping retries a
// failing batch (bisected) five times within a day, EventBridge retries a
// failed invocation for two hours; then the record or event goes to its
// dead-letter queue.
const (
	UserStreamRetries   = 5
	UserEventRetries    = 8
	UserEventMaxAgeSecs = 2 * 60 * 60
)

// userSourcesOf reads ora:tables, ora:buckets and ora:eventRules from the
// app's context (JSON, or a string of JSON from -c); a malformed value
// panics with its key's name.
func userSourcesOf(stack awscdk.Stack) UserSources {
	var u UserSources
	get := func(key string, into any) {
		v := stack.Node().TryGetContext(jsii.String(key))
		if v == nil {
			return
		}
		b, _ := json.Marshal(v)
		if s, ok := v.(string); ok {
			b = []byte(s)
		}
		if err := json.Unmarshal(b, into); err != nil {
			panic(fmt.Sprintf("context %s: %v", key, err))
		}
	}
	get("ora:tables", &u.Tables)
	get("ora:buckets", &u.Buckets)
	get("ora:eventRules", &u.EventRules)
	seen := map[string]bool{}
	for _, t := range u.Tables {
		if err := t.Validate(); err != nil {
			panic(fmt.Sprintf("context ora:tables: %v", err))
		}
		if !strings.HasPrefix(t.StreamARN, "arn:") || !strings.Contains(t.StreamARN, ":table/") || !strings.Contains(t.StreamARN, "/stream/") {
			panic(fmt.Sprintf("context ora:tables: %s: stream_arn %q is not a DynamoDB stream ARN (arn:aws:dynamodb:REGION:ACCOUNT:table/NAME/stream/LABEL)", t.Name, t.StreamARN))
		}
		if seen["t:"+t.Name] {
			panic(fmt.Sprintf("context ora:tables: %q is configured twice", t.Name))
		}
		seen["t:"+t.Name] = true
	}
	for _, b := range u.Buckets {
		if b.Name == "" || seen["b:"+b.Name] {
			panic(fmt.Sprintf("context ora:buckets: every bucket needs a name, once (%q)", b.Name))
		}
		seen["b:"+b.Name] = true
	}
	for _, r := range u.EventRules {
		if r.Name == "" || len(r.Pattern) == 0 || seen["r:"+r.Name] {
			panic(fmt.Sprintf("context ora:eventRules: every rule needs a name, once, and a pattern (%q)", r.Name))
		}
		seen["r:"+r.Name] = true
	}
	return u
}

// tablesEnv is observe-table's ORA_TABLES: each table's name and stream.
func (u UserSources) tablesEnv() *string {
	out := make([]observe.TableConfig, len(u.Tables))
	for i, t := range u.Tables {
		out[i] = observe.TableConfig{Name: t.Name, StreamARN: t.StreamARN}
	}
	b, _ := json.Marshal(out)
	return jsii.String(string(b))
}

// addUserSources connects the user's tables to observe-table (a mapping per
// stream, its own on-failure queue, stream read grants on that stream
// alone), and their buckets and event rules to observe-event (a rule each,
// with a retry policy and a dead-letter queue). It returns the dead-letter
// queues it made, by id, for the delivery alarms.
func addUserSources(stack awscdk.Stack, u UserSources, key awskms.Key, fn func(string) awslambda.Function, dlq func(string) awssqs.Queue) map[string]awssqs.Queue {
	queues := map[string]awssqs.Queue{}
	for _, t := range u.Tables {
		id := "Table" + pascal(t.Name) + "DLQ"
		q := dlq(id)
		queues[id] = q
		props := &awslambda.EventSourceMappingProps{
			Target:                  fn("observe-table"),
			EventSourceArn:          jsii.String(t.StreamARN),
			StartingPosition:        awslambda.StartingPosition_LATEST,
			BatchSize:               jsii.Number(25),
			BisectBatchOnError:      jsii.Bool(true),
			RetryAttempts:           jsii.Number(UserStreamRetries),
			MaxRecordAge:            awscdk.Duration_Hours(jsii.Number(24)),
			OnFailure:               awslambdaeventsources.NewSqsDlq(q),
			ReportBatchItemFailures: jsii.Bool(true),
		}
		if p := t.Pattern(); p != nil {
			props.Filters = &[]*map[string]any{awslambda.FilterCriteria_Filter(&p)}
		}
		awslambda.NewEventSourceMapping(stack, jsii.String("Table"+pascal(t.Name)+"Stream"), props)
		fn("observe-table").AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"),
			Resources: jsii.Strings(t.StreamARN),
		}))
	}
	if len(u.Tables) > 0 {
		// ListStreams has no resource-level permissions.
		fn("observe-table").AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("dynamodb:ListStreams"), Resources: jsii.Strings("*"),
		}))
		cdknag.NagSuppressions_AddResourceSuppressions(fn("observe-table"), &[]*cdknag.NagPackSuppression{{
			Id:        jsii.String("AwsSolutions-IAM5"),
			Reason:    jsii.String("dynamodb:ListStreams takes no resource; the stream reads are granted on each configured stream ARN."),
			AppliesTo: &[]any{"Resource::*"},
		}}, jsii.Bool(true))
	}
	if len(u.Buckets) == 0 && len(u.EventRules) == 0 {
		return queues
	}
	eventsDLQ := dlq("EventsDLQ")
	queues["EventsDLQ"] = eventsDLQ
	// EventBridge writes failed deliveries to the key-encrypted queue.
	key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("events.amazonaws.com"), nil)},
		Actions:    jsii.Strings("kms:Decrypt", "kms:GenerateDataKey"),
		Resources:  jsii.Strings("*"),
		Conditions: &map[string]any{"StringEquals": map[string]any{"aws:SourceAccount": stack.Account()}},
	}), nil)
	target := awseventstargets.NewLambdaFunction(fn("observe-event"), &awseventstargets.LambdaFunctionProps{
		DeadLetterQueue: eventsDLQ,
		RetryAttempts:   jsii.Number(UserEventRetries),
		MaxEventAge:     awscdk.Duration_Seconds(jsii.Number(UserEventMaxAgeSecs)),
	})
	rule := func(id string, bus awsevents.IEventBus, pattern map[string]any, description string) {
		r := awsevents.NewRule(stack, jsii.String(id), &awsevents.RuleProps{
			EventBus:    bus,
			Description: jsii.String(description),
			// Replaced by the pattern as written (below): CDK's typed pattern
			// cannot hold every EventBridge operator.
			EventPattern: &awsevents.EventPattern{Account: jsii.Strings(*stack.Account())},
			Targets:      &[]awsevents.IRuleTarget{target},
		})
		cfn := r.Node().DefaultChild().(awsevents.CfnRule)
		cfn.AddPropertyOverride(jsii.String("EventPattern"), pattern)
		if _, ok := pattern["account"]; !ok {
			cfn.AddPropertyDeletionOverride(jsii.String("EventPattern.account"))
		}
	}
	for _, b := range u.Buckets {
		rule("Bucket"+pascal(b.Name)+"Rule", nil, b.pattern(), "ora: objects of s3://"+b.Name+" to observe-event")
		var objects []*string
		for _, p := range b.readPrefixes() {
			objects = append(objects, jsii.String("arn:"+*awscdk.Aws_PARTITION()+":s3:::"+b.Name+"/"+p+"*"))
		}
		fn("fetch").AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("s3:GetObject"), Resources: &objects,
		}))
		cdknag.NagSuppressions_AddResourceSuppressions(fn("fetch"), &[]*cdknag.NagPackSuppression{{
			Id:        jsii.String("AwsSolutions-IAM5"),
			Reason:    jsii.String("Reads of the user's bucket " + b.Name + " (ora:buckets) are granted on its configured key prefixes, each a key wildcard."),
			AppliesTo: &[]any{map[string]any{"regex": "/^Resource::arn:<AWS::Partition>:s3:::" + regexp.QuoteMeta(b.Name) + "\\/.*\\*$/"}},
		}}, jsii.Bool(true))
	}
	for _, r := range u.EventRules {
		var bus awsevents.IEventBus
		switch {
		case strings.HasPrefix(r.Bus, "arn:"):
			bus = awsevents.EventBus_FromEventBusArn(stack, jsii.String("Bus"+pascal(r.Name)), jsii.String(r.Bus))
		case r.Bus != "" && r.Bus != "default":
			bus = awsevents.EventBus_FromEventBusName(stack, jsii.String("Bus"+pascal(r.Name)), jsii.String(r.Bus))
		}
		rule("Event"+pascal(r.Name)+"Rule", bus, r.Pattern, "ora: events of "+r.Name+" to observe-event")
	}
	return queues
}

// withQueues returns base with more added (a new map).
func withQueues(base, more map[string]awssqs.Queue) map[string]awssqs.Queue {
	out := make(map[string]awssqs.Queue, len(base)+len(more))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// pattern is the bucket's rule: S3's object events of this bucket whose key
// has one of the prefixes and one of the suffixes.
func (b UserBucket) pattern() map[string]any {
	detail := map[string]any{"bucket": map[string]any{"name": []any{b.Name}}}
	var keys []any
	switch {
	case len(b.Prefixes) > 0 && len(b.Suffixes) > 0:
		for _, p := range b.Prefixes {
			for _, s := range b.Suffixes {
				keys = append(keys, map[string]any{"wildcard": p + "*" + s})
			}
		}
	case len(b.Prefixes) > 0:
		for _, p := range b.Prefixes {
			keys = append(keys, map[string]any{"prefix": p})
		}
	case len(b.Suffixes) > 0:
		for _, s := range b.Suffixes {
			keys = append(keys, map[string]any{"suffix": s})
		}
	}
	if keys != nil {
		detail["object"] = map[string]any{"key": keys}
	}
	return map[string]any{
		"source":      []any{"aws.s3"},
		"detail-type": []any{"Object Created", "Object Deleted"},
		"detail":      detail,
	}
}

// readPrefixes are the key prefixes the fetch function may read ("" for the
// whole bucket).
func (b UserBucket) readPrefixes() []string {
	if len(b.Prefixes) == 0 {
		return []string{""}
	}
	return b.Prefixes
}
