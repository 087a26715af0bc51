package bedrock_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/ora"
)

// converse sends one Converse body through rec to the fake Bedrock.
func converse(t *testing.T, rec *bedrock.Recorder, url, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/model/m1/converse", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	// The fake asks for a signature's shape, not its validity.
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDTEST/20261126/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := rec.Do(req)
	if err == nil && resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("the fake refused the request: %d %s", resp.StatusCode, b)
	}
	return resp, err
}

// The guards a Recorder keeps when it records real waves: an exchange
// holding a registered secret (in the request, as a tool result or a
// packet's fact would put it, or in the answer) or over the size limit is
// answered but not kept, and KeepOnce answers a recorded request from the
// store without a model call and never overwrites a recording.
func TestRecorderGuards(t *testing.T) {
	const canary = "canary-2b7e151628aed2a6-secret"
	secrets := &ora.Secrets{}
	secrets.Add("test canary", canary)
	const tools = `,"toolConfig":{"tools":[{"toolSpec":{"name":"record_observation","inputSchema":{"json":{"type":"object"}}}},{"toolSpec":{"name":"oa_ledger_read","inputSchema":{"json":{"type":"object"}}}}]}}`
	plain := `{"messages":[{"role":"user","content":[{"text":"hi"}]}]` + tools
	withResult := `{"messages":[{"role":"user","content":[{"text":"hi"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"oa_ledger_read","input":{}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"token ` + canary + `"}]}}]}]` + tools
	tests := []struct {
		name     string
		body     string
		answer   string // in the model's reply
		maxBytes int
		reason   string // the *NotRecorded's reason; "" kept
	}{
		{"a plain exchange is kept", plain, "a heartbeat", 0, ""},
		{"a secret in a tool result is refused", withResult, "a heartbeat", 0, "secret"},
		{"a secret in the answer is refused", plain, "the token is " + canary, 0, "secret"},
		{"an exchange over the size limit is refused", plain, "a heartbeat", 64, "size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := bedrocktest.NewFunc(t, func(bedrocktest.Request) bedrocktest.Reply {
				return bedrocktest.Tool("record_observation", map[string]any{"content": tc.answer})
			})
			dir := t.TempDir()
			rec := &bedrock.Recorder{Store: bedrock.DirRecordings(dir), Secrets: secrets, MaxBytes: tc.maxBytes, KeepOnce: true}
			resp, err := converse(t, rec, fake.URL, tc.body)
			files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
			if tc.reason == "" {
				if err != nil || resp.StatusCode != http.StatusOK || len(files) != 1 {
					t.Fatalf("kept: %v, files %v", err, files)
				}
				return
			}
			var nr *bedrock.NotRecorded
			if !errors.As(err, &nr) || nr.Reason != tc.reason {
				t.Fatalf("err %v, want a NotRecorded for %s", err, tc.reason)
			}
			if len(files) != 0 {
				t.Errorf("recordings %v, want none", files)
			}
		})
	}
	t.Run("a recorded request is answered from the store and never overwritten", func(t *testing.T) {
		fake := bedrocktest.NewFunc(t, func(bedrocktest.Request) bedrocktest.Reply {
			return bedrocktest.Tool("record_observation", map[string]any{"content": "first"})
		})
		dir := t.TempDir()
		rec := &bedrock.Recorder{Store: bedrock.DirRecordings(dir), KeepOnce: true}
		body := `{"messages":[{"role":"user","content":[{"text":"hi"}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"record_observation","inputSchema":{"json":{"type":"object"}}}}]}}`
		if _, err := converse(t, rec, fake.URL, body); err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		if len(files) != 1 {
			t.Fatalf("files %v", files)
		}
		before, _ := os.ReadFile(files[0])
		resp, err := converse(t, rec, fake.URL, body)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		if n := len(fake.Requests()); n != 1 || !bytes.Contains(got, []byte("first")) {
			t.Errorf("model calls %d (want 1), answer %s", n, got)
		}
		if after, _ := os.ReadFile(files[0]); !bytes.Equal(before, after) {
			t.Error("the recording changed")
		}
	})
}

func TestCreateNeverOverwrites(t *testing.T) {
	ctx := context.Background()
	digest := strings.Repeat("cd", 32)
	first := bedrock.Recording{Digest: digest, ModelID: "m", Request: []byte(`{"modelId":"m"}`), Response: []byte(`{"output":"first"}`)}
	second := first
	second.Response = []byte(`{"output":"second"}`)
	stores := []struct {
		name  string
		store interface {
			bedrock.RecordingStore
			bedrock.RecordingCreator
		}
	}{
		{"a folder", bedrock.DirRecordings(t.TempDir())},
		{"an S3 prefix", bedrock.S3Recordings{Client: newMemS3(), Bucket: "golden", Prefix: "ora/golden/recordings/"}},
	}
	for _, tc := range stores {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.store.Create(ctx, first); err != nil {
				t.Fatal(err)
			}
			if err := tc.store.Create(ctx, second); ora.ErrorCode(err) != ora.ECONFLICT {
				t.Fatalf("second create: %v, want ECONFLICT", err)
			}
			got, err := tc.store.Recording(ctx, digest)
			if err != nil || !strings.Contains(string(got.Response), "first") {
				t.Fatalf("kept %s, %v; want the first", got.Response, err)
			}
		})
	}
}

// memS3 is an S3 bucket in memory that honours If-None-Match: * as S3 does
// (412 PreconditionFailed when the key exists).
type memS3 struct{ objects map[string][]byte }

func newMemS3() *memS3 { return &memS3{objects: map[string][]byte{}} }

func (m *memS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	key := *in.Bucket + "/" + *in.Key
	if in.IfNoneMatch != nil && *in.IfNoneMatch == "*" {
		if _, ok := m.objects[key]; ok {
			return nil, &smithy.GenericAPIError{Code: "PreconditionFailed", Message: "At least one of the pre-conditions you specified did not hold"}
		}
	}
	b, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	m.objects[key] = b
	return &s3.PutObjectOutput{}, nil
}

func (m *memS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	b, ok := m.objects[*in.Bucket+"/"+*in.Key]
	if !ok {
		return nil, &smithy.GenericAPIError{Code: "NoSuchKey", Message: "The specified key does not exist."}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(b))}, nil
}
