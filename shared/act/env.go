package act

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/ora-runtime/ora/shared/ora"
)

// SecretsAPI is the part of the Secrets Manager API ConfigFromEnv calls;
// *secretsmanager.Client satisfies it.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// The environment variables ConfigFromEnv reads.
const (
	EnvConfig           = "ORA_ACT_CONFIG"         // Config as JSON (allow-lists, timeout)
	EnvTopicARN         = "ORA_TOPIC_ARN"          // NotifyConfig.TopicARN
	EnvBucket           = "ORA_BUCKET"             // ObjectConfig.Bucket
	EnvSigningSecretARN = "ORA_SIGNING_SECRET_ARN" // a secret whose string is HTTPConfig.SigningSecret
)

// ConfigFromEnv builds a Lambda's Config: ORA_ACT_CONFIG (JSON, optional),
// then ORA_TOPIC_ARN and ORA_BUCKET when set, then the signing secret read
// from Secrets Manager when ORA_SIGNING_SECRET_ARN is set. Errors: EINVALID
// (bad JSON, or a secret ARN without a client), the SDK's errors.
func ConfigFromEnv(ctx context.Context, getenv func(string) string, secrets SecretsAPI) (Config, error) {
	var c Config
	if raw := getenv(EnvConfig); raw != "" {
		if err := json.Unmarshal([]byte(raw), &c); err != nil {
			return Config{}, ora.Invalid(EnvConfig, "not a JSON act config: %v", err)
		}
	}
	if v := getenv(EnvTopicARN); v != "" {
		c.Notify.TopicARN = v
	}
	if v := getenv(EnvBucket); v != "" {
		c.Object.Bucket = v
	}
	if arn := getenv(EnvSigningSecretARN); arn != "" {
		if secrets == nil {
			return Config{}, ora.Invalid(EnvSigningSecretARN, "set, but no Secrets Manager client")
		}
		out, err := secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
		if err != nil {
			return Config{}, fmt.Errorf("act: read signing secret %s: %w", arn, err)
		}
		c.HTTP.SigningSecret = aws.ToString(out.SecretString)
	}
	return c, nil
}
