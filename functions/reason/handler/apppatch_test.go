package handler

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	defaultrules "github.com/ora-runtime/ora/rules"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/rules"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// The Reason task's app_patch, as the state machine hands it over (null on
// a wave never resumed with one): an input patch replaces the signal's
// field before the reasoner reads it and is recorded on the decision; a
// patch of another kind is not Reason's; a patch whose field the signal
// lacks fails the task as invalid input.
func TestReasonAppliesAnInputPatch(t *testing.T) {
	set, err := rules.Parse(defaultrules.Default)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		patch     string // the task input's app_patch
		wantBand  string
		wantPatch bool
		errType   string // the taskerr type a failing task returns
	}{
		{name: "never resumed", patch: `null`, wantBand: "low"},
		{name: "an input patch", patch: `{"kind":"input","target":"confidence","value":"high","digest":"3f2a"}`, wantBand: "high", wantPatch: true},
		{name: "a mapping patch", patch: `{"kind":"mapping","target":"test","value":{"confidence":"$.c"},"digest":"9b1c"}`, wantBand: "low"},
		{name: "an input patch of a field the signal lacks", patch: `{"kind":"input","target":"severity","value":"high","digest":"77aa"}`, errType: "InvalidInput"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openLedger(t)
			var seen string
			h := Handler{Ledger: db, Reasoner: reasonerFunc(func(ctx context.Context, in ora.ReasonerInput) (ora.ReasonerDecision, error) {
				seen = string(in.Signal.Payload)
				return rules.New(set).Reason(ctx, in)
			})}
			oriented(t, db, "sig-p", `{"confidence":"low"}`)
			got, err := invoke(t, h, `{"signal_id":"sig-p","app_patch":`+tt.patch+`}`)
			if tt.errType != "" {
				if err == nil || !strings.Contains(err.Error(), "severity") {
					t.Fatalf("got %+v, %v; want %s naming the field", got, err, tt.errType)
				}
				var invalid *taskerr.InvalidInput
				if _, terr := h.Handle(context.Background(), Input{SignalID: "sig-p", AppPatch: &ora.AppPatch{Kind: "input", Target: "severity", Value: json.RawMessage(`"x"`)}}); !errors.As(terr, &invalid) {
					t.Errorf("error %T %v, want a %s", terr, terr, tt.errType)
				}
				if n := len(decisions(t, db, "sig-p")); n != 0 {
					t.Errorf("%d decisions recorded, want none", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Band != tt.wantBand {
				t.Errorf("band %s, want %s (the reasoner read %s)", got.Band, tt.wantBand, seen)
			}
			var d ora.ReasonerDecision
			if err := json.Unmarshal(decisions(t, db, "sig-p")[0].Body, &d); err != nil {
				t.Fatal(err)
			}
			if (d.AppPatch != nil) != tt.wantPatch || (tt.wantPatch && d.AppPatch.Digest != "3f2a") {
				t.Errorf("the decision records patch %+v, want one: %v", d.AppPatch, tt.wantPatch)
			}
		})
	}
}
