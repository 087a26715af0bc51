package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/console"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/statemachines"
)

// No edge of any of the wave's state machines runs through a box, the
// boxes do not overlap, and the parent fits beside the side panel on a
// 1,280 x 800 screen.
func TestGraphNoLineCrossesABox(t *testing.T) {
	for _, tt := range []struct {
		name string
		def  []byte
	}{{"wave", statemachines.Wave}, {"reason", statemachines.ReasonChild}, {"act", statemachines.ActChild}} {
		t.Run(tt.name, func(t *testing.T) {
			g, err := console.Layout(tt.def, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range g.Nodes {
				for _, b := range g.Nodes[i+1:] {
					if a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H {
						t.Errorf("%q and %q overlap", a.Name, b.Name)
					}
				}
				if a.X < 0 || a.Y < 0 || a.X+a.W > g.Width || a.Y+a.H > g.Height {
					t.Errorf("%q is outside the canvas", a.Name)
				}
			}
			for _, e := range g.Edges {
				pts := points(t, e.Points)
				for i := 1; i < len(pts); i++ {
					p, q := pts[i-1], pts[i]
					if p[0] != q[0] && p[1] != q[1] {
						t.Errorf("edge %s has a slanted segment", e.Points)
					}
					for _, n := range g.Nodes {
						// The segment's bounding box meets the box's inside.
						if min(p[0], q[0]) < n.X+n.W && max(p[0], q[0]) > n.X && min(p[1], q[1]) < n.Y+n.H && max(p[1], q[1]) > n.Y {
							t.Errorf("edge %s crosses %q", e.Points, n.Name)
						}
					}
				}
			}
			if tt.name == "wave" && (g.Width > 900 || g.Height > 600) {
				t.Errorf("the wave's graph is %d x %d, want at most 900 x 600 to fit a 1,280 x 800 screen with the panel", g.Width, g.Height)
			}
		})
	}
}

func points(t *testing.T, s string) [][2]int {
	t.Helper()
	var out [][2]int
	for _, p := range strings.Fields(s) {
		x, y, _ := strings.Cut(p, ",")
		xi, err1 := strconv.Atoi(x)
		yi, err2 := strconv.Atoi(y)
		if err1 != nil || err2 != nil {
			t.Fatalf("point %q", p)
		}
		out = append(out, [2]int{xi, yi})
	}
	return out
}

func entered(name, input string) map[string]any {
	return map[string]any{"type": "TaskStateEntered", "stateEnteredEventDetails": map[string]string{"name": name, "input": input}}
}

func exited(name, output string) map[string]any {
	return map[string]any{"type": "TaskStateExited", "stateExitedEventDetails": map[string]string{"name": name, "output": output}}
}

// highWave is the history of a wave that acted at once: Plan, Fetch (one
// Map iteration), Orient and reason (a child), Route, Act and validate.
func highWave(t testing.TB, childArn string) []byte {
	return history(t,
		map[string]any{"type": "ExecutionStarted"},
		entered("Plan observations", `{"signal_id":"sig-2"}`), exited("Plan observations", `{"plan":{"job_count":1}}`),
		map[string]any{"type": "ChoiceStateEntered", "stateEnteredEventDetails": map[string]string{"name": "Fetch inline?", "input": `{}`}},
		map[string]any{"type": "ChoiceStateExited", "stateExitedEventDetails": map[string]string{"name": "Fetch inline?", "output": `{}`}},
		map[string]any{"type": "MapStateEntered", "stateEnteredEventDetails": map[string]string{"name": "Fetch observations", "input": `{}`}},
		entered("Fetch", `{"Items":[]}`), exited("Fetch", `{"facts":3}`),
		map[string]any{"type": "MapStateExited", "stateExitedEventDetails": map[string]string{"name": "Fetch observations", "output": `{}`}},
		entered("Orient and reason", `{}`),
		map[string]any{"type": "TaskSucceeded", "taskSucceededEventDetails": map[string]string{"output": `{"ExecutionArn":"` + childArn + `","Status":"SUCCEEDED"}`}},
		exited("Orient and reason", `{"decision":{"band":"high"}}`),
		map[string]any{"type": "ChoiceStateEntered", "stateEnteredEventDetails": map[string]string{"name": "Route on confidence", "input": `{}`}},
		map[string]any{"type": "ChoiceStateExited", "stateExitedEventDetails": map[string]string{"name": "Route on confidence", "output": `{}`}},
		entered("Act and validate", `{}`), exited("Act and validate", `{"act":{"outcome":"succeeded"}}`),
		map[string]any{"type": "ExecutionSucceeded"},
	)
}

// executions is a fake of console.Executions over fixed histories.
type executions map[string][]byte

func (x executions) ExecutionHistory(_ context.Context, arn string) ([]byte, error) {
	if h, ok := x[arn]; ok {
		return h, nil
	}
	return nil, ora.Errorf(ora.ENOTFOUND, "no execution %s", arn)
}

const reasonArn = "arn:aws:states:local:000000000000:execution:ora-wave-reason:child-1"

func waveServer(t *testing.T) *console.Server {
	t.Helper()
	s, _ := server(t, false)
	s.Waves.(waves)["sig-2"] = httpapi.Wave{WaveID: "sig-2", Status: "SUCCEEDED", History: highWave(t, reasonArn)}
	s.Waves.(waves)["sig-3"] = httpapi.Wave{WaveID: "sig-3", Status: "RUNNING", History: history(t,
		map[string]any{"type": "ExecutionStarted"},
		entered("Plan observations", `{}`), exited("Plan observations", `{}`),
		map[string]any{"type": "ChoiceStateEntered", "stateEnteredEventDetails": map[string]string{"name": "Fetch inline?", "input": `{}`}},
		map[string]any{"type": "ChoiceStateExited", "stateExitedEventDetails": map[string]string{"name": "Fetch inline?", "output": `{}`}},
		map[string]any{"type": "MapStateEntered", "stateEnteredEventDetails": map[string]string{"name": "Fetch observations", "input": `{}`}},
		entered("Fetch", `{}`), exited("Fetch", `{}`),
		map[string]any{"type": "MapStateExited", "stateExitedEventDetails": map[string]string{"name": "Fetch observations", "output": `{}`}},
		entered("Orient and reason", `{}`),
		map[string]any{"type": "TaskFailed", "taskFailedEventDetails": map[string]string{"error": "States.TaskFailed", "cause": "the model timed out"}},
		entered("Operate on failure", `{"failure":{}}`),
	)}
	s.Ledger.(ledger).entries["sig-2"] = nil
	s.Ledger.(ledger).entries["sig-3"] = nil
	s.Children = statemachines.Children
	s.Executions = executions{reasonArn: history(t,
		map[string]any{"type": "ExecutionStarted"},
		map[string]any{"type": "ChoiceStateEntered", "stateEnteredEventDetails": map[string]string{"name": "Start at", "input": `{}`}},
		map[string]any{"type": "ChoiceStateExited", "stateExitedEventDetails": map[string]string{"name": "Start at", "output": `{}`}},
		entered("Compile orientation packet", `{}`), exited("Compile orientation packet", `{"packet":{}}`),
		entered("Reason", `{"packet":{"facts":3}}`), exited("Reason", `{"decision":{"action_type":"notify"}}`),
		map[string]any{"type": "ChoiceStateEntered", "stateEnteredEventDetails": map[string]string{"name": "Review needed?", "input": `{}`}},
		map[string]any{"type": "ChoiceStateExited", "stateExitedEventDetails": map[string]string{"name": "Review needed?", "output": `{}`}},
		map[string]any{"type": "SucceedStateEntered", "stateEnteredEventDetails": map[string]string{"name": "Reasoned", "input": `{}`}},
		map[string]any{"type": "SucceedStateExited", "stateExitedEventDetails": map[string]string{"name": "Reasoned", "output": `{}`}},
		map[string]any{"type": "ExecutionSucceeded"},
	)}
	return s
}

var takenEdge = regexp.MustCompile(`<polyline class="edge taken[^"]*"`)

// The graph marks the states and edges the wave went through: the path
// taken, Map branches included, and on a failure the Catch it followed.
func TestGraphDrawsTakenPath(t *testing.T) {
	h := waveServer(t).Handler()
	for _, tt := range []struct {
		name, path  string
		taken, not  []string
		edges       int // taken edges in the parent
		caughtTaken bool
	}{
		{"acted at once", "/console/waves/sig-2", []string{"Plan observations", "Fetch inline?", "Fetch observations", "Fetch", "Orient and reason", "Route on confidence", "Act and validate"},
			[]string{"Escalate to a human", "Operate on failure", "Record rejection"}, 6, false},
		{"caught a failure", "/console/waves/sig-3", []string{"Plan observations", "Orient and reason", "Operate on failure"},
			[]string{"Route on confidence", "Act and validate"}, 5, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, h, tt.path, nil)
			if code != http.StatusOK {
				t.Fatalf("status %d", code)
			}
			parent := body[strings.Index(body, `<svg class="sm" id="wave"`):]
			parent = parent[:strings.Index(parent, "</svg>")]
			for _, s := range tt.taken {
				if !regexp.MustCompile(`class="node st-[a-z-]+ taken[^"]*" data-state="` + regexp.QuoteMeta(s) + `" data-status="[a-z-]+" data-taken="true"`).MatchString(parent) {
					t.Errorf("state %q is not drawn as taken", s)
				}
			}
			for _, s := range tt.not {
				if !strings.Contains(parent, `data-state="`+s+`" data-status="not-run" data-taken="false"`) {
					t.Errorf("state %q is drawn as taken", s)
				}
			}
			if got := len(takenEdge.FindAllString(parent, -1)); got != tt.edges {
				t.Errorf("%d taken edges, want %d", got, tt.edges)
			}
			if got := strings.Contains(parent, `class="edge taken caught`); got != tt.caughtTaken {
				t.Errorf("a Catch edge drawn taken: %v, want %v", got, tt.caughtTaken)
			}
			if !strings.Contains(parent, `class="edge caught failure"`) {
				t.Errorf("no untaken Catch edge drawn faint")
			}
		})
	}
}

// The side panel works without a script: ?state=NAME selects the state
// (a child's: child/NAME, which opens the child inline); without it the
// panel shows the failed state, else the last one entered.
func TestPanelSelectsState(t *testing.T) {
	h := waveServer(t).Handler()
	for _, tt := range []struct {
		name, path, selected, shows string
		childOpen                   bool
	}{
		{"named", "/console/waves/sig-2?state=Plan+observations", "Plan observations", `&#34;signal_id&#34;: &#34;sig-2&#34;`, false},
		{"the last by default", "/console/waves/sig-2", "Act and validate", `&#34;outcome&#34;: &#34;succeeded&#34;`, false},
		{"unknown falls back", "/console/waves/sig-2?state=Nope", "Act and validate", `&#34;act&#34;`, false},
		{"the failed by default", "/console/waves/sig-3", "Orient and reason", "the model timed out", false},
		{"a child's state", "/console/waves/sig-2?state=reason%2FReason", "reason/Reason", `&#34;action_type&#34;: &#34;notify&#34;`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, h, tt.path, nil)
			if code != http.StatusOK {
				t.Fatalf("status %d", code)
			}
			shown := regexp.MustCompile(`<section class="state-panel" data-state="([^"]*)" >`).FindAllStringSubmatch(body, -1)
			if len(shown) != 1 || shown[0][1] != tt.selected {
				t.Fatalf("panels shown %v, want only %q", shown, tt.selected)
			}
			panel := body[strings.Index(body, `data-state="`+tt.selected+`" >`):]
			panel = panel[:strings.Index(panel, "</section>")]
			if !strings.Contains(panel, tt.shows) {
				t.Errorf("the panel of %q lacks %q:\n%s", tt.selected, tt.shows, panel)
			}
			if !strings.Contains(body, `class="node st-`) || !strings.Contains(body, `selected" data-state="`+tt.selected+`"`) {
				t.Errorf("the node %q is not marked selected", tt.selected)
			}
			if got := strings.Contains(body, `id="child-reason" open`); got != tt.childOpen {
				t.Errorf("the reason child open: %v, want %v", got, tt.childOpen)
			}
		})
	}
	if code, raw := get(t, h, "/console/waves/sig-2/raw?state=reason%2FReason&part=output", nil); code != http.StatusOK || raw != `{"decision":{"action_type":"notify"}}` {
		t.Errorf("raw output of the child's Reason: %d %s", code, raw)
	}
	if _, body := get(t, h, "/console/waves/sig-2", nil); !strings.Contains(body, `data-state="reason/Reason" data-status="succeeded" data-taken="true"`) {
		t.Errorf("the reason child's Reason state is not drawn as run")
	}
}

// at returns e created at t0 plus d.
func at(e ora.Entry, t0 time.Time, d time.Duration) ora.Entry {
	e.CreatedAt = t0.Add(d)
	return e
}

func entryOf(t testing.TB, sig string, kind ora.EntryKind, q string, v any, meta map[string]string) ora.Entry {
	t.Helper()
	e, err := ora.NewEntry(sig, kind, q, v)
	if err != nil {
		t.Fatal(err)
	}
	e.Meta = meta
	return e
}

// A wave of a GitHub issue: its ledger as the wave page's cards.
func issueWave(t testing.TB, sig string, t0 time.Time) []ora.Entry {
	dec := ora.ReasonerDecision{ID: "dec-" + sig, SignalID: sig, Confidence: 0.92, Reasoning: "a crash report from a known reporter", AuthorType: ora.AuthorArchitect,
		Actions: []ora.Action{
			{Type: "http.request", Parameters: json.RawMessage(`{"method":"POST","url":"https://api.github.com/repos/o/r/issues/42/labels","body":{"labels":["bug"]}}`)},
			{Type: "object.put", Parameters: json.RawMessage(`{"key":"actions/issues/42.json"}`), DependsOn: []int{0}},
		}}
	return []ora.Entry{
		at(entryOf(t, sig, ora.KindSignalReceived, "", ora.NormalizedSignal{ID: sig, Source: ora.Source{Type: ora.SourceWebhook, Name: "github", Provider: "github", EventType: "issues.opened"},
			Payload: json.RawMessage(`{"action":"opened","issue":{"number":42,"title":"Crash on start"}}`)}, map[string]string{"source": "github"}), t0, 0),
		at(entryOf(t, sig, ora.KindOrientationPin, "", map[string]any{"profile_id": "default", "orientation_profile_version": 3}, nil), t0, time.Millisecond),
		at(entryOf(t, sig, ora.KindObservedFact, "recent/facts-000", map[string]any{"facts": []any{}}, map[string]string{"job_id": "recent", "facts": "2"}), t0, 2*time.Millisecond),
		at(entryOf(t, sig, ora.KindOrientationPacket, "", ora.OrientationPacket{ID: "pkt", TokenBudget: 1000, TokenUsed: 420, ProfileID: "default", ProfileVersion: 3,
			Bands: []ora.PacketBand{{BandBudget: ora.BandBudget{Band: "identity", MaxTokens: 500}, UsedTokens: 420, Facts: []ora.Fact{
				{SourceType: "signal", EstimatedTokens: 300, Utility: 1}, {SourceType: "recent-actions", SourceRef: "ledger:sig-0/execution-evidence/0", EstimatedTokens: 120, Utility: 0.8}}}}}, nil), t0, 3*time.Millisecond),
		at(entryOf(t, sig, ora.KindOrientationAudit, "orientation.packet.compiled", map[string]any{"action": "orientation.packet.compiled", "actor": "orientation.compiler", "result": "compiled"}, nil), t0, 4*time.Millisecond),
		at(entryOf(t, sig, ora.KindReasonerDecision, dec.ID, dec, nil), t0, 5*time.Millisecond),
		at(entryOf(t, sig, ora.KindExecutionEvidence, "0", map[string]any{"index": 0, "type": "http.request", "outcome": "failure", "error": "status 502",
			"receipt": map[string]any{"type": "http.request", "target": "https://api.github.com/repos/o/r/issues/42/labels", "status_code": 502}}, nil), t0, 6*time.Millisecond),
		at(entryOf(t, sig, ora.KindExecutionEvidence, "1", map[string]any{"index": 1, "type": "object.put", "outcome": "skipped", "error_type": "Skipped",
			"receipt": map[string]any{"type": "object.put", "target": "actions/issues/42.json"}}, nil), t0, 7*time.Millisecond),
		at(entryOf(t, sig, ora.KindValidatorResult, "technical", map[string]any{"validator": "technical", "verdict": "FAIL", "summary": "1 of 2 actions failed: status 502",
			"attribution": map[string]string{"responsible_for": "execution"}}, nil), t0, 8*time.Millisecond),
		at(entryOf(t, sig, ora.KindFinalVerdict, "", map[string]any{"outcome": "failed", "error": "ActionFailed",
			"validators": []any{map[string]any{"validator": "technical", "verdict": "FAIL", "summary": "1 of 2 actions failed: status 502"}},
			"actions":    []any{map[string]any{"index": 0, "type": "http.request", "outcome": "failure"}, map[string]any{"index": 1, "type": "object.put", "outcome": "skipped"}}}, nil), t0, 900*time.Millisecond),
	}
}

// The ledger reads as cards: the signal's event type and payload, the
// decision's actions with their parameters, each action's receipt (a link
// when it is a URL), the verdicts with their reasons, a skipped action
// styled as such, and the orientation's internal entries grouped with the
// packet's token use and top facts.
func TestLedgerCards(t *testing.T) {
	s, _ := server(t, false)
	s.Ledger.(ledger).entries["sig-4"] = issueWave(t, "sig-4", time.Now())
	s.Waves.(waves)["sig-4"] = httpapi.Wave{WaveID: "sig-4", Status: "SUCCEEDED", History: highWave(t, "")}
	_, body := get(t, s.Handler(), "/console/waves/sig-4", nil)
	for _, want := range []string{
		`<strong data-field="event">issues.opened</strong> from github`,
		`&#34;title&#34;: &#34;Crash on start&#34;`,
		"Decision: http.request, object.put", "Parameters of http.request", "Parameters of object.put (after [0])", `&#34;labels&#34;: [`,
		`<a href="https://api.github.com/repos/o/r/issues/42/labels" rel="noreferrer">`, "<code>actions/issues/42.json</code>",
		`<span class="badge o-skipped">skipped</span>`, `<span class="badge o-failure">failure</span>`,
		`data-kind="verdict"`, `<span class="badge v-FAIL">FAIL</span> <strong>technical</strong>: 1 of 2 actions failed: status 502`,
		`data-kind="orientation"`, "420 of 1000", "Top facts", "recent-actions", `data-kind="orientation-pin"`, `data-kind="orientation-audit"`,
		"Audit: orientation.packet.compiled", "facts observed</dt><dd>2",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(body, `class="entry kind-`); n != 12 {
		t.Errorf("%d cards and grouped entries, want 12 (10 entries, 2 groups)", n)
	}
	// The orientation group stands where its first entry stood: after the
	// signal, before the decision.
	if i, j, k := strings.Index(body, `data-kind="signal-received"`), strings.Index(body, `data-kind="orientation"`), strings.Index(body, `data-kind="reasoner-decision"`); !(i < j && j < k) {
		t.Errorf("cards out of order: signal %d, orientation %d, decision %d", i, j, k)
	}
}

// Each row of the list says what happened in one line, and the list
// filters by event type and outcome on the server.
func TestWaveListRowsAndFilters(t *testing.T) {
	s, _ := server(t, false)
	t0 := time.Now().Add(-time.Minute)
	l := s.Ledger.(ledger)
	l.entries["sig-4"] = issueWave(t, "sig-4", t0)
	push := ora.ReasonerDecision{ID: "dec-5", SignalID: "sig-5", ActionType: "notify", Confidence: 0.6, AuthorType: ora.AuthorArchitect}
	l.entries["sig-5"] = []ora.Entry{
		at(entryOf(t, "sig-5", ora.KindSignalReceived, "", ora.NormalizedSignal{ID: "sig-5", Source: ora.Source{Type: ora.SourceWebhook, Name: "github", EventType: "push"}, Payload: json.RawMessage(`{}`)}, map[string]string{"source": "github"}), t0, time.Second),
		at(entryOf(t, "sig-5", ora.KindReasonerDecision, "dec-5", push, nil), t0, time.Second+time.Millisecond),
		at(entryOf(t, "sig-5", ora.KindFinalVerdict, "", map[string]any{"outcome": "completed", "actions": []any{map[string]any{"index": 0, "type": "notify", "outcome": "success"}}}, nil), t0, time.Second+40*time.Millisecond),
	}
	w := s.Waves.(waves)
	w["sig-4"] = httpapi.Wave{WaveID: "sig-4", Status: "SUCCEEDED"}
	w["sig-5"] = httpapi.Wave{WaveID: "sig-5", Status: "SUCCEEDED"}
	h := s.Handler()
	row := regexp.MustCompile(`(?s)<tr class="wave-row" data-wave="([^"]+)"[^>]*>\s*<td class="line">(.*?)</td>`)
	tags := regexp.MustCompile(`<[^>]+>`)
	for _, tt := range []struct {
		query string
		want  map[string]string // wave -> its line, tags removed
	}{
		{"", map[string]string{
			"sig-4": "issues.opened → http.request failure, object.put skipped → failed",
			"sig-5": "push → notify → completed",
			"sig-1": "demo → notify → in progress",
		}},
		{"?outcome=failed", map[string]string{"sig-4": "issues.opened → http.request failure, object.put skipped → failed"}},
		{"?outcome=in+progress", map[string]string{"sig-1": "demo → notify → in progress"}},
		{"?event=push", map[string]string{"sig-5": "push → notify → completed"}},
		{"?event=issues.opened&outcome=completed", map[string]string{}},
	} {
		t.Run("list"+tt.query, func(t *testing.T) {
			code, body := get(t, h, "/console/"+tt.query, nil)
			if code != http.StatusOK {
				t.Fatalf("status %d", code)
			}
			got := map[string]string{}
			for _, m := range row.FindAllStringSubmatch(body, -1) {
				got[m[1]] = strings.Join(strings.Fields(tags.ReplaceAllString(m[2], "")), " ")
			}
			if len(got) != len(tt.want) {
				t.Errorf("rows %v, want %v", got, tt.want)
			}
			for id, line := range tt.want {
				if got[id] != line {
					t.Errorf("row %s reads %q, want %q", id, got[id], line)
				}
			}
			for _, opt := range []string{`<option value="push"`, `<option value="issues.opened"`, `<option value="in progress"`} {
				if !strings.Contains(body, opt) {
					t.Errorf("the filters lack %s", opt)
				}
			}
		})
	}
	_, body := get(t, h, "/console/?outcome=failed", nil)
	if !strings.Contains(body, "900 ms") || !strings.Contains(body, `class="badge b-high"`) {
		t.Errorf("the failed wave's row lacks its duration (900 ms) or band (high)")
	}
}

// objects is a fake of console.Objects over fixed bodies.
type objects map[string]string

func (o objects) Get(_ context.Context, key string, _ int64) ([]byte, orient.ObjectInfo, error) {
	if b, ok := o[key]; ok {
		return []byte(b), orient.ObjectInfo{Key: key, Size: int64(len(b))}, nil
	}
	return nil, orient.ObjectInfo{}, ora.Errorf(ora.ENOTFOUND, "no object %s", key)
}

// An object.put receipt links the object it wrote; the link serves only
// objects the wave's evidence names, as plain text.
func TestReceiptLinksItsObject(t *testing.T) {
	s, _ := server(t, false)
	s.Ledger.(ledger).entries["sig-4"] = issueWave(t, "sig-4", time.Now())
	s.Waves.(waves)["sig-4"] = httpapi.Wave{WaveID: "sig-4", Status: "SUCCEEDED", History: highWave(t, "")}
	s.Objects = objects{"actions/issues/42.json": `{"issue":42,"note":"<script>alert(1)</script>"}`, "secrets/key": "nope"}
	h := s.Handler()
	_, page := get(t, h, "/console/waves/sig-4", nil)
	if !strings.Contains(page, `<a href="/console/waves/sig-4/object?entry=7" rel="noreferrer">actions/issues/42.json</a>`) {
		t.Errorf("the object.put receipt does not link its object")
	}
	for _, tt := range []struct {
		name, query string
		code        int
		body        string
	}{
		{"the object", "entry=7", http.StatusOK, `{"issue":42,"note":"<script>alert(1)</script>"}`},
		{"an http.request receipt", "entry=6", http.StatusNotFound, ""},
		{"not evidence", "entry=0", http.StatusNotFound, ""},
		{"past the end", "entry=99", http.StatusNotFound, ""},
		{"a key asked for", "key=secrets/key", http.StatusBadRequest, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/console/waves/sig-4/object?"+tt.query, nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Fatalf("status %d, want %d", rec.Code, tt.code)
			}
			if tt.code == http.StatusOK {
				if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
					t.Errorf("served as %q, want plain text, nosniff", ct)
				}
				if rec.Body.String() != tt.body {
					t.Errorf("body %q, want %q", rec.Body.String(), tt.body)
				}
			}
		})
	}
}

// A wave whose execution the engine's retention removed keeps its row and its
// page from the ledger: EXPIRED with its verdict's outcome, not a wave that
// never started, and not a 404. A wave the engine has not started yet reads
// NOT_STARTED.
func TestWaveWithoutExecution(t *testing.T) {
	s, _ := server(t, false)
	t0 := time.Now().Add(-time.Minute)
	l := s.Ledger.(ledger)
	push := ora.ReasonerDecision{ID: "dec-5", SignalID: "sig-5", ActionType: "notify", Confidence: 0.9}
	l.entries["sig-5"] = []ora.Entry{
		at(entryOf(t, "sig-5", ora.KindSignalReceived, "", ora.NormalizedSignal{ID: "sig-5", Source: ora.Source{Type: ora.SourceWebhook, Name: "github", EventType: "push"}, Payload: json.RawMessage(`{}`)}, map[string]string{"source": "github"}), t0, time.Second),
		at(entryOf(t, "sig-5", ora.KindReasonerDecision, "dec-5", push, nil), t0, time.Second+time.Millisecond),
		at(entryOf(t, "sig-5", ora.KindFinalVerdict, "", map[string]any{"outcome": "completed", "actions": []any{map[string]any{"index": 0, "type": "notify", "outcome": "success"}}}, nil), t0, time.Second+40*time.Millisecond),
	}
	l.entries["sig-6"] = []ora.Entry{
		at(entryOf(t, "sig-6", ora.KindSignalReceived, "", ora.NormalizedSignal{ID: "sig-6", Source: ora.Source{Type: ora.SourceWebhook, Name: "github", EventType: "push"}, Payload: json.RawMessage(`{}`)}, map[string]string{"source": "github"}), t0, 2*time.Second),
	}
	h := s.Handler()
	row := regexp.MustCompile(`(?s)<tr class="wave-row" data-wave="([^"]+)".*?</tr>`)
	rows := map[string]string{}
	_, body := get(t, h, "/console/", nil)
	for _, m := range row.FindAllStringSubmatch(body, -1) {
		rows[m[1]] = m[0]
	}
	for id, want := range map[string][]string{"sig-5": {"(EXPIRED)", "completed"}, "sig-6": {"(NOT_STARTED)", "in progress"}} {
		for _, w := range want {
			if !strings.Contains(rows[id], w) {
				t.Errorf("row %s lacks %q: %s", id, w, rows[id])
			}
		}
	}
	if _, body := get(t, h, "/console/?status=EXPIRED", nil); !strings.Contains(body, `data-wave="sig-5"`) || strings.Contains(body, `data-wave="sig-6"`) {
		t.Errorf("the EXPIRED filter does not hold exactly sig-5")
	}
	for id, want := range map[string][]string{
		"sig-5": {`id="wave-status" class="badge s-EXPIRED"`, "removed by retention", `data-field="outcome">completed`},
		"sig-6": {`id="wave-status" class="badge s-NOT_STARTED"`},
	} {
		code, body := get(t, h, "/console/waves/"+id, nil)
		if code != http.StatusOK {
			t.Fatalf("%s: status %d, want 200 from the ledger", id, code)
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s's page lacks %q", id, w)
			}
		}
	}
}

// A decision made under an operator's app patch says so on its card: the
// wave ran patched.
func TestDecisionCardShowsAppPatch(t *testing.T) {
	s, _ := server(t, false)
	t0 := time.Now().Add(-time.Minute)
	d := ora.ReasonerDecision{ID: "dec-6", SignalID: "sig-6", ActionType: "notify", Confidence: 0.9, AuthorType: ora.AuthorArchitect,
		AppPatch: &ora.AppPatch{Kind: ora.PatchInput, Target: "confidence", Value: json.RawMessage(`"high"`), Digest: "3f2a9c0d1e7b5a6c7d8e"}}
	s.Ledger.(ledger).entries["sig-6"] = []ora.Entry{
		at(entryOf(t, "sig-6", ora.KindSignalReceived, "", ora.NormalizedSignal{ID: "sig-6", Source: ora.Source{Type: ora.SourceWebhook, Name: "demo"}, Payload: json.RawMessage(`{"confidence":"low"}`)}, nil), t0, time.Second),
		at(entryOf(t, "sig-6", ora.KindReasonerDecision, "dec-6", d, nil), t0, 2*time.Second),
	}
	s.Waves.(waves)["sig-6"] = httpapi.Wave{WaveID: "sig-6", Status: "SUCCEEDED"}
	_, body := get(t, s.Handler(), "/console/waves/sig-6", nil)
	if want := `app patch</dt><dd>input of confidence = &#34;high&#34; (sha256 3f2a9c0d1e7b), supplied with the resume`; !strings.Contains(body, want) {
		t.Errorf("the decision card lacks %q", want)
	}
}
