package bedrock_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/ora"
)

func TestRequestDigest(t *testing.T) {
	const path = "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
	body := `{"messages":[{"role":"user","content":[{"text":"hi"}]}],"inferenceConfig":{"maxTokens":4096,"temperature":0.20}}`
	want, canon, err := bedrock.RequestDigest(path, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(canon), `"modelId":"us.anthropic.claude-sonnet-4-5-20250929-v1:0"`) || !strings.Contains(string(canon), `"temperature":0.20`) {
		t.Fatalf("canonical body %s lacks the model id or changed a number's text", canon)
	}
	cases := []struct {
		name, path, body string
		same             bool
	}{
		{"keys in another order, with spaces", path, `{ "inferenceConfig": {"temperature":0.20, "maxTokens":4096}, "messages":[{"content":[{"text":"hi"}],"role":"user"}] }`, true},
		{"another model", "/model/us.anthropic.claude-haiku-4-5-20251001-v1%3A0/converse", body, false},
		{"another prompt", path, strings.Replace(body, "hi", "hello", 1), false},
		{"another temperature", path, strings.Replace(body, "0.20", "0.2", 1), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := bedrock.RequestDigest(tc.path, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if (got == want) != tc.same {
				t.Errorf("digest %s vs %s: same = %v, want %v", got, want, got == want, tc.same)
			}
		})
	}
	if _, _, err := bedrock.RequestDigest("/guardrail/g1/version/1/apply", []byte(`{}`)); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("a call other than Converse: %v, want EINVALID", err)
	}
}

func TestDirRecordings(t *testing.T) {
	ctx := context.Background()
	d := bedrock.DirRecordings(t.TempDir())
	digest := strings.Repeat("ab", 32)
	if _, err := d.Recording(ctx, digest); ora.ErrorCode(err) != ora.ENOTFOUND {
		t.Fatalf("before keeping: %v, want ENOTFOUND", err)
	}
	rec := bedrock.Recording{Digest: digest, ModelID: "m", Request: []byte(`{"modelId":"m"}`), Response: []byte(`{"output":{}}`)}
	if err := d.Keep(ctx, rec); err != nil {
		t.Fatal(err)
	}
	got, err := d.Recording(ctx, digest)
	if err != nil || strings.Join(strings.Fields(string(got.Response)), "") != `{"output":{}}` {
		t.Fatalf("kept %+v, %v", got, err)
	}
	if _, err := d.Recording(ctx, "../etc/passwd"); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("a digest that is a path: %v, want EINVALID", err)
	}
}
