package motor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/mcp/mcptest"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/reason"
)

var gateAt = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// gateWave is a decision wave about a build report, with a packet of two
// facts under a 150,000-token budget.
func gateWave(name string) motor.GoldenWave {
	raw := []byte(`{"build":"` + name + `","status":"passed"}`)
	fact := func(id string, tokens int) ora.Fact {
		return ora.Fact{ID: id, WaveID: name, SourceType: "ledger", Provenance: map[string]string{"entry": id},
			Normalized: json.RawMessage(`{"note":"` + id + `"}`), Utility: 0.5, EstimatedTokens: tokens, CreatedAt: gateAt}
	}
	bands := ora.DefaultBands()
	packet := ora.OrientationPacket{ID: "pkt-" + name, WaveID: name, ProfileID: "default", ProfileVersion: 1, TokenBudget: ora.DefaultTokenBudget}
	for i, b := range bands {
		pb := ora.PacketBand{BandBudget: b}
		if i == 0 {
			pb.Facts = []ora.Fact{fact(name+"-f1", 400), fact(name+"-f2", 400)}
		}
		packet.Bands = append(packet.Bands, pb)
	}
	return motor.GoldenWave{Name: name,
		Signal: ora.NormalizedSignal{ID: "golden-" + name, Source: ora.Source{Type: ora.SourceWebhook, Name: "ci", Provider: "hmac"},
			Timestamp: gateAt, NormalizedAt: gateAt, DedupKey: "golden-" + name, Payload: raw, Raw: raw, RawDigest: ora.Digest(raw)},
		Packet: packet,
		Expect: motor.Expect{Action: act.TypeObjectPut, Band: string(ora.BandHigh)},
	}
}

// gateModel answers every stage with one observation deciding an
// object.put of the build's report.
func gateModel(r bedrocktest.Request) bedrocktest.Reply {
	build := "unknown"
	if i := strings.Index(r.UserText(), `build\":\"`); i >= 0 {
		build = strings.SplitN(r.UserText()[i+len(`build\":\"`):], `\"`, 2)[0]
	}
	return bedrocktest.Tool(reason.ObservationTool, map[string]any{
		"confidence": 0.95, "layers": []string{"C01", "C02", "C03"}, "content": "store the build report",
		"decision": map[string]any{
			"allowed_action": "PROCEED", "safety_check_summary": "writes one report under reports/",
			"action": map[string]any{"type": "object.put", "tier": 2, "allowed_operations": []string{"object.put"},
				"parameters":      map[string]any{"key": "reports/" + build + ".json", "content_type": "application/json", "body": "{}"},
				"forbidden_paths": []string{"secrets"}, "author_type": "architect"},
			"then": []any{},
		},
	})
}

// gateConfig is the default model configuration with a policy that lets the
// model store objects, no spend cap, and the layers gateModel names.
func gateConfig() reason.Config {
	c := reason.DefaultConfig()
	c.DailySpendCapUSD = 0
	one := 1.0
	c.Policy.Rules = []reason.PolicyRule{{Name: "reports", Actions: []string{"object.put"}, MaxConfidence: &one}}
	c.Layers = []string{"C01", "C02", "C03"}
	return c
}

// modelBuild is the gate's replay build over a client whose HTTP client is
// hc (a Recorder or a Replayer) and whose endpoint is the fake Bedrock.
func modelBuild(t *testing.T, srv *bedrocktest.Server, hc bedrockruntime.HTTPClient) motor.ReplayBuild {
	t.Helper()
	client, err := bedrock.NewClient(context.Background(), func(o *bedrock.ClientOptions) {
		o.Endpoint, o.Region, o.HTTPClient = srv.URL, "us-east-1", hc
		o.Credentials = credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")
	})
	if err != nil {
		t.Fatal(err)
	}
	return motor.ModelReplay(bedrock.New(client), gateConfig(), act.StandardCatalogue(act.Config{}), nil)
}

// TestGateReplaysTheModelFromRecordings records the golden set's Converse
// calls once through the fake Bedrock, then gates candidates through the
// Bedrock reasoner answering from the recordings: the recorded motor passes
// without a call reaching Bedrock, and each change of model id, prompt,
// validators or orientation fails the gate, naming why.
func TestGateReplaysTheModelFromRecordings(t *testing.T) {
	ctx := context.Background()
	srv := bedrocktest.NewFunc(t, gateModel)
	dir := bedrock.DirRecordings(t.TempDir())
	waves := []motor.GoldenWave{gateWave("build-41"), gateWave("build-42")}
	b := bundle("1.0.0")
	rec := &bedrock.Recorder{Store: dir}
	rep, err := motor.ReplayWith(ctx, b, waves, modelBuild(t, srv, rec))
	if err != nil || len(rep.Failing) != 0 {
		t.Fatalf("recording run: %+v, %v", rep, err)
	}
	calls := len(srv.Requests())
	if calls == 0 || len(rec.Kept()) != calls {
		t.Fatalf("recorded %d of %d calls", len(rec.Kept()), calls)
	}

	player := &bedrock.Replayer{Recordings: dir}
	gate := motor.GoldenGate(waves, func(o *motor.GateOptions) { o.Build = modelBuild(t, srv, player) })
	if failing, err := gate(ctx, b); err != nil || len(failing) != 0 {
		t.Fatalf("the recorded motor fails its own recordings: %v, %v", failing, err)
	}
	if got := len(srv.Requests()); got != calls {
		t.Fatalf("a replay reached Bedrock: %d calls, want %d", got, calls)
	}

	changed := func(edit func(*motor.Bundle)) motor.Bundle {
		c := b
		edit(&c)
		return c
	}
	cases := []struct {
		name string
		b    motor.Bundle
		want string // in every failing entry
	}{
		{"another model id", changed(func(c *motor.Bundle) {
			c.Model = json.RawMessage(`{"model":"` + reason.DefaultConfig().FallbackModels[0] + `"}`)
		}), "no recorded response for request digest"},
		{"another prompt", changed(func(c *motor.Bundle) { c.Model = json.RawMessage(`{"purpose":"Keep the CI reports tidy."}`) }), "record it with `ora motor record`"},
		{"another token budget", changed(func(c *motor.Bundle) { c.Orientation.TokenBudget = 100000 }), "no recorded response for request digest"},
		{"a token budget under the bands' floors", changed(func(c *motor.Bundle) { c.Orientation.TokenBudget = 20000 }), "over the budget of 20000"},
		{"another version", changed(func(c *motor.Bundle) { *c = bundle("1.0.1") }), "no recorded response for request digest"},
		{"validators forbid the target", changed(func(c *motor.Bundle) { c.Validators = json.RawMessage(`{"safety":{"forbidden_paths":["reports"]}}`) }), "build-4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			failing, err := gate(ctx, tc.b)
			if err != nil {
				t.Fatal(err)
			}
			if len(failing) != len(waves) {
				t.Fatalf("failing %v, want both waves", failing)
			}
			for _, f := range failing {
				if !strings.Contains(f, tc.want) {
					t.Errorf("failing entry %q does not say %q", f, tc.want)
				}
			}
			if got := len(srv.Requests()); got != calls {
				t.Errorf("the gate reached Bedrock: %d calls, want %d", got, calls)
			}
		})
	}
	t.Run("the validators' change is the verdict", func(t *testing.T) {
		rep, err := motor.ReplayWith(ctx, cases[5].b, waves, modelBuild(t, srv, player))
		if err != nil {
			t.Fatal(err)
		}
		c := rep.Waves[0]
		if c.Got.Verdict != "failed" || fmt.Sprint(c.Changed) != "[verdict]" || len(c.Validators) != 1 || !strings.Contains(c.Validators[0], `forbidden path "reports"`) {
			t.Fatalf("change %+v, want verdict failed by the forbidden path", c)
		}
	})
}

// On AWS the golden set and its recordings live under an S3 prefix: the
// api function's gate (ReplayBuildFromEnv over ObjectRecordings) replays
// the set recorded through the fake Bedrock from the object store, with no
// call reaching Bedrock, and refuses a request nobody recorded.
func TestGateFromAnObjectStore(t *testing.T) {
	ctx := context.Background()
	srv := bedrocktest.NewFunc(t, gateModel)
	root := t.TempDir()
	const prefix = "gate/"
	waves := []motor.GoldenWave{gateWave("build-41")}
	for _, w := range waves {
		b, _ := json.Marshal(w)
		if err := os.MkdirAll(filepath.Join(root, prefix), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, prefix, w.Name+".json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b := bundle("1.0.0")
	rec := &bedrock.Recorder{Store: bedrock.DirRecordings(filepath.Join(root, prefix, "recordings"))}
	if rep, err := motor.ReplayWith(ctx, b, waves, modelBuild(t, srv, rec)); err != nil || len(rep.Failing) != 0 {
		t.Fatalf("recording: %+v, %v", rep, err)
	}
	calls := len(srv.Requests())

	objects := orient.Folder{Dir: root}
	golden, err := motor.LoadGoldenFrom(ctx, objects, prefix)
	if err != nil || len(golden) != 1 {
		t.Fatalf("golden from the store: %d waves, %v", len(golden), err)
	}
	profile, _ := json.Marshal(gateConfig())
	env := map[string]string{"ORA_REASONER": "bedrock", reason.EnvConfig: string(profile)}
	player := &bedrock.Replayer{Recordings: motor.ObjectRecordings{Objects: objects, Prefix: prefix + motor.RecordingsFolder}}
	client, err := bedrock.NewClient(ctx, func(o *bedrock.ClientOptions) {
		o.Endpoint, o.Region, o.HTTPClient = srv.URL, "us-east-1", player
		o.Credentials = credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")
	})
	if err != nil {
		t.Fatal(err)
	}
	build, err := motor.ReplayBuildFromEnv(func(k string) string { return env[k] }, bedrock.New(client), nil, player)
	if err != nil || build == nil {
		t.Fatalf("ReplayBuildFromEnv: %v", err)
	}
	gate := motor.GoldenGate(golden, func(o *motor.GateOptions) { o.Build = build })
	if failing, err := gate(ctx, b); err != nil || len(failing) != 0 {
		t.Fatalf("the recorded motor: failing %v, %v", failing, err)
	}
	other := b
	other.Model = json.RawMessage(`{"purpose":"Something else."}`)
	if failing, err := gate(ctx, other); err != nil || len(failing) != 1 || !strings.Contains(failing[0], "no recorded response for request digest") {
		t.Fatalf("another prompt: failing %v, %v", failing, err)
	}
	if got := len(srv.Requests()); got != calls || len(player.Missed()) != 1 {
		t.Errorf("calls %d (want %d), missed %v (want one)", got, calls, player.Missed())
	}
}

// A golden wave reasoned with an MCP tool offered replays to the same
// request digest in the gate: the production reasoner (reason.Offer over
// the live server) records its Converse calls and the servers' tool lists
// are kept beside them; the gate's reasoner (ModelReplay over the kept
// lists, mcp.Options.Listed) finds every recording with the server gone,
// while a gate that leaves the MCP tools out asks another request.
func TestGateOffersTheRecordedMCPTools(t *testing.T) {
	ctx := context.Background()
	srv := bedrocktest.NewFunc(t, gateModel)
	dir := bedrock.DirRecordings(t.TempDir())
	tracker, url := mcptest.HTTP(t)
	servers := []mcp.ServerConfig{{Name: "tracker", URL: url, ActTools: []string{"add_label"}}}
	live, err := mcp.New(servers, false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := gateConfig()
	cfg.ToolsAllowed = []string{"mcp.tracker.get_issue"}
	catalogue := act.StandardCatalogue(act.Config{})
	wave, b := gateWave("build-43"), bundle("1.0.0")

	// Production: the reason stage's reasoner of motor 1.0.0.
	client := func(hc bedrockruntime.HTTPClient) reason.Converser {
		c, err := bedrock.NewClient(ctx, func(o *bedrock.ClientOptions) {
			o.Endpoint, o.Region, o.HTTPClient = srv.URL, "us-east-1", hc
			o.Credentials = credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")
		})
		if err != nil {
			t.Fatal(err)
		}
		return bedrock.New(c)
	}
	prodCfg, err := cfg.WithProfile(b.Model, b.Version)
	if err != nil {
		t.Fatal(err)
	}
	rec := &bedrock.Recorder{Store: dir}
	prod, err := reason.NewReasoner(client(rec), prodCfg, func(o *reason.Options) {
		o.Now = func() time.Time { return gateAt }
		reason.Offer(o, catalogue, live)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prod.Reason(ctx, ora.ReasonerInput{Signal: wave.Signal, Packet: wave.Packet}); err != nil {
		t.Fatal(err)
	}
	calls := srv.Requests()
	if len(calls) == 0 || !strings.Contains(string(calls[0].Body), "mcp_tracker_get_issue") || !strings.Contains(string(calls[0].Body), "add_label") {
		t.Fatalf("production offered no MCP tool (get_issue, mcp.call of add_label): %d calls", len(calls))
	}
	lists, err := live.Lists(ctx)
	if err != nil {
		t.Fatal(err)
	}
	recorded, err := json.Marshal(lists)
	if err != nil {
		t.Fatal(err)
	}
	_ = live.Close()

	listed, err := motor.ListedMCP(servers, false, recorded, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	player := &bedrock.Replayer{Recordings: dir}
	tests := []struct {
		name    string
		servers *mcp.Client
		want    string // in the failing entry; "" passes
	}{
		{"the recorded tool lists", listed, ""},
		{"without the MCP tools", nil, "no recorded response for request digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			build := motor.ModelReplay(client(player), cfg, catalogue, tt.servers)
			failing, err := motor.GoldenGate([]motor.GoldenWave{wave}, func(o *motor.GateOptions) { o.Build = build })(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == "" && len(failing) != 0:
				t.Errorf("failing %v, want the recorded request found", failing)
			case tt.want != "" && (len(failing) != 1 || !strings.Contains(failing[0], tt.want)):
				t.Errorf("failing %v, want %q", failing, tt.want)
			}
			if got := len(srv.Requests()); got != len(calls) {
				t.Errorf("the gate reached Bedrock: %d calls, want %d", got, len(calls))
			}
			if got := tracker.Calls(); len(got) != 0 {
				t.Errorf("the gate called the MCP server: %v", got)
			}
		})
	}
}

// TestGateReplaysUnderTheRulesProgram: a motor version's rule may name the
// program a wave runs (before the configuration's programs route by signal
// type); the gate's replay runs the program production would choose for
// the wave, so it asks the model what production asked.
func TestGateReplaysUnderTheRulesProgram(t *testing.T) {
	const programRule = `version: "1.0.0"
rules:
  - name: passed-builds
    when: {field: payload.status, equals: passed}
    program: PhaseTransitionValidator
unmatched: ignore
`
	tests := []struct {
		name  string
		rules string
		want  ora.ProgramID
	}{
		{"a rule names the program", programRule, ora.ProgramPhaseTransitionValidator},
		{"no rule names one: the default program", strings.Replace(programRule, "equals: passed", "equals: failed", 1), ora.ProgramSafeOPSDecision},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := bedrocktest.NewFunc(t, func(q bedrocktest.Request) bedrocktest.Reply {
				if !strings.Contains(requestText(q), "PROGRAM: "+string(ora.ProgramPhaseTransitionValidator)+"\n") {
					return gateModel(q)
				}
				return bedrocktest.Tool(reason.ObservationTool, map[string]any{
					"confidence": 0.95, "layers": []string{"C01", "C02", "C03"}, "content": "the build passed",
					"decision": map[string]any{"transition_status": "READY", "missing_criteria": []string{}},
				})
			})
			b := motor.Bundle{Version: "1.0.0", Rules: tc.rules, Changelog: "programs"}
			if _, err := motor.ReplayWith(context.Background(), b, []motor.GoldenWave{gateWave("build-43")}, modelBuild(t, srv, nil)); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) == 0 {
				t.Fatal("the gate asked the model nothing")
			}
			for _, q := range reqs {
				if text := requestText(q); !strings.Contains(text, "PROGRAM: "+string(tc.want)+"\n") {
					t.Fatalf("the gate's request does not run %s:\n%.400s", tc.want, text)
				}
			}
		})
	}
}

// requestText is the text of a Converse request's messages.
func requestText(q bedrocktest.Request) string {
	var b strings.Builder
	for _, m := range q.Messages {
		for _, c := range m.Content {
			if c.Text != nil {
				b.WriteString(*c.Text)
			}
		}
	}
	return b.String()
}
