package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// Subscription is one receiver of the escalation or alarm topic (context
// ora:escalationSubscriptions, ora:alarmSubscriptions).
type Subscription struct {
	// Kind is email, https or sqs.
	Kind string `json:"kind"`
	// Endpoint is the address (email), the URL (https) or the queue's ARN
	// (sqs; its policy must let sns.amazonaws.com send, and its key, if
	// any, let SNS use it: the stack does not own the queue).
	Endpoint string `json:"endpoint"`
}

// The subscription kinds.
const (
	SubscribeEmail = "email"
	SubscribeHTTPS = "https"
	SubscribeSQS   = "sqs"
)

// validateSubscriptions checks each subscription of a context key; the
// error names the key, the index and what is wrong.
func validateSubscriptions(key string, subs []Subscription) error {
	for i, s := range subs {
		at := fmt.Sprintf("context %s[%d]", key, i)
		switch s.Kind {
		case SubscribeEmail:
			if !strings.Contains(s.Endpoint, "@") {
				return fmt.Errorf("%s: %q is not an email address", at, s.Endpoint)
			}
		case SubscribeHTTPS:
			u, err := url.Parse(s.Endpoint)
			if err != nil || u.Scheme != "https" || u.Host == "" {
				return fmt.Errorf("%s: %q is not an https:// URL", at, s.Endpoint)
			}
		case SubscribeSQS:
			if !strings.HasPrefix(s.Endpoint, "arn:") || !strings.Contains(s.Endpoint, ":sqs:") {
				return fmt.Errorf("%s: %q is not an SQS queue ARN", at, s.Endpoint)
			}
		default:
			return fmt.Errorf("%s: kind %q is not email, https or sqs", at, s.Kind)
		}
	}
	return nil
}

// subscribe adds each subscription to topic.
func subscribe(scope awscdk.Stack, id string, topic awssns.Topic, subs []Subscription) {
	for i, s := range subs {
		var sub awssns.ITopicSubscription
		switch s.Kind {
		case SubscribeEmail:
			sub = awssnssubscriptions.NewEmailSubscription(jsii.String(s.Endpoint), nil)
		case SubscribeHTTPS:
			sub = awssnssubscriptions.NewUrlSubscription(jsii.String(s.Endpoint), &awssnssubscriptions.UrlSubscriptionProps{
				Protocol: awssns.SubscriptionProtocol_HTTPS,
			})
		case SubscribeSQS:
			q := awssqs.Queue_FromQueueArn(scope, jsii.String(fmt.Sprintf("%sQueue%d", id, i)), jsii.String(s.Endpoint))
			sub = awssnssubscriptions.NewSqsSubscription(q, nil)
		}
		topic.AddSubscription(sub)
	}
}

// bedrockFirstUse lets role's function invoke a third-party model the first
// time in an account: Bedrock then subscribes the account to the model
// through AWS Marketplace on the caller's behalf, which needs these actions
// (Bedrock user guide, "Request access to models"); without them a fresh
// account answers AccessDeniedException. Anthropic's models also need the
// account's one-time use-case form, which no permission replaces.
func bedrockFirstUse(f awsiam.IGrantable) {
	f.GrantPrincipal().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("aws-marketplace:ViewSubscriptions", "aws-marketplace:Subscribe", "aws-marketplace:Unsubscribe"),
		Resources: jsii.Strings("*"),
	}))
}
