package main

import (
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/observe"
)

func TestWithE2ESource(t *testing.T) {
	cases := []struct {
		name, current string
		wantNames     []string
	}{
		{"empty secret", "[]", []string{"e2e"}},
		{"blank secret", "", []string{"e2e"}},
		{"keeps other sources", `[{"name":"github","type":"github","secret":"gh"}]`, []string{"e2e", "github"}},
		{"replaces an earlier e2e source", `[{"name":"e2e","type":"hmac","secret":"old","header":"X-Ora-Signature"}]`, []string{"e2e"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := withE2ESource(tc.current, "new-secret")
			if err != nil {
				t.Fatal(err)
			}
			sources, err := observe.ParseSources([]byte(got))
			if err != nil {
				t.Fatalf("%s: %v", got, err)
			}
			var names []string
			for _, s := range sources {
				names = append(names, s.Name)
				if s.Name == "e2e" && (s.Secret != "new-secret" || s.Type != "hmac" || s.Header != "X-Ora-Signature") {
					t.Errorf("e2e source %+v", s)
				}
			}
			if strings.Join(names, ",") != strings.Join(tc.wantNames, ",") {
				t.Errorf("sources %v, want %v", names, tc.wantNames)
			}
		})
	}
	if _, err := withE2ESource(`{"not":"a list"}`, "x"); err == nil {
		t.Error("a broken WebhookSecrets was overwritten")
	}
}

func TestReadOutputs(t *testing.T) {
	ok := `{"Ora":{"ApiUrl":"https://x/prod/","WebhookSecretArn":"arn:w","ApiTokenKeyArn":"arn:k"},"OraE2E":{"E2ESecret":"old"}}`
	stacks, outs, err := readOutputs([]byte(ok))
	if err != nil || outs["ApiTokenKeyArn"] != "arn:k" || outs["E2ESecret"] != "" || len(stacks) != 2 {
		t.Errorf("readOutputs = %v, %v, %v", stacks, outs, err)
	}
	if _, _, err := readOutputs([]byte(`{"Ora":{"ApiUrl":"https://x/","WebhookSecretArn":"arn:w"}}`)); err == nil || !strings.Contains(err.Error(), "ora:api=rest") {
		t.Errorf("an http-profile outputs file: %v, want a hint at ora:api=rest", err)
	}
}
