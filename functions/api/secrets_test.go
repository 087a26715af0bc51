package main

import (
	"context"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/ora"
)

type sentTokens struct{ tokens []string }

func (s *sentTokens) SendTaskSuccess(_ context.Context, token string, _ []byte) error {
	s.tokens = append(s.tokens, token)
	return nil
}

// The task tokens the api function reads to settle a wait, and the REST
// profile's signing key, join its registry as they are used: its logs and
// responses redact them; the token still reaches Step Functions as it is.
func TestAPIRegistersWhatItReads(t *testing.T) {
	secrets := ora.NewSecrets()
	next := &sentTokens{}
	const token = "AAAAKgAAAAIAAAAAAAAAAapi-task-token-canary"
	if err := (registering{next, secrets}).SendTaskSuccess(context.Background(), token, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if len(next.tokens) != 1 || next.tokens[0] != token {
		t.Errorf("Step Functions got %v, want the token as it is", next.tokens)
	}
	if got := secrets.RedactString("token " + token); strings.Contains(got, token) {
		t.Errorf("RedactString = %q: the token was not registered", got)
	}
	key := registeredKey(func(context.Context) ([]byte, error) { return []byte("rest-signing-key-canary"), nil }, secrets)
	if k, err := key(context.Background()); err != nil || string(k) != "rest-signing-key-canary" {
		t.Fatalf("key = %q, %v", k, err)
	}
	if got := secrets.RedactString("key rest-signing-key-canary"); strings.Contains(got, "canary") {
		t.Errorf("RedactString = %q: the key was not registered", got)
	}
}
