package reason_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
)

// prefixOf returns the request's first user text (the prefix: program,
// goal, envelope, signal, packet view).
func prefixOf(q bedrocktest.Request) string {
	for _, m := range q.Messages {
		for _, b := range m.Content {
			if b.Text != nil {
				return *b.Text
			}
		}
	}
	return ""
}

// TestReasonDiagnosticKernel: with the kernel not green, only
// GuardFailureInterpreter runs: the model is asked for a diagnosis, the
// wave's program is recorded BLOCKED in the trace, and the decision is
// none, carrying the diagnosis and why the kernel is not green.
func TestReasonDiagnosticKernel(t *testing.T) {
	srv := bedrocktest.New(t, stage(0.9, 3, "the motor's rules fail every wave", payloads[ora.ProgramGuardFailureInterpreter]))
	r, err := reason.NewReasoner(bedrock.New(srv.Client(1)), testConfig(), func(o *reason.Options) {
		o.Now = func() time.Time { return now }
		o.Kernel = func(context.Context) (ora.KernelStateRef, error) {
			return ora.KernelStateRef{Mode: reason.ModeDiagnostic, RealitySummary: map[string]any{"reality_green": false,
				"not_green_because": []string{"1 open critical incident(s) (motor or mixed): incident-abc"}}}, nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.Reason(context.Background(), input("sig-1"))
	if err != nil {
		t.Fatalf("Reason: %v", err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !strings.Contains(prefixOf(reqs[0]), "PROGRAM: "+string(ora.ProgramGuardFailureInterpreter)) {
		t.Fatalf("%d requests; want one GuardFailureInterpreter call", len(reqs))
	}
	if d.ActionType != act.TypeNone || d.Model == nil || d.Model.Mode != reason.ModeDiagnostic || d.Model.Program != ora.ProgramGuardFailureInterpreter ||
		!slices.Equal(d.Model.BlockedPrograms, []ora.ProgramID{ora.ProgramSafeOPSDecision}) {
		t.Fatalf("decision %s, trace %+v: want none, diagnostic, SafeOPSDecision blocked", d.ActionType, d.Model)
	}
	for _, s := range []string{"disk full on runner", "prune caches", "incident-abc", "SafeOPSDecision] BLOCKED"} {
		if !strings.Contains(string(d.Parameters), s) {
			t.Errorf("parameters %s do not say %q", d.Parameters, s)
		}
	}
}

// TestReasonProgramChoice: Config.Programs chooses the program by the
// signal; each program's payload becomes a decision the actor can run, or
// a none that says why not; a signal no route matches runs SafeOPSDecision.
func TestReasonProgramChoice(t *testing.T) {
	tests := []struct {
		name     string
		route    reason.ProgramRoute
		program  ora.ProgramID
		wantType string
		says     string
		maxConf  float64
		author   ora.AuthorType
	}{
		{"ops block for pull requests", reason.ProgramRoute{Source: "github", EventType: "pull_*", Program: ora.ProgramOPSBlockGenerator}, ora.ProgramOPSBlockGenerator,
			act.TypeNone, "make build; make deploy", reason.HumanOnlyConfidence, ora.AuthorArchitect},
		{"phase check for github", reason.ProgramRoute{Source: "github", Program: ora.ProgramPhaseTransitionValidator}, ora.ProgramPhaseTransitionValidator,
			act.TypeNone, "NOT_READY: missing e2e green", ora.HighConfidence, ora.AuthorAuditor},
		{"interpreter for github", reason.ProgramRoute{Source: "github", Program: ora.ProgramGuardFailureInterpreter}, ora.ProgramGuardFailureInterpreter,
			act.TypeNone, "Diagnosis: disk full on runner", ora.HighConfidence, ora.AuthorAuditor},
		{"a route for another source", reason.ProgramRoute{Source: "slack", Program: ora.ProgramOPSBlockGenerator}, ora.ProgramSafeOPSDecision,
			act.TypeNotify, "", 1, ora.AuthorArchitect},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Programs = []reason.ProgramRoute{tc.route}
			r, srv, _ := newReasoner(t, cfg, stage(0.95, 3, "observed", payloads[tc.program]))
			d, err := r.Reason(context.Background(), input("sig-1"))
			if err != nil {
				t.Fatalf("Reason: %v", err)
			}
			if q := srv.Requests(); len(q) != 1 || !strings.Contains(prefixOf(q[0]), "PROGRAM: "+string(tc.program)) {
				t.Fatalf("the model was not asked to run %s", tc.program)
			}
			if d.ActionType != tc.wantType || d.Model.Program != tc.program || d.Model.Mode != reason.ModePipeline || d.AuthorType != tc.author || d.Confidence > tc.maxConf+1e-9 {
				t.Fatalf("decision %s by %s (%s, %.2f, mode %s), want %s by %s", d.ActionType, d.Model.Program, d.AuthorType, d.Confidence, d.Model.Mode, tc.wantType, tc.program)
			}
			var np act.NoneParams
			_ = json.Unmarshal(d.Parameters, &np)
			if !strings.Contains(np.Reason, tc.says) {
				t.Errorf("reason %q does not say %q", np.Reason, tc.says)
			}
			// The plan is one the actor can run, parameters and all.
			if len(d.Plan()) == 0 {
				t.Fatal("the decision has no action plan")
			}
			for i, a := range d.Plan() {
				if err := act.StandardParameters().CheckParameters(a); err != nil {
					t.Errorf("action %d (%s): the actor would refuse it: %v", i, a.Type, err)
				}
			}
		})
	}
}

// TestProgramRoutesValidate: a route must name a known program and a glob.
func TestProgramRoutesValidate(t *testing.T) {
	for _, r := range []reason.ProgramRoute{{Program: "Nope"}, {EventType: "[", Program: ora.ProgramOPSBlockGenerator}} {
		cfg := testConfig()
		cfg.Programs = []reason.ProgramRoute{r}
		if err := cfg.Validate(); ora.ErrorCode(err) != ora.EINVALID || !strings.HasPrefix(ora.ErrorField(err), "reason.programs[0]") {
			t.Errorf("route %+v: err %v, want EINVALID on reason.programs[0]", r, err)
		}
	}
}

// operatorState is a hand-written OperatorState.
type operatorState struct {
	incidents []operate.Incident
	err       error
}

func (s operatorState) Incidents(context.Context) ([]operate.Incident, operate.Summary, error) {
	open := 0
	for _, i := range s.incidents {
		if i.Status == "open" {
			open++
		}
	}
	return s.incidents, operate.Summary{Incidents: len(s.incidents), Open: open}, s.err
}

// verdicts is a hand-written RecentReader of final verdicts, newest first.
type verdicts []operate.Verdict

func (v verdicts) Recent(_ context.Context, kind ora.EntryKind, _, _ time.Time, limit int) ([]ora.Entry, error) {
	var out []ora.Entry
	for i, x := range v {
		if kind != ora.KindFinalVerdict || (limit > 0 && len(out) == limit) {
			break
		}
		e, _ := ora.NewEntry("sig-v"+string(rune('a'+i)), ora.KindFinalVerdict, "", x)
		out = append(out, e)
	}
	return out, nil
}

// TestNewKernel: reality_green is false with an open critical (motor or
// mixed) incident, more paused waves than the threshold, or more failing
// validator waves among the latest than the threshold; the summary says why.
func TestNewKernel(t *testing.T) {
	paused := func(n int) []operate.Occurrence {
		var out []operate.Occurrence
		for i := range n {
			out = append(out, operate.Occurrence{WaveID: "w" + string(rune('a'+i)), Action: "pause", At: now})
		}
		return out
	}
	failed, _ := json.Marshal([]ora.ValidatorResult{{Validator: ora.ValidatorSafety, Verdict: ora.Fail}})
	passed, _ := json.Marshal([]ora.ValidatorResult{{Validator: ora.ValidatorSafety, Verdict: ora.Pass}})
	some := func(bad int) verdicts {
		var v verdicts
		for i := range 10 {
			x := operate.Verdict{Outcome: "completed", Validators: passed}
			if i < bad {
				x.Validators = failed
			}
			v = append(v, x)
		}
		return v
	}
	tests := []struct {
		name      string
		state     operatorState
		verdicts  verdicts
		green     bool
		why       string
		critical  int
		pausedIDs int
	}{
		{"quiet", operatorState{}, some(0), true, "", 0, 0},
		{"open motor incident", operatorState{incidents: []operate.Incident{{ID: "incident-m", Status: "open", Classification: operate.ClassMotor, Occurrences: paused(1)}}}, nil, false, "incident-m", 1, 1},
		{"open mixed incident", operatorState{incidents: []operate.Incident{{ID: "incident-x", Status: "open", Classification: operate.ClassMixed}}}, nil, false, "critical", 1, 0},
		{"open app incident", operatorState{incidents: []operate.Incident{{ID: "incident-a", Status: "open", Classification: operate.ClassApp, Occurrences: paused(1)}}}, nil, true, "", 0, 1},
		{"resolved motor incident", operatorState{incidents: []operate.Incident{{ID: "incident-r", Status: "resolved", Classification: operate.ClassMotor}}}, nil, true, "", 0, 0},
		{"paused waves at the threshold", operatorState{incidents: []operate.Incident{{ID: "incident-a", Status: "open", Classification: operate.ClassApp, Occurrences: paused(5)}}}, nil, true, "", 0, 5},
		{"paused waves over the threshold", operatorState{incidents: []operate.Incident{{ID: "incident-a", Status: "open", Classification: operate.ClassApp, Occurrences: paused(6)}}}, nil, false, "6 paused waves", 0, 6},
		{"failing validators at the threshold", operatorState{}, some(3), true, "", 0, 0},
		{"failing validators over the threshold", operatorState{}, some(4), false, "4 of the last 10 waves failed a validator", 0, 0},
		{"a wave failed on ValidationFailed", operatorState{}, append(some(3)[:3], append(verdicts{{Outcome: "failed", Error: "ValidationFailed"}}, some(0)[4:]...)...), false, "failed a validator", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, err := reason.NewKernel(tc.state, tc.verdicts, reason.RealityConfig{}, func() time.Time { return now })(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if k.Green() != tc.green || (k.Mode == reason.ModeDiagnostic) == tc.green {
				t.Fatalf("green %v mode %s, want green %v (%+v)", k.Green(), k.Mode, tc.green, k.RealitySummary)
			}
			why, _ := json.Marshal(k.RealitySummary["not_green_because"])
			if tc.why != "" && !strings.Contains(string(why), tc.why) {
				t.Errorf("not green because %s, want it to say %q", why, tc.why)
			}
			if k.RealitySummary["critical_incidents"] != tc.critical || k.RealitySummary["paused_waves"] != tc.pausedIDs {
				t.Errorf("summary %+v, want %d critical and %d paused", k.RealitySummary, tc.critical, tc.pausedIDs)
			}
		})
	}
	t.Run("an unreadable operator state is an error", func(t *testing.T) {
		_, err := reason.NewKernel(operatorState{err: ora.Transient(nil, "down")}, verdicts{}, reason.RealityConfig{}, nil)(context.Background())
		if ora.ErrorCode(err) != ora.ETRANSIENT {
			t.Errorf("err %v, want ETRANSIENT", err)
		}
	})
}

// TestDiagnosticModeUsesNoPattern: a diagnosis is about the kernel's state
// at the time, which a pattern's key does not hold: the same signal in
// diagnostic mode asks the model again and caches nothing.
func TestDiagnosticModeUsesNoPattern(t *testing.T) {
	patterns := &memPatterns{}
	srv := bedrocktest.NewFunc(t, func(bedrocktest.Request) bedrocktest.Reply {
		return stage(0.97, 3, "diagnosis", payloads[ora.ProgramGuardFailureInterpreter])
	})
	r, err := reason.NewReasoner(bedrock.New(srv.Client(1)), testConfig(), func(o *reason.Options) {
		o.Now, o.Patterns = func() time.Time { return now }, patterns
		o.Kernel = func(context.Context) (ora.KernelStateRef, error) {
			return ora.KernelStateRef{Mode: reason.ModeDiagnostic, RealitySummary: map[string]any{"reality_green": false}}, nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"sig-1", "sig-2"} {
		in := input(id)
		in.Signal.Payload = json.RawMessage(`{"action":"opened","number":7}`)
		if _, err := r.Reason(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(srv.Requests()); n != 2 || patterns.puts != 0 {
		t.Errorf("%d calls and %d patterns cached, want 2 calls and none", n, patterns.puts)
	}
}
