package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/examples/github-triage/githubtest"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/reason"
)

// triageExample is the reference agent's folder, from this package.
const triageExample = "../examples/github-triage"

// triageToken is the GitHub token the example's connection reads from
// GITHUB_TOKEN; the fake GitHub API accepts only it.
const triageToken = "ghp_e2eTriageToken0123456789abcdefABCD"

// TestGitHubTriageAgent runs the reference agent (examples/github-triage)
// through the built binary: `ora dev` started in the example's folder with
// the example's own config, only its listen address, data dir and GitHub
// URL (a local fake that checks the bearer token, the JSON shapes and the
// paths) changed. On SQLite and on DynamoDB Local, with the rules reasoner
// and with the Bedrock reasoner against the fake Converse server (which
// refuses an answer that breaks the schema the request declared), a signed
// issues.opened delivery labels the issue and comments on it in parallel,
// each exactly once, then runs the report function, which writes its report;
// the wave succeeds, and the API shows one success per action. A ping is
// recorded, and nothing is sent.
func TestGitHubTriageAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ora dev four times; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "ora")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/ora").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/ora: %v\n%s", err, out)
	}
	example, err := filepath.Abs(triageExample)
	if err != nil {
		t.Fatal(err)
	}
	delivery, err := os.ReadFile(filepath.Join(example, "issue-opened.json"))
	if err != nil {
		t.Fatal(err)
	}
	stores := map[string]func(t *testing.T) string{
		"sqlite": func(*testing.T) string { return "" },
		"dynamodb": func(t *testing.T) string {
			return fmt.Sprintf("store:\n  kind: dynamodb\n  dynamodb:\n    endpoint: %s\n    region: us-east-1\n    table: %s\n    idempotency_table: %s\n    create_tables: true\n",
				dynamotest.Endpoint(t), dynamotest.TableName("triage-ledger"), dynamotest.TableName("triage-idem"))
		},
	}
	for _, store := range []string{"sqlite", "dynamodb"} {
		for _, reasoner := range []string{"rules", "bedrock"} {
			t.Run(store+"/"+reasoner, func(t *testing.T) {
				dir := t.TempDir()
				report := filepath.Join(dir, "functions", "write-report", "reports", "ora-runtime-ora-demo-42.md")
				gh := githubtest.New(t, triageToken, report, true)
				file := "ora.yaml"
				var converse *bedrocktest.Server
				if reasoner == "bedrock" {
					file = "ora.bedrock.yaml"
					converse = bedrocktest.NewFunc(t, triageModel)
				}
				tg, cfg := triageConfig(t, example, file, dir, gh.URL, stores[store](t), converse)
				runDev(t, bin, cfg, filepath.Join(dir, "ora-dev.log"), tg.base, func(c *exec.Cmd) {
					c.Dir = example // the function's ./report.sh is the example's
					c.Env = append(os.Environ(), "GITHUB_TOKEN="+triageToken, "AWS_ACCESS_KEY_ID=AKIDTEST", "AWS_SECRET_ACCESS_KEY=e2e-secret-key", "AWS_REGION=us-east-1")
				})

				r := tg.sendRaw(t, "72d3162e-cc78-11e3-81ab-4c9367dc0958", delivery)
				if r.status != http.StatusAccepted {
					t.Fatalf("delivery: %d %s", r.status, r.body)
				}
				var rec receipt
				r.decode(t, &rec)
				if w := tg.waitWave(t, rec.WaveID, stopped); w.Status != "SUCCEEDED" {
					t.Fatalf("the wave ended %+v, want SUCCEEDED", w)
				}
				calls := gh.Check(t, map[string]int{"labels": 1, "comments": 1})
				b, err := os.ReadFile(report)
				if err != nil {
					t.Fatalf("the report function wrote nothing: %v", err)
				}
				for _, s := range []string{"# Triage report: ora-runtime/ora-demo#42", "- wave: " + rec.WaveID, `"function":"write-report"`, `"issue":42`} {
					if !strings.Contains(string(b), s) {
						t.Errorf("the report lacks %q:\n%s", s, b)
					}
				}
				var outcomes []string
				for _, e := range tg.entries(t, rec.SignalID) {
					if e.Kind != "execution-evidence" {
						continue
					}
					var ev struct {
						Index   int    `json:"index"`
						Type    string `json:"type"`
						Outcome string `json:"outcome"`
					}
					if err := json.Unmarshal(e.Body, &ev); err != nil {
						t.Fatal(err)
					}
					outcomes = append(outcomes, fmt.Sprintf("%d %s %s", ev.Index, ev.Type, ev.Outcome))
				}
				slices.Sort(outcomes)
				if want := []string{"0 http.request success", "1 http.request success", "2 function.invoke success"}; !slices.Equal(outcomes, want) {
					t.Errorf("evidence %v, want %v", outcomes, want)
				}
				if converse != nil && len(converse.Requests()) == 0 {
					t.Error("the Bedrock reasoner never called the fake Converse server")
				}

				// A ping (and any event no rule or program acts on) is recorded; nothing is sent.
				r = tg.sendRaw(t, "ping-"+store+"-"+reasoner, triagePing)
				if r.status != http.StatusAccepted {
					t.Fatalf("ping: %d %s", r.status, r.body)
				}
				r.decode(t, &rec)
				if w := tg.waitWave(t, rec.WaveID, stopped); w.Status != "SUCCEEDED" {
					t.Fatalf("the ping's wave ended %+v, want SUCCEEDED", w)
				}
				if n := len(gh.Received()); n != len(calls) || gh.Refused() != 0 {
					t.Errorf("after the ping GitHub got %d requests (refused %d), want %d", n, gh.Refused(), len(calls))
				}
			})
		}
	}
}

// triagePing is GitHub's ping delivery, sent when a webhook is created.
var triagePing = []byte(`{"zen":"Keep it logically awesome.","hook_id":109948940,"hook":{"type":"Repository","id":109948940,"name":"web","active":true,"events":["issues"],"config":{"content_type":"json","insecure_ssl":"0","url":"https://ora.example.com/webhooks/github"}},"repository":{"id":186853002,"name":"ora-demo","full_name":"ora-runtime/ora-demo","private":false},"sender":{"login":"octocat","id":583231,"type":"User"}}`)

// triageModel is the model: for the new issue it decides the label and
// the comment through the github connection, in parallel, and the report
// after both; for anything else (the ping), nothing; to the start-up check
// (no tools offered), a word. Its answers are
// checked against the schema each request declares.
func triageModel(req bedrocktest.Request) bedrocktest.Reply {
	if req.ToolConfig == nil {
		return bedrocktest.Reply{Text: "ok"} // ora dev's check of the model at start
	}
	action := func(typ string, params map[string]any) map[string]any {
		return map[string]any{"type": typ, "parameters": params, "tier": 2, "allowed_operations": []string{typ}, "forbidden_paths": []string{}, "author_type": "architect"}
	}
	request := func(kind, body string) map[string]any {
		return action("http.request", map[string]any{"method": "POST", "connection": "github", "path": "/repos/ora-runtime/ora-demo/issues/42/" + kind, "url": "", "body": body})
	}
	decision := map[string]any{"safety_check_summary": "a ping: nothing to do", "allowed_action": "PROCEED",
		"action": action("none", map[string]any{"reason": "not a new issue"}), "then": []any{}}
	// The ping's signal holds GitHub's zen line; the does not (its
	// packet may hold the earlier waves, never a later one).
	if !strings.Contains(req.UserText(), "Keep it logically awesome") {
		decision = map[string]any{
			"safety_check_summary": "labels and a comment on the new issue through the github connection; the report only writes a file",
			"allowed_action":       "PROCEED",
			"action":               request("labels", `{"labels":["triage"]}`),
			"then": []any{
				map[string]any{"action": request("comments", `{"body":"Thanks @octocat! This issue is labelled triage; a maintainer will look at it soon."}`), "depends_on": []int{}},
				map[string]any{"action": action("function.invoke", map[string]any{"function": "write-report", "payload": map[string]any{
					"repo": "ora-runtime/ora-demo", "issue": 42, "title": "Found a bug", "author": "octocat", "url": "https://github.com/ora-runtime/ora-demo/issues/42"}}),
					"depends_on": []int{0, 1}},
			},
		}
	}
	return bedrocktest.Tool(reason.ObservationTool, map[string]any{
		"content": "a GitHub delivery", "layers": []string{"SIGNAL"}, "decision": decision, "confidence": 0.85})
}

// triageConfig writes the example's config file name with its listen
// address, data dir and GitHub URL replaced (and store, and the fake
// Converse endpoint, added when given), and returns the target to speak to.
func triageConfig(t *testing.T, example, name, dir, githubURL, store string, converse *bedrocktest.Server) (target, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(example, name))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	text := string(b)
	replace := map[string]string{
		"\nlisten: 127.0.0.1:8090\n":    "\nlisten: " + addr + "\n",
		"\ndata_dir: .ora\n":            "\ndata_dir: " + dir + "\n" + store,
		"url: https://api.github.com\n": "url: " + githubURL + "\n",
	}
	if converse != nil {
		replace["\nreasoner:\n  kind: bedrock\n"] = "\nreasoner:\n  kind: bedrock\n  bedrock_endpoint: " + converse.URL + "\n"
	} else {
		replace["\nrules_file: rules.yaml\n"] = "\nrules_file: " + filepath.Join(example, "rules.yaml") + "\n"
	}
	for old, repl := range replace {
		if !strings.Contains(text, old) {
			t.Fatalf("%s has no %q to replace", name, old)
		}
		text = strings.Replace(text, old, repl, 1)
	}
	cfg := filepath.Join(dir, name)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return target{name: "ora dev", base: "http://" + addr, token: "change-me-operator-token",
		source: observe.SourceConfig{Name: "github", Type: "github", Secret: "change-me-webhook-secret"}}, cfg
}
