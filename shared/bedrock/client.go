package bedrock

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
)

// ClientOptions configure NewClient.
type ClientOptions struct {
	// Endpoint overrides the service endpoint (BaseEndpoint), e.g. a fake
	// Bedrock in tests. Empty: the regional AWS endpoint.
	Endpoint string
	// Region is the AWS region; empty: from the environment.
	Region string
	// Credentials replaces the default credential chain when set.
	Credentials aws.CredentialsProvider
	// MaxAttempts bounds the SDK retryer's attempts per call (first try
	// included). Default 3.
	MaxAttempts int
	// Backoff replaces the retryer's jittered exponential backoff (tests use
	// a zero delay).
	Backoff retry.BackoffDelayer
	// HTTPClient replaces the SDK's HTTP client: a Replayer answers from
	// recorded responses, a Recorder records them.
	HTTPClient bedrockruntime.HTTPClient
}

// NewClient returns a bedrockruntime client with the standard retryer bounded
// to MaxAttempts; it retries throttling (429 ThrottlingException) and 5xx.
// Without Credentials it loads the default AWS configuration (environment,
// shared files, the Lambda role).
func NewClient(ctx context.Context, opts ...func(*ClientOptions)) (*bedrockruntime.Client, error) {
	o := ClientOptions{MaxAttempts: 3}
	for _, f := range opts {
		f(&o)
	}
	retryer := func() aws.Retryer {
		return retry.NewStandard(func(s *retry.StandardOptions) {
			s.MaxAttempts = o.MaxAttempts
			s.MaxBackoff = 20 * time.Second
			if o.Backoff != nil {
				s.Backoff = o.Backoff
			}
		})
	}
	apply := func(b *bedrockruntime.Options) {
		if o.Endpoint != "" {
			b.BaseEndpoint = aws.String(o.Endpoint)
		}
		if o.Region != "" {
			b.Region = o.Region
		}
		b.Retryer = retryer()
		if o.HTTPClient != nil {
			b.HTTPClient = o.HTTPClient
		}
	}
	if o.Credentials != nil {
		b := bedrockruntime.Options{Credentials: o.Credentials, Region: "us-east-1"}
		apply(&b)
		return bedrockruntime.New(b), nil
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("bedrock: load AWS config: %w", err)
	}
	return bedrockruntime.NewFromConfig(cfg, apply), nil
}
