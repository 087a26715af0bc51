package embedded

import (
	"context"
	"path/filepath"
	"testing"
)

// An endpoint means DynamoDB Local: placeholder static credentials. No
// endpoint means AWS: the default credential chain, here the environment.
func TestDynamoClientCredentials(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIDFROMTHECHAIN", "AWS_SECRET_ACCESS_KEY": "chain-secret", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_DYNAMODB": "", "AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
	tests := []struct {
		name         string
		cfg          DynamoConfig
		wantKey      string
		wantEndpoint string
	}{
		{"DynamoDB Local", DynamoConfig{Endpoint: "http://127.0.0.1:8000", Region: "us-east-1"}, "local", "http://127.0.0.1:8000"},
		{"AWS", DynamoConfig{Region: "eu-west-1"}, "AKIDFROMTHECHAIN", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := dynamoClient(context.Background(), tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			o := c.Options()
			creds, err := o.Credentials.Retrieve(context.Background())
			if err != nil {
				t.Fatalf("credentials: %v", err)
			}
			if creds.AccessKeyID != tt.wantKey {
				t.Errorf("access key = %q, want %q", creds.AccessKeyID, tt.wantKey)
			}
			if o.Region != tt.cfg.Region {
				t.Errorf("region = %q, want %q", o.Region, tt.cfg.Region)
			}
			got := ""
			if o.BaseEndpoint != nil {
				got = *o.BaseEndpoint
			}
			if got != tt.wantEndpoint {
				t.Errorf("endpoint = %q, want %q", got, tt.wantEndpoint)
			}
		})
	}
}
