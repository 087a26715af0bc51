package embedded

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/examples/github-triage/githubtest"
	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/observe"
)

// triageExample is the reference agent's folder, from this package.
const triageExample = "../../examples/github-triage"

// loadTriageExample loads the example's config file name, changing only its
// data dir and its github connection's base URL (to the fake). The test
// runs in the example's folder, as a user runs ora dev there.
func loadTriageExample(t *testing.T, name, dataDir, githubURL string) Config {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "\ndata_dir: .ora\n", "\ndata_dir: "+dataDir+"\n", 1)
	text = strings.Replace(text, "url: https://api.github.com\n", "url: "+githubURL+"\n", 1)
	if strings.Contains(text, ".ora\n") || strings.Contains(text, "api.github.com\n") {
		t.Fatalf("%s: the data dir or the connection's URL was not replaced", name)
	}
	p := filepath.Join(dataDir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// deliver posts body to the github source, signed as GitHub signs it.
func deliver(t *testing.T, cfg Config, srvURL, id string, body []byte) observe.Receipt {
	t.Helper()
	src, _ := cfg.Source("github")
	h, err := observe.SignDelivery(src, body, time.Now(), id)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srvURL+"/webhooks/github", strings.NewReader(string(body)))
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook: %v %v", resp, err)
	}
	defer resp.Body.Close()
	var rec observe.Receipt
	_ = json.NewDecoder(resp.Body).Decode(&rec)
	return rec
}

// waitWave polls the wave until it leaves RUNNING and returns its status,
// with its error and cause when it has them.
func waitWave(t *testing.T, r *Runtime, waveID string) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		w, err := waves{r}.Wave(context.Background(), waveID)
		if err != nil {
			t.Fatal(err)
		}
		if w.Status != "RUNNING" || time.Now().After(deadline) {
			return strings.TrimSpace(w.Status + " " + w.Error + " " + w.Cause)
		}
	}
}

// TestGitHubTriageExample runs the reference agent in
// examples/github-triage from its own files, against a local fake of the
// GitHub REST API, on SQLite and on DynamoDB Local, with the rules reasoner
// (rules.yaml) and with the Bedrock reasoner (ora.bedrock.yaml) talking to
// the fake Converse server.
//
// With rules: a real-shaped issues.opened delivery labels the issue and
// comments on it, each exactly once, in parallel, with the connection's
// bearer token and GitHub's JSON shapes; the report function runs after
// both and writes its report; the wave succeeds. A ping is recorded and
// nothing is sent. With Bedrock: a model decision carries one action, so
// the model decides the label request through the connection, and it
// arrives once, with the token, and the wave succeeds.
func TestGitHubTriageExample(t *testing.T) {
	ping := []byte(`{"zen":"Keep it logically awesome.","hook_id":109948940,"hook":{"type":"Repository","id":109948940,"name":"web","active":true,"events":["issues"],"config":{"content_type":"json","insecure_ssl":"0","url":"https://ora.example.com/webhooks/github"}},"repository":{"id":186853002,"name":"ora-demo","full_name":"ora-runtime/ora-demo","private":false},"sender":{"login":"octocat","id":583231,"type":"User"}}`)
	const token = "ghp_exampleTriageToken0123456789abcdef"
	t.Setenv("GITHUB_TOKEN", token)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Chdir(triageExample)
	delivery, err := os.ReadFile("issue-opened.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, store := range []string{"sqlite", "dynamodb"} {
		for _, reasoner := range []string{"rules", "bedrock"} {
			t.Run(store+"/"+reasoner, func(t *testing.T) {
				ctx := context.Background()
				dir := t.TempDir()
				report := filepath.Join(dir, "functions", "write-report", "reports", "ora-runtime-ora-demo-42.md")
				gh := githubtest.New(t, token, report, reasoner == "rules")
				file := "ora.yaml"
				if reasoner == "bedrock" {
					file = "ora.bedrock.yaml"
				}
				cfg := loadTriageExample(t, file, dir, gh.URL)
				if reasoner == "bedrock" {
					fake := bedrocktest.NewFunc(t, func(bedrocktest.Request) bedrocktest.Reply {
						return observation(0.85, act.TypeHTTPRequest, map[string]any{"method": "POST", "connection": "github",
							"path": "/repos/ora-runtime/ora-demo/issues/42/labels", "url": "", "body": `{"labels":["triage"]}`})
					})
					cfg.Reasoner.BedrockEndpoint = fake.URL
				}
				if store == "dynamodb" {
					onDynamoDBLocal(t, &cfg, "triage")
				}
				r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = r.Close() })
				srv := httptest.NewServer(r.Handler())
				t.Cleanup(srv.Close)

				rec := deliver(t, cfg, srv.URL, "72d3162e-cc78-11e3-81ab-4c9367dc0958", delivery)
				if status := waitWave(t, r, rec.WaveID); status != "SUCCEEDED" {
					t.Fatalf("the wave ended %s, want SUCCEEDED", status)
				}
				want := map[string]int{"labels": 1, "comments": 1}
				if reasoner == "bedrock" {
					want = map[string]int{"labels": 1}
				}
				calls := gh.Check(t, want)
				if t.Failed() {
					t.FailNow()
				}
				if reasoner == "bedrock" {
					return
				}
				b, err := os.ReadFile(report)
				if err != nil {
					t.Fatalf("the report function wrote nothing: %v", err)
				}
				for _, s := range []string{"# Triage report: ora-runtime/ora-demo#42", "- wave: " + rec.WaveID, `"function":"write-report"`, `"issue":42`} {
					if !strings.Contains(string(b), s) {
						t.Errorf("the report lacks %q:\n%s", s, b)
					}
				}

				// A ping (and any event no rule matches) is recorded; nothing is sent.
				pinged := deliver(t, cfg, srv.URL, "ping-"+store, ping)
				if status := waitWave(t, r, pinged.WaveID); status != "SUCCEEDED" {
					t.Fatalf("the ping's wave ended %s, want SUCCEEDED", status)
				}
				if n := len(gh.Received()); n != len(calls) {
					t.Errorf("the ping sent %d requests to GitHub", n-len(calls))
				}
			})
		}
	}
}

// TestGitHubTriageDoc keeps docs/github-triage.md honest: each shell block
// is run here (the report function on its own, twice: the second run keeps
// the report), is run by another test (the build, by the first-agent
// walkthrough; the example's test, above), or says it needs a real GitHub
// token. Each complete YAML excerpt is the example's own text.
func TestGitHubTriageDoc(t *testing.T) {
	doc, err := os.ReadFile("../../docs/github-triage.md")
	if err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join(triageExample, "ora.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	config = regexp.MustCompile(`(?m)^ *#.*\n`).ReplaceAll(config, nil) // the excerpts leave out the comments
	firstAgent, err := os.ReadFile("../../docs/first-agent.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```(sh|yaml)\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	ran := 0
	for i, b := range blocks {
		lang, text := b[1], b[2]
		switch {
		case lang == "yaml" && !strings.Contains(text, "..."):
			if !strings.Contains(string(config), text) {
				t.Errorf("block %d is not ora.yaml's text (without its comments):\n%s", i, text)
			}
		case lang == "yaml":
		case strings.HasPrefix(text, "# needs a real GitHub token"):
			if !strings.Contains(text, "ora ") {
				t.Errorf("block %d is marked as needing a token but runs no ora command:\n%s", i, text)
			}
		case text == "go build -o bin/ora ./cmd/ora\n":
			if !strings.Contains(string(firstAgent), "```sh\n"+text) {
				t.Errorf("block %d: docs/first-agent.md's walkthrough no longer builds ora this way", i)
			}
		case text == "go test -count=1 -run 'TestGitHubTriageExample/sqlite' ./shared/embedded/\n":
		case strings.Contains(text, "report.sh"):
			ran++
			runReportBlock(t, text)
		default:
			t.Errorf("block %d is neither run by a test nor marked as needing a GitHub token:\n%s", i, text)
		}
	}
	if ran != 1 {
		t.Errorf("ran %d report blocks, want the page's one", ran)
	}
}

// runReportBlock runs the page's report.sh block from the repository root,
// in a scratch folder of its own, twice.
func runReportBlock(t *testing.T, text string) {
	t.Helper()
	scratch := filepath.Join(t.TempDir(), "triage-try")
	text = strings.ReplaceAll(text, "/tmp/triage-try", scratch)
	run := func() string {
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", text)
		cmd.Dir = "../.."
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the report block failed: %v\n%s", err, out)
		}
		return string(out)
	}
	out := run()
	if !strings.HasPrefix(out, "reports/acme-app-7.md\n# Triage report: acme/app#7\n") || !strings.Contains(out, `"idempotency_key":"dec_1/2"`) {
		t.Fatalf("the report block printed:\n%s", out)
	}
	report := filepath.Join(scratch, "reports", "acme-app-7.md")
	f, err := os.OpenFile(report, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("kept\n")
	_ = f.Close()
	if out := run(); !strings.HasSuffix(out, "kept\n") {
		t.Errorf("the second run with the same idempotency key rewrote the report:\n%s", out)
	}
}
