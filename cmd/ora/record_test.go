package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/reason"
)

const recordConfig = `listen: 127.0.0.1:0
data_dir: %s
sources:
  - {name: demo, type: hmac, secret: test-demo-secret, header: X-Ora-Signature, hash: sha256}
tokens:
  - {token: operator-token-1, subject: operator, scopes: [ora.operate, ora.read]}
reasoner:
  kind: bedrock
  bedrock_endpoint: %s
  region: us-east-1
  bedrock:
    batch: {window: 0s}
operate:
  golden_dir: %s
`

const recordWave = `{
  "name": "heartbeat",
  "signal": {
    "id": "golden-heartbeat",
    "source": {"type": "webhook", "name": "demo", "provider": "hmac"},
    "timestamp": "2026-11-20T12:00:00Z",
    "payload": {"status": "ok"},
    "normalized_at": "2026-11-20T12:00:00Z",
    "dedup_key": "golden-heartbeat",
    "raw_digest": "0000000000000000000000000000000000000000000000000000000000000000"
  },
  "expect": {"action": "none", "band": "high"}
}`

// A candidate motor under the Bedrock reasoner is refused by the gate until
// its golden set is recorded, naming the request digest and the command;
// `ora motor record --file` records it through the model once, and the
// promotion and `ora replay` then pass from the recordings without a call
// reaching the model.
func TestMotorRecordThenPromote(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	fake := bedrocktest.NewFunc(t, func(bedrocktest.Request) bedrocktest.Reply {
		return bedrocktest.Tool(reason.ObservationTool, map[string]any{
			"confidence": 0.97, "layers": []string{"SIGNAL"}, "content": "a heartbeat",
			"decision": map[string]any{"allowed_action": "PROCEED", "safety_check_summary": "nothing to do",
				"action": map[string]any{"type": act.TypeNone, "tier": 1, "parameters": map[string]any{"reason": "a heartbeat"},
					"allowed_operations": []string{act.TypeNone}, "forbidden_paths": []string{}, "author_type": "architect"},
				"then": []any{}},
		})
	})
	dir := t.TempDir()
	golden := filepath.Join(dir, "golden")
	if err := os.MkdirAll(golden, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(golden, "heartbeat.json"), []byte(recordWave), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgFile, url := startDev(t, fmt.Sprintf(recordConfig, dir, fake.URL, golden))
	ora := func(args ...string) (int, string, string) {
		return runOra(t, append(args, "--config", cfgFile)...)
	}
	candidate := writeBundle(t, dir, "1.0.0", "confidence: 0.95", "confidence: 0.96")
	if err := os.WriteFile(candidate, []byte(strings.Replace(mustRead(t, candidate), "model: {profile: rules}", `model: {purpose: "Watch the demo source."}`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := ora("motor", "propose", candidate, "--url", url); code != 0 {
		t.Fatalf("propose: %s", stderr)
	}
	if code, _, stderr := ora("motor", "promote", "1.0.0", "--url", url); code != 1 || !strings.Contains(stderr, "heartbeat") || !strings.Contains(stderr, "no recorded response for request digest") {
		t.Fatalf("promote before recording: exit %d, %s; want refused naming the missing recording", code, stderr)
	}
	code, stdout, stderr := ora("motor", "record", "--file", candidate)
	if code != 0 || !strings.Contains(stdout, "recorded 1 model calls for 1 golden waves under motor 1.0.0") {
		t.Fatalf("record: exit %d, %s %s", code, stdout, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(golden, "recordings", "*.json"))
	if len(files) != 1 {
		t.Fatalf("recordings %v, want one", files)
	}
	calls := len(fake.Requests())
	if code, stdout, stderr := ora("motor", "promote", "1.0.0", "--url", url); code != 0 || !strings.Contains(stdout, "motor 1.0.0 is current") {
		t.Fatalf("promote after recording: exit %d, %s %s", code, stdout, stderr)
	}
	if code, stdout, stderr := ora("replay", "--golden", golden, "--motor", "1.0.0", "--url", url); code != 0 || !strings.Contains(stdout, "0 changed") {
		t.Errorf("replay from the recordings: exit %d, %s %s", code, stdout, stderr)
	}
	if got := len(fake.Requests()); got != calls {
		t.Errorf("the gate or the replay called the model: %d calls, want %d", got, calls)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
