package embedded

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// A wave that fails at Plan observations or Compile orientation packet with
// InvalidInput naming a field of its payload pauses
// (APP-SPEC), is resumed with an input patch correcting the field, and
// completes under the same motor version, through ora dev's engine and the
// real definition, on SQLite and DynamoDB Local: the stages run again, the
// patch stays in the wave's state, Compile runs under it (the definition
// hands it over in $app_patch) and the packet records it, Reason decides on
// the patched field, the packet verifies, and the signal entry is as it was
// received.
func TestInputPatchAtCompile(t *testing.T) {
	for _, tc := range []struct{ store, stage string }{
		{"sqlite", "Plan observations"}, {"sqlite", "Compile orientation packet"},
		{"dynamodb", "Plan observations"}, {"dynamodb", "Compile orientation packet"},
	} {
		store := tc.store
		t.Run(store+"/"+tc.stage, func(t *testing.T) {
			ctx := context.Background()
			cfg := testConfig(t, t.TempDir())
			if store == "dynamodb" {
				onDynamoDBLocal(t, &cfg, "patch-compile")
			}
			cfg.Faults = []FaultConfig{{State: tc.stage, Error: "InvalidInput", Cause: "field confidence: \"low\" is not what the sender meant", Times: 1}}
			r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			srv := httptest.NewServer(r.Handler())
			defer srv.Close()
			rec := send(t, r, srv.URL, "patch-"+store+"-"+strings.Fields(tc.stage)[0], `{"confidence":"low"}`)
			st := waitOperator(t, r, rec.WaveID, operate.StatePaused)
			if st.Stage != tc.stage || st.Taxonomy != operate.AppSpec {
				t.Fatalf("paused: %+v, want APP-SPEC at %s", st, tc.stage)
			}
			if n := count(t, r, rec.SignalID, ora.KindOrientationPacket); n != 0 {
				t.Fatalf("the failed Compile wrote %d packets", n)
			}
			patch := &operate.AppPatch{Kind: operate.PatchInput, Target: "confidence", Value: json.RawMessage(`"high"`)}
			var res operate.Resumed
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				res, err = r.ops.Resume(ctx, rec.WaveID, operate.ResumeRequest{Patch: patch, By: "tester"})
				if err == nil || time.Now().After(deadline) || !strings.Contains(err.Error(), "pausing") {
					break
				}
			}
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			if res.ResumeAt != tc.stage {
				t.Errorf("resumed at %s, want %s", res.ResumeAt, tc.stage)
			}
			if st := waitOperator(t, r, rec.WaveID, operate.StateSuccess, operate.StateFailed); st.State != operate.StateSuccess {
				t.Fatalf("after the resume: %+v", st)
			}
			checked, _ := patch.Check()
			svc := orient.NewService(r.ledger, r.orientOptions())
			pkt, err := svc.Packet(ctx, rec.SignalID)
			if err != nil {
				t.Fatal(err)
			}
			if got := orient.PatchOf(pkt); got != checked.Digest {
				t.Errorf("the packet records patch %q, want %s", got, checked.Digest)
			}
			v, err := svc.Verify(ctx, rec.SignalID)
			if err != nil || !v.Match {
				t.Errorf("verify: %+v, %v; want a match", v, err)
			}
			entries, err := r.ledger.Entries(ctx, rec.SignalID)
			if err != nil {
				t.Fatal(err)
			}
			var decided, unchanged bool
			for _, e := range entries {
				switch e.Kind {
				case ora.KindReasonerDecision:
					var d ora.ReasonerDecision
					if err := json.Unmarshal(e.Body, &d); err != nil {
						t.Fatal(err)
					}
					decided = d.Band() == ora.BandHigh && d.AppPatch != nil && d.AppPatch.Digest == checked.Digest && d.PacketDigest == pkt.Digest
				case ora.KindSignalReceived:
					unchanged = strings.Contains(string(e.Body), `"low"`)
				}
			}
			if !decided || !unchanged {
				t.Errorf("decided high under the patch on the patched packet: %v; signal entry unchanged: %v", decided, unchanged)
			}
			if n := count(t, r, rec.SignalID, ora.KindExecutionEvidence); n != 1 {
				t.Errorf("execution-evidence: %d, want 1", n)
			}
		})
	}
}
