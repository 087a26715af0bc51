package ora

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

var validationTime = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

func validationSignal() NormalizedSignal {
	raw := []byte(`{"action":"opened"}`)
	return NormalizedSignal{
		ID:           "sig-1",
		Source:       Source{Type: SourceWebhook, Provider: "github", EventType: "issues"},
		Timestamp:    validationTime,
		Payload:      json.RawMessage(`{"action":"opened"}`),
		NormalizedAt: validationTime,
		DedupKey:     "github:issues:1",
		RawDigest:    Digest(raw),
		Raw:          raw,
	}
}

func validationDecision() ReasonerDecision {
	return ReasonerDecision{
		ID: "dec-1", SignalID: "sig-1", ActionType: "comment", Confidence: 0.9,
		AuthorType: AuthorArchitect, Scope: Scope{AllowedOperations: []string{"comment"}},
		Tier: 1, Timestamp: validationTime,
	}
}

// wantInvalid checks err is EINVALID naming field ("" means err must be nil).
func wantInvalidField(t *testing.T, err error, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Fatalf("got %v, want no error", err)
		}
		return
	}
	if got := ErrorCode(err); got != EINVALID {
		t.Fatalf("code got %q (%v), want %q", got, err, EINVALID)
	}
	if got := ErrorField(err); got != field {
		t.Errorf("field got %q, want %q", got, field)
	}
	if !strings.Contains(err.Error(), field) {
		t.Errorf("message %q does not name the field %q", err.Error(), field)
	}
}

func TestSourceValidate(t *testing.T) {
	cases := []struct {
		name  string
		s     Source
		field string
	}{
		{"webhook", Source{Type: SourceWebhook, Provider: "github"}, ""},
		{"webhook without provider", Source{Type: SourceWebhook}, "source.provider"},
		{"schedule", Source{Type: SourceSchedule, JobName: "nightly"}, ""},
		{"schedule without job", Source{Type: SourceSchedule}, "source.job_name"},
		{"object", Source{Type: SourceObject, Path: "inbox/a.json", Event: "create"}, ""},
		{"object without path", Source{Type: SourceObject, Event: "create"}, "source.path"},
		{"object with a table event", Source{Type: SourceObject, Path: "a", Event: "insert"}, "source.event"},
		{"table", Source{Type: SourceTable, Table: "commitments", Event: "modify"}, ""},
		{"table without table", Source{Type: SourceTable, Event: "insert"}, "source.table"},
		{"table with an object event", Source{Type: SourceTable, Table: "t", Event: "delete"}, "source.event"},
		{"no type", Source{}, "source.type"},
		{"unknown type", Source{Type: "carrier-pigeon"}, "source.type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantInvalidField(t, tc.s.Validate(), tc.field) })
	}
}

func TestNormalizedSignalValidate(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*NormalizedSignal)
		field string
	}{
		{"valid", func(*NormalizedSignal) {}, ""},
		{"valid without raw bytes", func(s *NormalizedSignal) { s.Raw = nil }, ""},
		{"missing id", func(s *NormalizedSignal) { s.ID = "" }, "signal.id"},
		{"bad source", func(s *NormalizedSignal) { s.Source = Source{Type: SourceSchedule} }, "source.job_name"},
		{"missing timestamp", func(s *NormalizedSignal) { s.Timestamp = time.Time{} }, "signal.timestamp"},
		{"missing normalized_at", func(s *NormalizedSignal) { s.NormalizedAt = time.Time{} }, "signal.normalized_at"},
		{"missing dedup key", func(s *NormalizedSignal) { s.DedupKey = "" }, "signal.dedup_key"},
		{"payload not JSON", func(s *NormalizedSignal) { s.Payload = json.RawMessage(`{`) }, "signal.payload"},
		{"missing raw digest", func(s *NormalizedSignal) { s.RawDigest = "" }, "signal.raw_digest"},
		{"raw digest mismatch", func(s *NormalizedSignal) { s.Raw = []byte("tampered") }, "signal.raw_digest"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := validationSignal()
			tc.edit(&s)
			wantInvalidField(t, s.Validate(), tc.field)
		})
	}
}

func TestReasonerDecisionValidate(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*ReasonerDecision)
		field string
	}{
		{"valid", func(*ReasonerDecision) {}, ""},
		{"confidence 0", func(d *ReasonerDecision) { d.Confidence = 0 }, ""},
		{"confidence 1", func(d *ReasonerDecision) { d.Confidence = 1 }, ""},
		{"auditor", func(d *ReasonerDecision) { d.AuthorType = AuthorAuditor }, ""},
		{"actions led by the primary", func(d *ReasonerDecision) {
			d.Actions = []Action{{Type: "comment"}, {Type: "label", Parameters: json.RawMessage(`{"l":"bug"}`)}}
		}, ""},
		{"missing id", func(d *ReasonerDecision) { d.ID = "" }, "decision.id"},
		{"missing signal id", func(d *ReasonerDecision) { d.SignalID = "" }, "decision.signal_id"},
		{"missing action type", func(d *ReasonerDecision) { d.ActionType = "" }, "decision.action_type"},
		{"confidence above 1", func(d *ReasonerDecision) { d.Confidence = 1.0001 }, "decision.confidence"},
		{"confidence below 0", func(d *ReasonerDecision) { d.Confidence = -0.01 }, "decision.confidence"},
		{"confidence NaN", func(d *ReasonerDecision) { d.Confidence = math.NaN() }, "decision.confidence"},
		{"executor author", func(d *ReasonerDecision) { d.AuthorType = AuthorExecutor }, "decision.author_type"},
		{"tier 0", func(d *ReasonerDecision) { d.Tier = 0 }, "decision.tier"},
		{"tier 4", func(d *ReasonerDecision) { d.Tier = 4 }, "decision.tier"},
		{"missing timestamp", func(d *ReasonerDecision) { d.Timestamp = time.Time{} }, "decision.timestamp"},
		{"parameters not JSON", func(d *ReasonerDecision) { d.Parameters = json.RawMessage(`[`) }, "decision.parameters"},
		{"action without type", func(d *ReasonerDecision) { d.Actions = []Action{{Type: "comment"}, {}} }, "decision.actions[1].type"},
		{"action parameters not JSON", func(d *ReasonerDecision) {
			d.Actions = []Action{{Type: "comment", Parameters: json.RawMessage(`x`)}}
		}, "decision.actions[0].parameters"},
		{"first action not the primary", func(d *ReasonerDecision) { d.Actions = []Action{{Type: "label"}} }, "decision.actions[0].type"},
		{"empty scope", func(d *ReasonerDecision) { d.Scope = Scope{} }, "decision.scope.allowed_operations"},
		{"a model's literal Authorization header", func(d *ReasonerDecision) {
			d.Parameters = json.RawMessage(`{"url":"https://api.github.com/x","headers":{"authorization":"Bearer ghp_x"}}`)
		}, "decision.actions[0].parameters.headers"},
		{"a literal X-Api-Key in a later action", func(d *ReasonerDecision) {
			d.Actions = []Action{{Type: d.ActionType}, {Type: "http.request", Parameters: json.RawMessage(`{"headers":{"X-Api-Key":"k"}}`)}}
		}, "decision.actions[1].parameters.headers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := validationDecision()
			tc.edit(&d)
			wantInvalidField(t, d.Validate(), tc.field)
		})
	}
}

func TestValidatorResultValidate(t *testing.T) {
	cases := []struct {
		name  string
		r     ValidatorResult
		field string
	}{
		{"pass", ValidatorResult{Validator: ValidatorTechnical, Verdict: Pass, Summary: "ok"}, ""},
		{"witness fail", ValidatorResult{Validator: ValidatorWitness, Verdict: Fail, Summary: "mismatch"}, ""},
		{"unknown validator", ValidatorResult{Validator: "vibes", Verdict: Pass, Summary: "ok"}, "validator"},
		{"lowercase verdict", ValidatorResult{Validator: ValidatorSafety, Verdict: "pass", Summary: "ok"}, "verdict"},
		{"missing summary", ValidatorResult{Validator: ValidatorIntent, Verdict: Pass}, "summary"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantInvalidField(t, tc.r.Validate(), tc.field) })
	}
}

func TestEntryValidate(t *testing.T) {
	mk := func(kind EntryKind, v any) Entry {
		t.Helper()
		e, err := NewEntry("sig-1", kind, "", v)
		if err != nil {
			t.Fatalf("NewEntry: %v", err)
		}
		return e
	}
	badDecision := validationDecision()
	badDecision.Confidence = 2
	otherSignal := validationSignal()
	otherSignal.ID = "sig-2"
	cases := []struct {
		name  string
		e     Entry
		field string
	}{
		{"fact", mk(KindObservedFact, map[string]int{"n": 1}), ""},
		{"signal", mk(KindSignalReceived, validationSignal()), ""},
		{"decision", mk(KindReasonerDecision, validationDecision()), ""},
		{"validator result", mk(KindValidatorResult, ValidatorResult{Validator: ValidatorTechnical, Verdict: Pass, Summary: "ok"}), ""},
		{"missing signal id", func() Entry { e := mk(KindObservedFact, 1); e.SignalID = ""; return e }(), "signal_id"},
		{"missing kind", func() Entry { e := mk(KindObservedFact, 1); e.Kind = ""; return e }(), "kind"},
		{"unknown kind", mk("gossip", 1), "kind"},
		{"body not JSON", func() Entry { e := mk(KindObservedFact, 1); e.Body = []byte("{"); e.Digest = ""; return e }(), "body"},
		{"digest mismatch", func() Entry { e := mk(KindObservedFact, 1); e.Digest = Digest([]byte("2")); return e }(), "digest"},
		{"missing created_at", func() Entry { e := mk(KindObservedFact, 1); e.CreatedAt = time.Time{}; return e }(), "created_at"},
		{"signal body for another signal", mk(KindSignalReceived, otherSignal), "signal.id"},
		{"signal body not a signal", mk(KindSignalReceived, []int{1}), "body"},
		{"invalid signal body", mk(KindSignalReceived, NormalizedSignal{ID: "sig-1"}), "source.type"},
		{"decision confidence outside 0..1", mk(KindReasonerDecision, badDecision), "decision.confidence"},
		{"decision for another signal", func() Entry {
			d := validationDecision()
			d.SignalID = "sig-2"
			return mk(KindReasonerDecision, d)
		}(), "decision.signal_id"},
		{"witness result without verdict", mk(KindWitnessResult, ValidatorResult{Validator: ValidatorWitness, Summary: "x"}), "verdict"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantInvalidField(t, tc.e.Validate(), tc.field) })
	}
}

func TestNewEntry(t *testing.T) {
	e, err := NewEntry("sig-1", KindObservedFact, "job-1", map[string]string{"a": "b"})
	if err != nil {
		t.Fatalf("NewEntry: %v", err)
	}
	if string(e.Body) != `{"a":"b"}` || e.Digest != Digest(e.Body) || e.CreatedAt.IsZero() || e.Qualifier != "job-1" {
		t.Errorf("NewEntry got %+v", e)
	}
	_, err = NewEntry("sig-1", KindObservedFact, "", math.Inf(1))
	wantInvalidField(t, err, "body")
}

func TestEntryKindRank(t *testing.T) {
	for i, k := range EntryKinds {
		if got := k.Rank(); got != i {
			t.Errorf("%s.Rank() got %d, want %d", k, got, i)
		}
	}
	if got := EntryKind("gossip").Rank(); got != -1 {
		t.Errorf("unknown kind rank got %d, want -1", got)
	}
	if got, want := len(EntryKinds), 20; got != want {
		t.Errorf("EntryKinds has %d kinds, want %d", got, want)
	}
}

func TestBandOf(t *testing.T) {
	cases := []struct {
		confidence float64
		want       ConfidenceBand
	}{
		{1, BandHigh}, {0.81, BandHigh}, {0.8, BandMedium}, {0.5, BandMedium}, {0.4999, BandLow}, {0, BandLow},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.confidence), func(t *testing.T) {
			if got := BandOf(tc.confidence); got != tc.want {
				t.Errorf("BandOf(%v) got %q, want %q", tc.confidence, got, tc.want)
			}
		})
	}
}

func TestCanTransition(t *testing.T) {
	all := []DecisionStatus{StatusDecided, StatusAwaitingApproval, StatusApproved, StatusRejected, StatusExecuting, StatusExecuted, StatusFailed, StatusUnknown}
	allowed := map[[2]DecisionStatus]bool{
		{StatusDecided, StatusExecuting}:         true,
		{StatusDecided, StatusAwaitingApproval}:  true,
		{StatusAwaitingApproval, StatusApproved}: true,
		{StatusAwaitingApproval, StatusRejected}: true,
		{StatusApproved, StatusExecuting}:        true,
		{StatusExecuting, StatusExecuted}:        true,
		{StatusExecuting, StatusFailed}:          true,
		{StatusExecuting, StatusUnknown}:         true,
		{StatusUnknown, StatusExecuted}:          true,
		{StatusUnknown, StatusExecuting}:         true,
	}
	for _, from := range all {
		for _, to := range all {
			if got, want := CanTransition(from, to), allowed[[2]DecisionStatus{from, to}]; got != want {
				t.Errorf("CanTransition(%s, %s) got %v, want %v", from, to, got, want)
			}
		}
	}
	for _, s := range []DecisionStatus{StatusRejected, StatusExecuted, StatusFailed} {
		if !s.Terminal() {
			t.Errorf("%s.Terminal() got false, want true", s)
		}
	}
	if StatusExecuting.Terminal() {
		t.Errorf("executing.Terminal() got true, want false")
	}
}

func TestReasoningEnvelopeValidate(t *testing.T) {
	valid := ReasoningEnvelope{EnvelopeID: "env-1", Timestamp: validationTime, ProgramID: ProgramSafeOPSDecision, Goal: "decide"}
	cases := []struct {
		name  string
		edit  func(*ReasoningEnvelope)
		field string
	}{
		{"valid", func(*ReasoningEnvelope) {}, ""},
		{"missing id", func(e *ReasoningEnvelope) { e.EnvelopeID = "" }, "envelope_id"},
		{"missing timestamp", func(e *ReasoningEnvelope) { e.Timestamp = time.Time{} }, "timestamp"},
		{"unknown program", func(e *ReasoningEnvelope) { e.ProgramID = "Astrology" }, "program_id"},
		{"missing goal", func(e *ReasoningEnvelope) { e.Goal = "" }, "goal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := valid
			tc.edit(&e)
			wantInvalidField(t, e.Validate(), tc.field)
		})
	}
}

func TestErrorHelpers(t *testing.T) {
	stored := Entry{SignalID: "sig-1", Kind: KindObservedFact}
	conflict := fmt.Errorf("ledger: append: %w", Conflict(stored, "exists"))
	if got := ErrorCode(conflict); got != ECONFLICT {
		t.Errorf("ErrorCode got %q, want %q", got, ECONFLICT)
	}
	if got, ok := Existing[Entry](conflict); !ok || got.SignalID != "sig-1" {
		t.Errorf("Existing[Entry] got %+v, %v", got, ok)
	}
	if _, ok := Existing[DecisionState](conflict); ok {
		t.Errorf("Existing[DecisionState] of an entry conflict got ok")
	}
	if got, ok := Existing[Entry](fmt.Errorf("x: %w", Conflict(&stored, "exists"))); !ok || got.Kind != KindObservedFact {
		t.Errorf("Existing[Entry] of a pointer got %+v, %v", got, ok)
	}
	if _, ok := Existing[Entry](Invalid("f", "bad")); ok {
		t.Errorf("Existing of an EINVALID error got ok")
	}
	if got := ErrorCode(nil); got != "" {
		t.Errorf("ErrorCode(nil) got %q, want \"\"", got)
	}
	cause := errors.New("throttled")
	tr := fmt.Errorf("ledger: %w", Transient(cause, "retry"))
	if ErrorCode(tr) != ETRANSIENT || !errors.Is(tr, cause) {
		t.Errorf("Transient: code %q, wraps cause %v", ErrorCode(tr), errors.Is(tr, cause))
	}
	cases := []struct {
		name      string
		err       error
		code, msg string
	}{
		{"plain error", errors.New("disk on fire"), EINTERNAL, "internal error"},
		{"invalid", fmt.Errorf("x: %w", Invalid("decision.tier", "%d is outside 1..3", 4)), EINVALID, "decision.tier: 4 is outside 1..3"},
		{"not found", Errorf(ENOTFOUND, "signal %q", "s"), ENOTFOUND, `signal "s"`},
		{"internal kept private", Errorf(EINTERNAL, "secret path /etc"), EINTERNAL, "internal error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ErrorCode(tc.err); got != tc.code {
				t.Errorf("ErrorCode got %q, want %q", got, tc.code)
			}
			if got := ErrorMessage(tc.err); got != tc.msg {
				t.Errorf("ErrorMessage got %q, want %q", got, tc.msg)
			}
		})
	}
}

func TestEntryPrepared(t *testing.T) {
	now := time.Date(2026, 11, 22, 5, 0, 0, 0, time.FixedZone("x", 3600))
	e, err := Entry{SignalID: "s", Kind: KindFinalVerdict, Body: json.RawMessage(`{"ok":true}`), Meta: map[string]string{}}.Prepared(now)
	if err != nil {
		t.Fatal(err)
	}
	if e.Digest != Digest([]byte(`{"ok":true}`)) || !e.CreatedAt.Equal(now) || e.CreatedAt.Location() != time.UTC || e.Meta != nil {
		t.Errorf("prepared: %+v", e)
	}
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := (Entry{SignalID: "s", Kind: KindFinalVerdict, Body: json.RawMessage(`{}`), ExpiresAt: &far}).Prepared(now); ErrorField(err) != "expires_at" {
		t.Errorf("year 10000: got %v, want expires_at invalid", err)
	}
}

func TestCommitmentOpened(t *testing.T) {
	now := time.Now()
	c, err := Commitment{ID: "c1", Title: "follow up", Status: "", Version: 7}.Opened(now)
	if err != nil || c.Status != CommitmentOpen || c.Version != 1 || c.OpenedAt.IsZero() {
		t.Errorf("opened: %+v, %v", c, err)
	}
	for field, c := range map[string]Commitment{
		"id":     {Title: "t"},
		"title":  {ID: "c"},
		"status": {ID: "c", Title: "t", Status: CommitmentClosed},
		"body":   {ID: "c", Title: "t", Body: json.RawMessage(`{`)},
	} {
		if _, err := c.Opened(now); ErrorField(err) != field {
			t.Errorf("%s: got %v, want EINVALID on %s", field, err, field)
		}
	}
}
