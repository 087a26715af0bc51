package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/embedded"
)

// preflightTimeout bounds each of ora dev's start checks.
var preflightTimeout = 10 * time.Second

// preflight checks, before ora dev starts, what its config needs from outside:
// DynamoDB reachable when store.kind is dynamodb; AWS credentials and access
// to the model when reasoner.kind is bedrock (one Converse call of at most one
// output token). The error is one line naming what is missing.
func preflight(ctx context.Context, cfg embedded.Config) error {
	if d := cfg.Store.DynamoDB; cfg.Store.Kind == "dynamodb" && d.Endpoint != "" {
		if err := reachable(ctx, d.Endpoint); err != nil {
			return fmt.Errorf("store.kind dynamodb: DynamoDB at %s is not reachable (%v); start DynamoDB Local (make run-dynamodb does) or fix store.dynamodb.endpoint", d.Endpoint, err)
		}
	} else if cfg.Store.Kind == "dynamodb" {
		if err := awsCredentials(ctx, d.Region); err != nil {
			return fmt.Errorf("store.kind dynamodb: no AWS credentials found for DynamoDB in %s (set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; or store.dynamodb.endpoint for DynamoDB Local)", d.Region)
		}
	}
	if cfg.Reasoner.Kind == "bedrock" {
		return bedrockPreflight(ctx, cfg.Reasoner)
	}
	return nil
}

// awsCredentials retrieves credentials from the default chain, as ora dev's
// DynamoDB client does without an endpoint.
func awsCredentials(ctx context.Context, region string) error {
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	c, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
	if err != nil {
		return err
	}
	_, err = c.Credentials.Retrieve(ctx)
	return err
}

// reachable dials the endpoint URL's host and port.
func reachable(ctx context.Context, endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not a URL", endpoint)
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", host)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			return op.Err
		}
		return err
	}
	return c.Close()
}

func bedrockPreflight(ctx context.Context, rc embedded.ReasonerConfig) error {
	model := rc.Bedrock.Model
	client, err := bedrock.NewClient(ctx, func(o *bedrock.ClientOptions) {
		o.Endpoint, o.Region, o.MaxAttempts = rc.BedrockEndpoint, rc.Region, 1
	})
	if err != nil {
		return fmt.Errorf("reasoner.kind bedrock: %v", err)
	}
	region := client.Options().Region
	if region == "" {
		return errors.New("reasoner.kind bedrock: no AWS region: set reasoner.region or AWS_REGION")
	}
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	if _, err := client.Options().Credentials.Retrieve(ctx); err != nil {
		return errors.New("reasoner.kind bedrock: no AWS credentials found (set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; or use reasoner.kind rules)")
	}
	_, err = client.Converse(ctx, &bedrockruntime.ConverseInput{
		ModelId: aws.String(model),
		Messages: []types.Message{{Role: types.ConversationRoleUser,
			Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "ping"}}}},
		InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(1)},
	})
	if err == nil {
		return nil
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		what := "model " + model + " in " + region
		switch api.ErrorCode() {
		case "AccessDeniedException":
			return fmt.Errorf("reasoner.kind bedrock: no access to %s (enable the model in the Bedrock console and allow bedrock:InvokeModel): %s", what, api.ErrorMessage())
		case "ResourceNotFoundException", "ValidationException":
			return fmt.Errorf("reasoner.kind bedrock: %s cannot be invoked (check reasoner.bedrock.model and reasoner.region): %s", what, api.ErrorMessage())
		case "UnrecognizedClientException", "InvalidSignatureException", "ExpiredTokenException":
			return fmt.Errorf("reasoner.kind bedrock: AWS refused the credentials: %s", api.ErrorMessage())
		case "ThrottlingException":
			return nil // the model answers; it is only busy
		}
		return fmt.Errorf("reasoner.kind bedrock: checking %s: %s: %s", what, api.ErrorCode(), api.ErrorMessage())
	}
	endpoint := rc.BedrockEndpoint
	if endpoint == "" {
		endpoint = "the Bedrock endpoint of " + region
	}
	return fmt.Errorf("reasoner.kind bedrock: cannot reach %s: %s", endpoint, firstErrLine(err))
}

// firstErrLine returns an error's message up to its first newline.
func firstErrLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
