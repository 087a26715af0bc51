package operate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
)

// redriver is a Redriver answering err, counting its calls.
type redriver struct {
	err   error
	calls []string
}

func (r *redriver) Redrive(_ context.Context, waveID string) error {
	r.calls = append(r.calls, waveID)
	return r.err
}

func TestRedrive(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	failed := operate.Verdict{Outcome: "failed", Error: "ScopeViolation", Reason: "action 0 is out of scope", At: now}
	tests := []struct {
		name      string
		wave      string
		verdict   *operate.Verdict
		engineErr error
		times     int // redrives asked
		wantCode  string
		wantMsg   string
		wantCalls int
	}{
		{name: "a stopped wave is redriven and recorded", wave: "s1", times: 1, wantCalls: 1},
		{name: "each redrive is numbered", wave: "s1", times: 2, wantCalls: 2},
		{name: "an unknown wave", wave: "nope", times: 1, wantCode: ora.ENOTFOUND, wantMsg: `no wave "nope"`},
		{name: "a wave with a failed verdict", wave: "s1", verdict: &failed, times: 1, wantCode: ora.ECONFLICT,
			wantMsg: "already has its final verdict (failed: ScopeViolation: action 0 is out of scope)"},
		{name: "the engine refuses a running wave", wave: "s1", engineErr: ora.Conflict(nil, "wave s1 is RUNNING"), times: 1,
			wantCode: ora.ECONFLICT, wantMsg: "wave s1 is RUNNING", wantCalls: 1},
		{name: "the execution limit", wave: "s1", engineErr: ora.Transient(nil, "too many running executions"), times: 1,
			wantCode: ora.ETRANSIENT, wantMsg: "too many running executions", wantCalls: 1},
		{name: "a wave id is required", wave: "", times: 1, wantCode: ora.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db := acttest.DB(t)
			acttest.Record(t, db, acttest.Decision("d1", "s1", ora.Scope{AllowedOperations: []string{"notify"}}, ora.Action{Type: "notify"}))
			if tt.verdict != nil {
				e, err := ora.NewEntry("s1", ora.KindFinalVerdict, "", tt.verdict)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := db.Append(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			rd := &redriver{err: tt.engineErr}
			svc := operate.New(db, func(o *operate.Options) { o.Redriver = rd; o.Now = func() time.Time { return now } })
			var got operate.Redriven
			var err error
			for range tt.times {
				got, err = svc.Redrive(ctx, tt.wave, "olga")
			}
			if ora.ErrorCode(err) != tt.wantCode && !(tt.wantCode == "" && err == nil) {
				t.Fatalf("got %v, want code %q", err, tt.wantCode)
			}
			if tt.wantMsg != "" && !strings.Contains(ora.ErrorMessage(err), tt.wantMsg) {
				t.Errorf("message %q, want it to contain %q", ora.ErrorMessage(err), tt.wantMsg)
			}
			if len(rd.calls) != tt.wantCalls {
				t.Errorf("engine redrives: %v, want %d", rd.calls, tt.wantCalls)
			}
			if tt.wantCode != "" {
				return
			}
			if got.WaveID != "s1" || got.Redrive != tt.times || got.By != "olga" || !got.RedrivenAt.Equal(now) {
				t.Errorf("got %+v, want redrive %d of s1 by olga at %s", got, tt.times, now)
			}
			entries, _ := db.Entries(ctx, "s1")
			var recorded []string
			for _, e := range entries {
				if e.Kind == ora.KindOperatorDecision && strings.HasPrefix(e.Qualifier, "redrive/") {
					recorded = append(recorded, e.Qualifier)
				}
			}
			if len(recorded) != tt.times {
				t.Errorf("redrive entries %v, want %d", recorded, tt.times)
			}
		})
	}
}

func TestRedriveNeedsARedriver(t *testing.T) {
	_, err := operate.New(acttest.DB(t)).Redrive(context.Background(), "s1", "olga")
	if ora.ErrorCode(err) != ora.EINTERNAL {
		t.Errorf("got %v, want an internal error", err)
	}
}
