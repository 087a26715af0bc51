// Command provision finishes `make localstack-deploy`: against the stack
// cdklocal deployed with -c ora:api=rest, it adds the e2e webhook source
// (type hmac, a fresh random secret, header X-Ora-Signature) to the
// WebhookSecrets secret, keeping any other source there, mints a bearer token
// for the REST API (shared/apitoken, signed with the ApiTokenKey secret,
// every scope, 24 h), and writes both into the outputs file under the
// pseudo-stack "OraE2E" (E2ESecret, E2EToken), where `make e2e
// OUTPUTS=localstack/outputs.json` finds them.
//
//	go run ./localstack/provision [-outputs localstack/outputs.json]
//	go run ./localstack/provision -mint -sub alice -scope "ora/orientation.read" [-ttl 1h]
//
// -mint prints a token for the REST API instead (for a deployed REST profile,
// LocalStack or AWS). The AWS endpoint and credentials are the SDK's usual
// ones (AWS_ENDPOINT_URL=http://localhost:4566 for LocalStack).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/ora-runtime/ora/shared/apitoken"
	"github.com/ora-runtime/ora/shared/observe"
)

// AllScopes are every scope the API's routes ask for.
var AllScopes = []string{"ora.approve", "ora.read", "ora.operate", "orientation.read", "orientation.propose", "orientation.approve", "orientation.admin"}

// E2EStack is the pseudo-stack of the outputs file the e2e values go under.
const E2EStack = "OraE2E"

func main() {
	outputs := flag.String("outputs", "localstack/outputs.json", "the cdk outputs file of the deployed stack")
	mint := flag.Bool("mint", false, "print a bearer token instead of provisioning")
	sub := flag.String("sub", "e2e", "-mint: the token's subject")
	scope := flag.String("scope", strings.Join(AllScopes, " "), "-mint: space-separated scopes")
	ttl := flag.Duration("ttl", 24*time.Hour, "-mint: lifetime (at most 168h)")
	flag.Parse()
	if err := run(context.Background(), *outputs, *mint, apitoken.Claims{Subject: *sub, Scope: *scope}, *ttl); err != nil {
		fmt.Fprintln(os.Stderr, "provision:", err)
		os.Exit(1)
	}
}

// secretsAPI is the part of Secrets Manager provision calls.
type secretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
	PutSecretValue(ctx context.Context, in *secretsmanager.PutSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error)
}

func run(ctx context.Context, path string, mintOnly bool, claims apitoken.Claims, ttl time.Duration) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w (run make localstack-deploy first)", err)
	}
	stacks, outs, err := readOutputs(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	sm := secretsmanager.NewFromConfig(cfg)
	token, err := mint(ctx, sm, outs, claims, ttl)
	if err != nil {
		return err
	}
	if mintOnly {
		fmt.Println(token)
		return nil
	}
	secret, err := addE2ESource(ctx, sm, outs)
	if err != nil {
		return err
	}
	stacks[E2EStack] = map[string]string{"E2ESecret": secret, "E2EToken": token}
	b, _ := json.MarshalIndent(stacks, "", "  ")
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return err
	}
	fmt.Printf("provision: e2e source and token written to %s (%s)\n", path, E2EStack)
	return nil
}

// readOutputs parses a cdk outputs file ({stack: {name: value}}) and merges
// every stack's outputs except E2EStack's.
func readOutputs(raw []byte) (map[string]map[string]string, map[string]string, error) {
	var stacks map[string]map[string]string
	if err := json.Unmarshal(raw, &stacks); err != nil {
		return nil, nil, fmt.Errorf("not a cdk outputs file: %w", err)
	}
	outs := map[string]string{}
	for name, o := range stacks {
		if name == E2EStack {
			continue
		}
		for k, v := range o {
			outs[k] = v
		}
	}
	for _, k := range []string{"ApiUrl", "WebhookSecretArn", "ApiTokenKeyArn"} {
		if outs[k] == "" {
			return nil, nil, fmt.Errorf("output %s is missing (was the stack deployed with -c ora:api=rest?)", k)
		}
	}
	return stacks, outs, nil
}

func mint(ctx context.Context, sm secretsAPI, outs map[string]string, claims apitoken.Claims, ttl time.Duration) (string, error) {
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(outs["ApiTokenKeyArn"])})
	if err != nil {
		return "", fmt.Errorf("read the token key (ApiTokenKeyArn): %w", err)
	}
	return apitoken.Sign([]byte(aws.ToString(out.SecretString)), claims, time.Now(), ttl)
}

// addE2ESource writes the e2e source, with a new random secret, into the
// WebhookSecrets secret and returns that secret.
func addE2ESource(ctx context.Context, sm secretsAPI, outs map[string]string) (string, error) {
	arn := outs["WebhookSecretArn"]
	cur, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
	if err != nil {
		return "", fmt.Errorf("read WebhookSecrets: %w", err)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	secret := hex.EncodeToString(b)
	next, err := withE2ESource(aws.ToString(cur.SecretString), secret)
	if err != nil {
		return "", err
	}
	if _, err := sm.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(arn), SecretString: aws.String(next)}); err != nil {
		return "", fmt.Errorf("write WebhookSecrets: %w", err)
	}
	return secret, nil
}

// withE2ESource returns the sources document with the e2e source set to
// secret: added, or replacing an earlier e2e source; other sources are kept.
// The result passes observe.ParseSources.
func withE2ESource(current, secret string) (string, error) {
	sources, err := observe.ParseSources([]byte(current))
	if err != nil {
		return "", fmt.Errorf("WebhookSecrets holds no valid sources: %w", err)
	}
	e2e := observe.SourceConfig{Name: "e2e", Type: "hmac", Secret: secret, Header: "X-Ora-Signature"}
	out := []observe.SourceConfig{e2e}
	for _, s := range sources {
		if s.Name != "e2e" {
			out = append(out, s)
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", err
	}
	if _, err := observe.ParseSources(b); err != nil {
		return "", err
	}
	return string(b), nil
}
