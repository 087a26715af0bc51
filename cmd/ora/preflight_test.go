package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/embedded"
)

// noAWSCredentials empties the default credential chain for the test.
func noAWSCredentials(t *testing.T) {
	t.Helper()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
}

// testSource is a webhook source for the test configs: a config file names
// its own sources.
const testSource = "sources:\n  - {name: demo, type: hmac, secret: preflight-test-secret}\n"

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// ora dev refuses to start, with one line naming what is missing, when its
// config needs DynamoDB or Bedrock and they are not there.
func TestDevPreflight(t *testing.T) {
	bedrockConfig := func(endpoint string) string {
		s := testSource + "listen: 127.0.0.1:0\ndata_dir: " + filepath.ToSlash(t.TempDir()) + "\nreasoner:\n  kind: bedrock\n  region: us-east-1\n"
		if endpoint != "" {
			s += "  bedrock_endpoint: " + endpoint + "\n"
		}
		return s
	}
	tests := []struct {
		name   string
		creds  bool
		reply  *bedrocktest.Reply // a fake Bedrock answering this; nil: none
		config func(fake string) string
		want   []string
	}{
		{name: "dynamodb unreachable",
			config: func(string) string {
				return testSource + "store:\n  kind: dynamodb\n  dynamodb: {endpoint: \"http://" + closedPort(t) + "\", table: t, idempotency_table: i}\n"
			},
			want: []string{"store.kind dynamodb: DynamoDB at http://127.0.0.1:", "is not reachable", "make run-dynamodb"}},
		{name: "dynamodb on AWS without credentials",
			config: func(string) string {
				return testSource + "store:\n  kind: dynamodb\n  dynamodb: {region: eu-west-1, table: t, idempotency_table: i}\n"
			},
			want: []string{"store.kind dynamodb: no AWS credentials found for DynamoDB in eu-west-1", "store.dynamodb.endpoint for DynamoDB Local"}},
		{name: "bedrock without credentials",
			config: func(string) string { return bedrockConfig("") },
			want:   []string{"reasoner.kind bedrock: no AWS credentials found"}},
		{name: "bedrock without model access", creds: true,
			reply:  &bedrocktest.Reply{Status: http.StatusForbidden, ErrorType: "AccessDeniedException", Message: "You don't have access to the model with the specified model ID."},
			config: bedrockConfig,
			want:   []string{"reasoner.kind bedrock: no access to model us.anthropic.", "in us-east-1", "enable the model in the Bedrock console"}},
		{name: "bedrock unknown model", creds: true,
			reply:  &bedrocktest.Reply{Status: http.StatusBadRequest, ErrorType: "ValidationException", Message: "The provided model identifier is invalid."},
			config: bedrockConfig,
			want:   []string{"cannot be invoked (check reasoner.bedrock.model and reasoner.region): The provided model identifier is invalid."}},
		{name: "bedrock unreachable", creds: true,
			config: func(string) string { return bedrockConfig("http://" + closedPort(t)) },
			want:   []string{"reasoner.kind bedrock: cannot reach http://127.0.0.1:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			noAWSCredentials(t)
			if tt.creds {
				t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
				t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
			}
			fake := ""
			if tt.reply != nil {
				fake = bedrocktest.New(t, *tt.reply).URL
			}
			cfg := writeFile(t, t.TempDir(), "ora.yaml", tt.config(fake))
			var stdout, stderr bytes.Buffer
			if code := runDev(context.Background(), []string{"--config", cfg}, &stdout, &stderr); code != 1 {
				t.Fatalf("exit %d, want 1; stderr %s", code, stderr.String())
			}
			if lines := strings.Count(stderr.String(), "\n"); lines != 1 || !strings.HasPrefix(stderr.String(), "ora dev: ") {
				t.Errorf("stderr is %d lines, want one starting with \"ora dev: \":\n%s", lines, stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr.String())
				}
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing: ora dev must not start", stdout.String())
			}
		})
	}
}

// With the model answering, the preflight passes (one Converse call).
func TestDevPreflightBedrockAnswers(t *testing.T) {
	noAWSCredentials(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	fake := bedrocktest.New(t, bedrocktest.Reply{Text: "p", StopReason: "max_tokens"})
	cfg := writeFile(t, t.TempDir(), "ora.yaml", testSource+"reasoner:\n  kind: bedrock\n  region: us-east-1\n  bedrock_endpoint: "+fake.URL+"\n")
	c, err := embedded.LoadConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := preflight(context.Background(), c); err != nil {
		t.Fatalf("preflight: %v", err)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || reqs[0].InferenceConfig == nil || reqs[0].InferenceConfig.MaxTokens == nil || *reqs[0].InferenceConfig.MaxTokens != 1 {
		t.Errorf("requests %+v, want one Converse with maxTokens 1", reqs)
	}
}
