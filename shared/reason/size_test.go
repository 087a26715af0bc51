package reason_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/cost"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient/orienttest"
	"github.com/ora-runtime/ora/shared/reason"
)

// captured is one Converse request as the wire carried it, split where
// Bedrock's prompt caching splits it: the tools and system prompt (up to
// the first cache point), the wave's prefix (up to the second), and the
// rest; each in estimated tokens. With one cache point, Static is all
// before it.
type captured struct {
	Model                 string
	Body                  []byte
	Static, Prefix, Rest  int // tokens
	SchemaBytes           int
	Tools                 []string
	CacheRead, CacheWrite int
	Input, Output         int
}

// Total is every input token of the request, cached or not.
func (c captured) Total() int { return c.Static + c.Prefix + c.Rest }

// estimate counts tokens at 3.5 characters each: Claude's tokenizer on this
// mix of English, JSON and ids gives about that (the packet's own estimate,
// 4 characters, would flatter the figures).
func estimate(chars int) int { return (chars*2 + 6) / 7 }

// capture is the strict fake Bedrock (bedrocktest) with a measuring
// handler: it refuses every request Bedrock would refuse and every scripted
// answer that breaks the request's schema, records each request it accepts
// as captured, answers with the reply its function gives for the request's
// number, and reports usage as a caching Bedrock would at 3.5 characters a
// token (a segment up to a cache point seen before is read from the cache,
// a new one written).
type capture struct {
	*bedrocktest.Server
	mu    sync.Mutex
	reqs  []captured
	seen  map[string]bool
	reply func(n int) map[string]any
}

func newCapture(t testing.TB, reply func(n int) map[string]any) *capture {
	t.Helper()
	c := &capture{seen: map[string]bool{}, reply: reply}
	c.Server = bedrocktest.NewFunc(t, c.answer)
	return c
}

func (c *capture) client(t testing.TB) *bedrock.Converser {
	t.Helper()
	return bedrock.New(c.Client(1))
}

func (c *capture) requests() []captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]captured(nil), c.reqs...)
}

type block = map[string]json.RawMessage

// answer measures req (which the fake has already checked) and answers it.
func (c *capture) answer(r bedrocktest.Request) bedrocktest.Reply {
	var req struct {
		System   []block `json:"system"`
		Messages []struct {
			Role    string  `json:"role"`
			Content []block `json:"content"`
		} `json:"messages"`
		ToolConfig json.RawMessage `json:"toolConfig"`
	}
	if err := json.Unmarshal(r.Body, &req); err != nil {
		return bedrocktest.Invalid(err.Error())
	}
	cp := captured{Model: r.ModelID, Body: r.Body, SchemaBytes: len(req.ToolConfig)}
	if r.ToolConfig != nil {
		for _, t := range r.ToolConfig.Tools {
			cp.Tools = append(cp.Tools, t.ToolSpec.Name)
		}
	}
	// The order Bedrock caches in: tools, system, messages; a cache point
	// closes a segment.
	var segs []int // characters of each closed segment
	var keys []string
	var all, cur strings.Builder
	add := func(b []byte) { cur.Write(b); all.Write(b) }
	cut := func() {
		segs, keys = append(segs, cur.Len()), append(keys, all.String())
		cur.Reset()
	}
	add(req.ToolConfig)
	for _, b := range req.System {
		if _, ok := b["cachePoint"]; ok {
			cut()
			continue
		}
		add(b["text"])
	}
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if _, ok := b["cachePoint"]; ok {
				cut()
				continue
			}
			for _, v := range b {
				add(v)
			}
		}
	}
	rest := cur.Len()
	switch len(segs) {
	case 0:
		cp.Rest = estimate(rest)
	case 1:
		cp.Static, cp.Rest = estimate(segs[0]), estimate(rest)
	default:
		cp.Static, cp.Prefix, cp.Rest = estimate(segs[0]), estimate(segs[1]), estimate(rest)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.reqs)
	cp.Input = estimate(rest)
	for i, chars := range segs {
		if c.seen[keys[i]] {
			cp.CacheRead += estimate(chars)
		} else {
			cp.CacheWrite += estimate(chars)
			c.seen[keys[i]] = true
		}
	}
	input := c.reply(n)
	out, _ := json.Marshal(input)
	cp.Output = estimate(len(out))
	c.reqs = append(c.reqs, cp)
	rep := bedrocktest.Tool(reason.ObservationTool, input)
	rep.Usage = &bedrocktest.Usage{InputTokens: cp.Input, OutputTokens: cp.Output, CacheReadInputTokens: cp.CacheRead, CacheWriteInputTokens: cp.CacheWrite}
	return rep
}

// labelDecision is what a model answers about a new GitHub issue: label it
// triage, with a reasoned safety check.
func labelDecision(confidence float64) map[string]any { return labelDecisionN(confidence, "triage") }

// labelDecisionN labels the issue with label.
func labelDecisionN(confidence float64, label string) map[string]any {
	return map[string]any{
		"confidence": confidence,
		"layers":     []string{"SIGNAL", "HISTORY", "POLICY"},
		"content": "A new issue reports a slow search for long queries. The last hour's 60 issues were each labelled triage by one " +
			"http.request to the GitHub API, all completed with technical and witness PASS; no open commitment covers this issue. " +
			"Labelling is reversible, touches one issue and goes to api.github.com, an allowed host.",
		"decision": map[string]any{
			"allowed_action":       "PROCEED",
			"safety_check_summary": "one POST to the issue's labels on api.github.com, an allowed host; reversible; no other resource touched",
			"action": map[string]any{
				"type": "http.request", "parameters": map[string]any{"method": "POST", "connection": "", "path": "",
					"url": "https://api.github.com/repos/acme/shop/issues/160/labels", "body": `{"labels":["` + label + `"]}`},
				"tier": 2, "allowed_operations": []string{"http.request"}, "forbidden_paths": []string{}, "author_type": "architect",
			},
			"then": []any{},
		},
	}
}

var steadyNow = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// A steady-state decision (60 earlier waves in the ledger, the default
// profile and budget) that crystallizes at stage 1 sends one request of at
// most ~15,000 input tokens: the packet reaches the model as its view, not
// as its JSON.
func TestSteadyStateRequestSize(t *testing.T) {
	ctx := context.Background()
	_, sig, packet, err := orienttest.SteadyState(ctx, 60, steadyNow)
	if err != nil {
		t.Fatal(err)
	}
	packetJSON, _ := json.Marshal(packet)
	srv := newCapture(t, func(int) map[string]any { return labelDecision(0.97) })
	r, err := reason.NewReasoner(srv.client(t), reason.DefaultConfig(), func(o *reason.Options) { o.Now, o.Catalogue = func() time.Time { return steadyNow }, catalogue })
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.Reason(ctx, ora.ReasonerInput{Signal: sig, Packet: packet})
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	if len(reqs) != 1 || d.Model.ChainLength != 1 {
		t.Fatalf("%d requests, chain %d: want a one-stage decision", len(reqs), d.Model.ChainLength)
	}
	q := reqs[0]
	t.Logf("packet JSON %d chars (~%d tokens); request body %d bytes: %d tokens up to the first cache point, %d up to the second, %d after; total %d input tokens, %d output",
		len(packetJSON), estimate(len(packetJSON)), len(q.Body), q.Static, q.Prefix, q.Rest, q.Total(), q.Output)
	if q.Total() > 15000 {
		t.Errorf("a steady-state one-stage request is %d input tokens, want at most 15,000", q.Total())
	}
	if q.Total()*3 > estimate(len(packetJSON)) {
		t.Errorf("the request (%d tokens) is not far below the packet's JSON (%d tokens)", q.Total(), estimate(len(packetJSON)))
	}
	if d.Model.PacketViewDigest == "" || d.Model.PacketViewTokens == 0 {
		t.Errorf("trace %+v: no packet view digest", d.Model)
	}
	for _, s := range []string{`"provenance"`, `"fact_id"`, packet.Digest} {
		if strings.Contains(string(q.Body), s) {
			t.Errorf("the request carries %q", s)
		}
	}
}

// Five files dropped at once reason as one batch: one request with one
// shared view of their packets, far under the model's 200,000-token
// context; the decision schema names no signal id, so every batch has the
// same schema.
func TestBatchOfFiveFitsTheContext(t *testing.T) {
	ctx := context.Background()
	var ins []ora.ReasonerInput
	for i := 0; i < 5; i++ {
		obj := ora.NormalizedSignal{
			ID:       fmt.Sprintf("sig-obj-%d", i),
			Source:   ora.Source{Type: ora.SourceObject, Name: "inbox", Bucket: "inbox", Path: fmt.Sprintf("invoices/2026-11-26/invoice-%04d.pdf", 4410+i), Event: "create"},
			DedupKey: fmt.Sprintf("object:inbox/invoice-%04d.pdf:etag-%d", 4410+i, i),
			Payload: json.RawMessage(fmt.Sprintf(`{"bucket":"inbox","key":"invoices/2026-11-26/invoice-%04d.pdf","size":%d,"etag":"9b2cf535f27731c974343645a398%04d","content_type":"application/pdf"}`,
				4410+i, 180000+i*731, i)),
			RawDigest: ora.Digest([]byte{byte(i)}),
		}
		_, sig, p, err := orienttest.SteadyStateFor(ctx, 60, steadyNow.Add(time.Duration(i)*time.Second), &obj)
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, ora.ReasonerInput{Signal: sig, Packet: p})
	}
	one := newCapture(t, func(int) map[string]any { return labelDecision(0.97) })
	r1, err := reason.NewReasoner(one.client(t), reason.DefaultConfig(), func(o *reason.Options) { o.Now, o.Catalogue = func() time.Time { return steadyNow }, catalogue })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r1.Reason(ctx, ins[0]); err != nil {
		t.Fatal(err)
	}
	batchReply := func(int) map[string]any {
		obs := labelDecision(0.97)
		var ds []any
		for i := range ins {
			ds = append(ds, map[string]any{"signal": i + 1, "decision": obs["decision"]})
		}
		obs["decision"] = map[string]any{"decisions": ds}
		return obs
	}
	srv := newCapture(t, batchReply)
	r, err := reason.NewReasoner(srv.client(t), reason.DefaultConfig(), func(o *reason.Options) { o.Now, o.Catalogue = func() time.Time { return steadyNow }, catalogue })
	if err != nil {
		t.Fatal(err)
	}
	ds, err := r.ReasonBatch(ctx, ins)
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	if len(reqs) != 1 || len(ds) != 5 {
		t.Fatalf("%d requests, %d decisions: want one request for five decisions", len(reqs), len(ds))
	}
	single := one.requests()[0]
	b := reqs[0]
	t.Logf("one signal: %d input tokens; batch of five: %d input tokens (schema %d bytes)", single.Total(), b.Total(), b.SchemaBytes)
	if b.Total() >= 200000/4 {
		t.Errorf("a batch of five is %d input tokens, want far under the 200,000-token context", b.Total())
	}
	if b.Total() > 2*single.Total() {
		t.Errorf("a batch of five is %d tokens, over twice one signal's %d: the packets are not shared", b.Total(), single.Total())
	}
	for _, in := range ins {
		if strings.Contains(toolConfig(t, b.Body), in.Signal.ID) {
			t.Errorf("the tool schema names signal %s", in.Signal.ID)
		}
	}
	// Another batch of other signals has the same tool schema (one grammar).
	srv2 := newCapture(t, batchReply)
	r2, _ := reason.NewReasoner(srv2.client(t), reason.DefaultConfig(), func(o *reason.Options) { o.Now, o.Catalogue = func() time.Time { return steadyNow }, catalogue })
	other := append([]ora.ReasonerInput(nil), ins...)
	for i := range other {
		other[i].Signal.ID = fmt.Sprintf("sig-other-%d", i)
	}
	if _, err := r2.ReasonBatch(ctx, other); err != nil {
		t.Fatal(err)
	}
	if toolConfig(t, srv2.requests()[0].Body) != toolConfig(t, b.Body) {
		t.Error("two batches of other signals send different tool schemas")
	}
}

func toolConfig(t *testing.T, body []byte) string {
	t.Helper()
	var req struct {
		ToolConfig json.RawMessage `json:"toolConfig"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	return string(req.ToolConfig)
}

// measureDecision reasons one steady-state decision (60 earlier waves) on
// model whose chain has the given length (1: confident at once; 2: stage 2's
// critique keeps the action; 4: every stage changes it), after a warm-up
// decision on the same server (so what the waves share is cached, as at
// steady state), and returns its calls as the capturing server measured them.
func measureDecision(tb testing.TB, model string, stages int) []cost.Call {
	ctx := context.Background()
	cfg := reason.DefaultConfig()
	cfg.Model, cfg.FallbackModels = model, nil
	replies := map[int][]map[string]any{
		1: {labelDecision(0.97)},
		2: {labelDecision(0.7), labelDecision(0.75)},
		4: {labelDecisionN(0.6, "bug"), labelDecisionN(0.65, "triage"), labelDecisionN(0.7, "search"), labelDecisionN(0.75, "performance")},
	}[stages]
	warm := 0
	srv := newCapture(tb, func(n int) map[string]any {
		if n < warm {
			return labelDecision(0.97)
		}
		return replies[n-warm]
	})
	r, err := reason.NewReasoner(srv.client(tb), cfg, func(o *reason.Options) { o.Now, o.Catalogue = func() time.Time { return steadyNow }, catalogue })
	if err != nil {
		tb.Fatal(err)
	}
	_, prev, prevPacket, err := orienttest.SteadyState(ctx, 59, steadyNow.Add(-time.Minute))
	if err != nil {
		tb.Fatal(err)
	}
	warm = 1
	if _, err := r.Reason(ctx, ora.ReasonerInput{Signal: prev, Packet: prevPacket}); err != nil {
		tb.Fatal(err)
	}
	_, sig, packet, err := orienttest.SteadyState(ctx, 60, steadyNow)
	if err != nil {
		tb.Fatal(err)
	}
	d, err := r.Reason(ctx, ora.ReasonerInput{Signal: sig, Packet: packet})
	if err != nil {
		tb.Fatal(err)
	}
	if d.Model.ChainLength != stages {
		tb.Fatalf("chain of %d stages (%s), want %d", d.Model.ChainLength, d.Model.CrystallizationReason, stages)
	}
	var calls []cost.Call
	for _, q := range srv.requests()[warm:] {
		calls = append(calls, cost.Call{Input: q.Input, CacheWrite: q.CacheWrite, CacheRead: q.CacheRead, Output: q.Output})
	}
	return calls
}

// The model's cost per steady-state decision on the default model is what
// its measured calls cost at the price table, and far from the $0.21 a
// decision cost when the packet went to the model as JSON.
func TestModelCostPerDecision(t *testing.T) {
	table, err := cost.Table()
	if err != nil {
		t.Fatal(err)
	}
	for _, stages := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("%d stages", stages), func(t *testing.T) {
			calls := measureDecision(t, reason.DefaultModel, stages)
			cached, uncached, err := table.Decision(reason.DefaultModel, calls)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(cost.ModelLine(reason.DefaultModel, calls, cached, uncached, reason.DefaultConfig().DailySpendCapUSD))
			if len(calls) != stages || cached <= 0 {
				t.Fatalf("%d calls, $%v", len(calls), cached)
			}
			if stages > 1 && cached >= uncached {
				t.Errorf("%d stages cost $%.4f cached, $%.4f uncached: caching should pay from stage 2", stages, cached, uncached)
			}
			if stages == 1 && cached > 0.21/3 {
				t.Errorf("a one-stage decision costs $%.4f, want under a third of $0.21", cached)
			}
		})
	}
}

// BenchmarkModelCost is make cost's model half: the cost per steady-state
// decision for each priced model and chain length, from the tokens the
// capturing server measured, and what the daily cap allows.
func BenchmarkModelCost(b *testing.B) {
	table, err := cost.Table()
	if err != nil {
		b.Fatal(err)
	}
	capUSD := reason.DefaultConfig().DailySpendCapUSD
	models := []string{reason.DefaultModel, reason.GlobalSonnet45, reason.DefaultFallbackModel, reason.GlobalHaiku45}
	for i := 0; i < b.N; i++ {
		for _, m := range models {
			for _, stages := range []int{1, 2, 4} {
				calls := measureDecision(b, m, stages)
				cached, uncached, err := table.Decision(m, calls)
				if err != nil {
					b.Fatal(err)
				}
				fmt.Println(cost.ModelLine(m, calls, cached, uncached, capUSD))
			}
		}
	}
}

// bigDelivery is a GitHub-shaped delivery of about 40 KB: four user and
// repository objects with their API links, and a long body.
func bigDelivery(body string) json.RawMessage {
	obj := func(kind string) map[string]any {
		m := map[string]any{"login": kind, "id": 42, "node_id": "MDQ6VXNlcjE=", "html_url": "https://github.com/" + kind}
		for i := 0; i < 40; i++ {
			m[fmt.Sprintf("link%02d_url", i)] = fmt.Sprintf("https://api.github.com/repos/acme/shop/%s/%d{/number}", kind, i)
		}
		return m
	}
	b, _ := json.Marshal(map[string]any{"action": "opened", "number": 161,
		"pull_request": map[string]any{"title": "Index the search prefix", "body": body, "user": obj("user"), "head": obj("head"), "base": obj("base")},
		"repository":   obj("repository"), "sender": obj("sender")})
	return b
}

func TestBigDeliveryStaysInBudget(t *testing.T) {
	for _, tc := range []struct {
		name, body, note string
	}{
		{"links left out", strings.Repeat("The prefix match skips the index. ", 60), "API links and node ids left out"},
		{"long strings shortened", strings.Repeat("A very long description of the change. ", 1200), "more bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			last := ora.NormalizedSignal{ID: "sig-big", Source: ora.Source{Type: ora.SourceWebhook, Name: "github", Provider: "github", EventType: "pull_request"},
				DedupKey: "github:delivery:big", Payload: bigDelivery(tc.body), RawDigest: ora.Digest([]byte("big"))}
			_, sig, packet, err := orienttest.SteadyStateFor(ctx, 60, steadyNow, &last)
			if err != nil {
				t.Fatal(err)
			}
			srv := newCapture(t, func(int) map[string]any { return labelDecision(0.97) })
			r, err := reason.NewReasoner(srv.client(t), reason.DefaultConfig(), func(o *reason.Options) { o.Now, o.Catalogue = func() time.Time { return steadyNow }, catalogue })
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Reason(ctx, ora.ReasonerInput{Signal: sig, Packet: packet}); err != nil {
				t.Fatal(err)
			}
			q := srv.requests()[0]
			t.Logf("payload %d bytes: request %d input tokens", len(sig.Payload), q.Total())
			if q.Total() > 15000 {
				t.Errorf("request of %d input tokens, want at most 15,000", q.Total())
			}
			if !strings.Contains(string(q.Body), tc.note) || !strings.Contains(string(q.Body), "Index the search prefix") {
				t.Errorf("the request lacks %q or the payload's title", tc.note)
			}
		})
	}
}
