package motor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

func signal(id, source string) ora.NormalizedSignal {
	now := time.Now().UTC()
	payload := `{"confidence":"high"}`
	return ora.NormalizedSignal{ID: id, Source: ora.Source{Type: ora.SourceWebhook, Name: source, Provider: "hmac"},
		Timestamp: now, NormalizedAt: now, Payload: json.RawMessage(payload), DedupKey: "d-" + id, RawDigest: ora.Digest([]byte(payload))}
}

// TestCanaryRoutes: the share is chosen by the wave id's hash, so the same
// wave always goes the same way, and over many waves the served fraction is
// close to the share; a named source is always served.
func TestCanaryRoutes(t *testing.T) {
	cases := []struct {
		name    string
		c       motor.Canary
		source  string
		wantMin float64
		wantMax float64
	}{
		{"10%", motor.Canary{Share: 0.1}, "demo", 0.08, 0.12},
		{"50%", motor.Canary{Share: 0.5}, "demo", 0.47, 0.53},
		{"a named source, no share", motor.Canary{Sources: []string{"github"}}, "github", 1, 1},
		{"another source, no share", motor.Canary{Sources: []string{"github"}}, "demo", 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const n = 5000
			served := 0
			for i := range n {
				sig := signal(fmt.Sprintf("wave-%d", i), tc.source)
				first := tc.c.Routes(sig)
				if again := tc.c.Routes(sig); again != first {
					t.Fatalf("wave-%d routed %v then %v", i, first, again)
				}
				if first {
					served++
				}
			}
			if got := float64(served) / n; got < tc.wantMin || got > tc.wantMax {
				t.Errorf("served %.3f of the waves, want within [%.2f, %.2f]", got, tc.wantMin, tc.wantMax)
			}
		})
	}
}

// driver runs waves through the motor reasoner with the rules reasoner, as
// the runtime would: signal, packet, decision (decided latency after the
// signal), a technical validator's check, and an escalation when the
// decision's band is low.
type driver struct {
	t      *testing.T
	l      ora.Ledger
	rs     *motor.Reasoner
	served map[string]int
}

func (dr *driver) wave(ctx context.Context, id string) {
	t := dr.t
	t.Helper()
	sig := signal(id, "demo")
	e, _ := ora.NewEntry(id, ora.KindSignalReceived, "", sig)
	if _, err := dr.l.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := orient.NewCompiler(dr.l).Compile(ctx, id); err != nil {
		t.Fatal(err)
	}
	in, err := orient.Input(ctx, dr.l, id)
	if err != nil {
		t.Fatal(err)
	}
	d, err := dr.rs.Reason(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	d.Timestamp = sig.NormalizedAt.Add(20 * time.Millisecond)
	if _, err := dr.l.RecordDecision(ctx, d); err != nil {
		t.Fatal(err)
	}
	dr.served[d.MotorVersion]++
	// The technical validator's check of a notification: it has a subject.
	verdict := ora.Pass
	var p struct {
		Subject string `json:"subject"`
	}
	if d.ActionType == "notify" && (json.Unmarshal(d.Parameters, &p) != nil || p.Subject == "") {
		verdict = ora.Fail
	}
	vr, _ := ora.NewEntry(id, ora.KindValidatorResult, string(ora.ValidatorTechnical), ora.ValidatorResult{Validator: ora.ValidatorTechnical,
		Verdict: verdict, Summary: "a notification has a subject", DecisionID: d.ID, Timestamp: d.Timestamp})
	if _, err := dr.l.Append(ctx, vr); err != nil {
		t.Fatal(err)
	}
	if d.Band() == ora.BandLow {
		ai, _ := ora.NewEntry(id, ora.KindArchitectIntent, d.ID+"/intent", map[string]string{"decision_id": d.ID})
		ai.AuthorType = ora.AuthorArchitect
		if _, err := dr.l.Append(ctx, ai); err != nil {
			t.Fatal(err)
		}
	}
}

// canaryEnd is the event that ended the canary of version.
func canaryEnd(t *testing.T, reg *motor.Registry, version string) motor.Event {
	t.Helper()
	_, events, err := reg.Versions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if ev.Comparison != nil && ev.Version == version {
			return ev
		}
	}
	t.Fatalf("no event ended the canary of %s: %+v", version, events)
	return motor.Event{}
}

// TestCanary: a candidate as good as the active motor is promoted when its
// window ends; one that escalates what the active motor decides is rolled
// back; both record their comparison, over both ledgers.
func TestCanary(t *testing.T) {
	cases := []struct {
		name        string
		candidate   motor.Bundle
		wantType    string
		wantOutcome string
		wantCur     string
		wantPass    float64 // the candidate's pass rate
		says        string
	}{
		{"promoted", bundle("1.0.1", "reasoning: Pushes to the default branch are routine; the team is told.", "reasoning: Pushes to the default branch are routine."),
			"promote", "promote", "1.0.1", 1, "pass rate 100.0% vs 100.0%"},
		{"rolled back: it escalates", bundle("1.0.1", "confidence: 0.95", "confidence: 0.3"),
			motor.EventCanaryRollback, "rollback", base().Version, 0, "pass rate 0.0% vs 100.0% (at least 95.0%)"},
		{"rolled back: a validator fails it", bundle("1.0.1", `subject: "test signal {{ id }}"`, `title: "test signal {{ id }}"`),
			motor.EventCanaryRollback, "rollback", base().Version, 0, "pass rate 0.0% vs 100.0% (at least 95.0%)"},
	}
	for _, st := range acttest.Stores {
		for _, tc := range cases {
			t.Run(st.Name+"/"+tc.name, func(t *testing.T) {
				slug := strings.NewReplacer(" ", "-", ":", "").Replace(tc.name)
				ctx := context.Background()
				l := st.Open(t).Ledger
				reg := motor.NewRegistry(l, base(), nil)
				if _, err := reg.Propose(ctx, tc.candidate); err != nil {
					t.Fatal(err)
				}
				ev, err := reg.Canary(ctx, "1.0.1", motor.CanaryRequest{Share: 0.3, Waves: 6, Reason: "try"}, "olga")
				if err != nil || ev.Type != motor.EventCanary || ev.Canary == nil || ev.Canary.Active != base().Version {
					t.Fatalf("canary: %+v, %v", ev, err)
				}
				if _, err := reg.Canary(ctx, "1.0.1", motor.CanaryRequest{Share: 0.3, Waves: 6}, "olga"); ora.ErrorCode(err) != ora.ECONFLICT {
					t.Errorf("a second canary while one runs: %v, want a conflict", err)
				}
				vs, _, _ := reg.Versions(ctx)
				for _, v := range vs {
					if v.Version == "1.0.1" && v.Status != "canary" {
						t.Errorf("status of the candidate: %s, want canary", v.Status)
					}
				}
				dr := &driver{t: t, l: l, rs: motor.NewReasoner(reg, nil), served: map[string]int{}}
				for i := 0; i < 200 && canaryRunning(t, reg); i++ {
					dr.wave(ctx, fmt.Sprintf("c-%s-%d", slug, i))
				}
				end := canaryEnd(t, reg, "1.0.1")
				cmp := end.Comparison
				if end.Type != tc.wantType || cmp.Outcome != tc.wantOutcome {
					t.Errorf("end: %s (%s), want %s (%s)", end.Type, cmp.Outcome, tc.wantType, tc.wantOutcome)
				}
				if cmp.Candidate.Waves != 6 || cmp.Active.Waves == 0 || cmp.Candidate.Waves+cmp.Active.Waves != dr.served["1.0.1"]+dr.served[base().Version]-1 {
					t.Errorf("arms: %+v / %+v, served %v (the last wave decides after the window)", cmp.Candidate, cmp.Active, dr.served)
				}
				if math.Abs(cmp.Candidate.PassRate-tc.wantPass) > 1e-9 || cmp.Active.PassRate != 1 || cmp.Candidate.LatencyMS != 20 {
					t.Errorf("comparison: %+v", cmp)
				}
				if !strings.Contains(end.Reason, tc.says) {
					t.Errorf("reason %q does not say %q", end.Reason, tc.says)
				}
				if cur, _, _, _ := reg.Current(ctx); cur.Version != tc.wantCur {
					t.Errorf("current: %s, want %s", cur.Version, tc.wantCur)
				}
				// After the canary, every wave goes to the current version.
				before := dr.served[tc.wantCur]
				for i := range 5 {
					dr.wave(ctx, fmt.Sprintf("after-%s-%d", slug, i))
				}
				if dr.served[tc.wantCur] != before+5 {
					t.Errorf("after the canary: %v, want 5 more waves under %s", dr.served, tc.wantCur)
				}
			})
		}
	}
}

func canaryRunning(t *testing.T, reg *motor.Registry) bool {
	t.Helper()
	vs, _, err := reg.Versions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Status == "canary" {
			return true
		}
	}
	return false
}

// TestCanaryRequest: a request names a share or sources and an end; the
// candidate must be proposed and not current; a duration ends a canary
// without waves (settled explicitly here).
func TestCanaryRequest(t *testing.T) {
	neg := -0.1
	cases := []struct {
		name    string
		version string
		req     motor.CanaryRequest
		code    string
		field   string
	}{
		{"no share nor sources", "1.0.1", motor.CanaryRequest{Waves: 5}, ora.EINVALID, "share"},
		{"share above one", "1.0.1", motor.CanaryRequest{Share: 1.5, Waves: 5}, ora.EINVALID, "share"},
		{"no end", "1.0.1", motor.CanaryRequest{Share: 0.1}, ora.EINVALID, "waves"},
		{"bad duration", "1.0.1", motor.CanaryRequest{Share: 0.1, Duration: "soon"}, ora.EINVALID, "duration"},
		{"negative tolerance", "1.0.1", motor.CanaryRequest{Share: 0.1, Waves: 5, PassTolerance: &neg}, ora.EINVALID, "pass_tolerance"},
		{"not proposed", "9.9.9", motor.CanaryRequest{Share: 0.1, Waves: 5}, ora.ENOTFOUND, ""},
		{"the base", base().Version, motor.CanaryRequest{Share: 0.1, Waves: 5}, ora.EINVALID, "version"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			reg := motor.NewRegistry(acttest.DB(t), base(), nil)
			if _, err := reg.Propose(ctx, bundle("1.0.1")); err != nil {
				t.Fatal(err)
			}
			_, err := reg.Canary(ctx, tc.version, tc.req, "t")
			if ora.ErrorCode(err) != tc.code || ora.ErrorField(err) != tc.field {
				t.Errorf("got %v (field %q), want %s naming %q", err, ora.ErrorField(err), tc.code, tc.field)
			}
		})
	}
	t.Run("a duration ends it", func(t *testing.T) {
		ctx := context.Background()
		now := time.Now()
		reg := motor.NewRegistry(acttest.DB(t), base(), nil, func(o *motor.Options) { o.Now = func() time.Time { return now } })
		if _, err := reg.Propose(ctx, bundle("1.0.1")); err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Canary(ctx, "1.0.1", motor.CanaryRequest{Share: 0.1, Duration: "1h"}, "t"); err != nil {
			t.Fatal(err)
		}
		if ev, err := reg.SettleCanary(ctx); ev != nil || err != nil {
			t.Fatalf("settle within the hour: %+v, %v", ev, err)
		}
		now = now.Add(time.Hour)
		ev, err := reg.SettleCanary(ctx)
		if err != nil || ev == nil || ev.Type != motor.EventCanaryRollback || !strings.Contains(ev.Reason, "no wave") {
			t.Fatalf("settle after the hour: %+v, %v; want a rollback: the candidate decided no wave", ev, err)
		}
	})
}
