package bedrock_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/ora"
)

func TestToolDigest(t *testing.T) {
	want, canon, err := bedrock.ToolDigest("tracker", "get_issue", json.RawMessage(`{"number":7,"fields":["title","state"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(canon) != `{"input":{"fields":["title","state"],"number":7},"server":"tracker","tool":"get_issue"}` {
		t.Fatalf("canonical call %s", canon)
	}
	tests := []struct {
		name, server, tool, input string
		same                      bool
	}{
		{"keys in another order, with spaces", "tracker", "get_issue", `{ "fields": ["title","state"], "number": 7 }`, true},
		{"another input", "tracker", "get_issue", `{"number":8,"fields":["title","state"]}`, false},
		{"another tool", "tracker", "search", `{"number":7,"fields":["title","state"]}`, false},
		{"another server", "github", "get_issue", `{"number":7,"fields":["title","state"]}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := bedrock.ToolDigest(tc.server, tc.tool, json.RawMessage(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			if (got == want) != tc.same {
				t.Errorf("digest %s vs %s: same = %v, want %v", got, want, got == want, tc.same)
			}
		})
	}
	if _, _, err := bedrock.ToolDigest("tracker", "get_issue", json.RawMessage(`[7]`)); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("an input that is not an object: %v, want EINVALID", err)
	}
}

// A tool result of a recorded decision is kept once, beside the Converse
// recordings, unless it holds a registered secret; the replayer answers
// the same call from it and names a call nobody recorded.
func TestToolRecordings(t *testing.T) {
	const canary = "canary-7d1e-tool-secret"
	secrets := &ora.Secrets{}
	secrets.Add("test canary", canary)
	ctx := context.Background()
	input := json.RawMessage(`{"number":7}`)
	tests := []struct {
		name   string
		result string
		reason string // the *NotRecorded's reason, "" when kept
	}{
		{"a result is kept", `{"content":[{"type":"text","text":"Issue 7: open"}]}`, ""},
		{"a result holding a secret is refused", `{"content":[{"type":"text","text":"token ` + canary + `"}]}`, "secret"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rec := &bedrock.Recorder{Store: bedrock.DirRecordings(dir), Secrets: secrets, KeepOnce: true}
			calls := 0
			call := func(context.Context) (json.RawMessage, error) {
				calls++
				return json.RawMessage(tc.result), nil
			}
			out, err := rec.Tool(ctx, "tracker", "get_issue", input, call)
			if string(out) != tc.result {
				t.Fatalf("the answer %s, want the tool's result whatever is kept", out)
			}
			var nr *bedrock.NotRecorded
			if got := ""; errors.As(err, &nr) {
				got = nr.Reason
				if got != tc.reason {
					t.Fatalf("not recorded for %q, want %q", got, tc.reason)
				}
			} else if err != nil || tc.reason != "" {
				t.Fatalf("Tool: %v, want reason %q", err, tc.reason)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
			for _, f := range files {
				if b, _ := os.ReadFile(f); strings.Contains(string(b), canary) {
					t.Errorf("%s holds the secret", f)
				}
			}
			player := &bedrock.Replayer{Recordings: bedrock.DirRecordings(dir)}
			replayed, err := player.Tool(ctx, "tracker", "get_issue", input, nil)
			if tc.reason != "" {
				var missing *bedrock.MissingToolResult
				if !errors.As(err, &missing) || !strings.Contains(err.Error(), "no recorded result for tool tracker/get_issue") {
					t.Fatalf("replaying a refused result: %v, want it missing", err)
				}
				return
			}
			if err != nil || string(replayed) != tc.result {
				t.Fatalf("replayed %s, %v; want %s", replayed, err, tc.result)
			}
			// Kept once: asked again, the recorder answers from the store.
			if out, err := rec.Tool(ctx, "tracker", "get_issue", input, call); err != nil || string(out) != tc.result || calls != 1 {
				t.Errorf("again: %s, %v, %d tool calls; want the recorded result and 1 call", out, err, calls)
			}
		})
	}
}
