package connect

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"

	"github.com/ora-runtime/ora/shared/ora"
)

// SecretsAPI is the part of the Secrets Manager API SecretsManager calls;
// *secretsmanager.Client satisfies it.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// DefaultSecretTTL is how long SecretsManager keeps a secret before reading
// it again: a rotated credential is in use within a minute.
const DefaultSecretTTL = time.Minute

// SecretsManager is the Source on AWS: each connection's secret is the
// SecretString of the secret its SecretARN names (one secret per
// connection), kept for TTL.
type SecretsManager struct {
	client  SecretsAPI
	ttl     time.Duration
	secrets *ora.Secrets
	now     func() time.Time

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	value string
	until time.Time
}

var _ Source = (*SecretsManager)(nil)

// NewSecretsManager returns the Secrets Manager source; ttl <= 0 means
// DefaultSecretTTL. Every value read is registered in secrets (may be nil).
func NewSecretsManager(client SecretsAPI, ttl time.Duration, secrets *ora.Secrets) *SecretsManager {
	if ttl <= 0 {
		ttl = DefaultSecretTTL
	}
	return &SecretsManager{client: client, ttl: ttl, secrets: secrets, now: time.Now, cache: map[string]cached{}}
}

// Secret reads c's secret (cached for the TTL). Errors: EINVALID (no
// SecretARN, an empty secret), ETRANSIENT (throttling, a service error), the
// SDK's errors.
func (s *SecretsManager) Secret(ctx context.Context, c Config) (string, error) {
	if c.SecretARN == "" {
		return "", ora.Invalid("connections("+c.Name+").secret_arn", "not set")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.cache[c.SecretARN]; ok && s.now().Before(e.until) {
		return e.value, nil
	}
	out, err := s.client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(c.SecretARN)})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) {
			switch ae.ErrorCode() {
			case "ThrottlingException", "InternalServiceError", "RequestTimeout":
				return "", ora.Errorf(ora.ETRANSIENT, "connection %s: read secret: %s", c.Name, ae.ErrorCode())
			}
		}
		return "", fmt.Errorf("connection %s: read secret: %w", c.Name, err)
	}
	v := aws.ToString(out.SecretString)
	if v == "" {
		return "", ora.Invalid("connections("+c.Name+").secret_arn", "the secret is empty: put the credential in it")
	}
	s.secrets.Add("connection:"+c.Name, v)
	s.cache[c.SecretARN] = cached{value: v, until: s.now().Add(s.ttl)}
	return v, nil
}
