package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// operatorWave is GET /waves/{id} with the operator's view and the history.
type operatorWave struct {
	Status   string `json:"status"`
	Operator struct {
		State          string `json:"state"`
		IncidentID     string `json:"incident_id"`
		Classification string `json:"classification"`
		Taxonomy       string `json:"taxonomy"`
		Stage          string `json:"stage"`
	} `json:"operator"`
	History []struct {
		Type    string `json:"type"`
		Entered *struct {
			Name string `json:"name"`
		} `json:"stateEnteredEventDetails"`
	} `json:"history"`
}

func (tg target) operatorWave(t *testing.T, id string, want string) operatorWave {
	t.Helper()
	var w operatorWave
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		r := tg.do(t, http.MethodGet, "/waves/"+id, tg.authed(), nil)
		if r.status == http.StatusOK {
			r.decode(t, &w)
			if w.Operator.State == want {
				return w
			}
		}
	}
	t.Fatalf("wave %s: operator state %q (status %s), want %q", id, w.Operator.State, w.Status, want)
	return w
}

// runOperatorSuite: a fault injected once at a stage pauses the wave with a
// classified incident; POST /waves/{id}/resume completes it from that stage;
// the action ran exactly once and the stages before it ran once. start starts
// an `ora dev` with extra config.
func runOperatorSuite(t *testing.T, start func(t *testing.T, extra string) target) {
	// parent is the wave's (Standard) state that runs the stage: the history
	// the API shows is the parent's, as on AWS; which stages ran inside an
	// Express child is checked by shared/embedded's operator test.
	cases := []struct{ state, stage, parent, err string }{
		{"Act", "Act", "Act and validate", "InternalError"},
		{"Reason", "Reason", "Orient and reason", "InternalError"},
		// A Distributed Map whose failed children pass the tolerated share
		// fails with States.ExceedToleratedFailureThreshold, as on AWS.
		// The default profile's four jobs run inline in the Orient and
		// reason child; its resume at Fetch observations runs the parent's
		// Distributed Map, then the child again.
		{"Fetch", "Fetch observations", "Orient and reason", "States.ExceedToleratedFailureThreshold"},
		{"Technical validator", "Validate", "Act and validate", "InternalError"}, // after the action ran
	}
	for _, tc := range cases {
		t.Run("fault once at "+tc.state+" pauses and resumes", func(t *testing.T) {
			tg := start(t, fmt.Sprintf("faults:\n  - {state: %q, error: InternalError, cause: \"e2e drill\", times: 1}\n", tc.state))
			r := tg.send(t, unique("fault"), map[string]any{"confidence": "high"})
			if r.status != http.StatusAccepted {
				t.Fatalf("webhook: %d %s", r.status, r.body)
			}
			var rec receipt
			r.decode(t, &rec)
			w := tg.operatorWave(t, rec.WaveID, "PAUSED")
			if w.Status != "RUNNING" || w.Operator.Stage != tc.stage || w.Operator.IncidentID == "" || w.Operator.Classification == "" {
				t.Fatalf("paused wave: %+v", w.Operator)
			}
			ir := tg.do(t, http.MethodGet, "/incidents/"+w.Operator.IncidentID, tg.authed(), nil)
			var inc struct {
				Status      string `json:"status"`
				Fingerprint struct {
					Taxonomy, Stage, Error string
				} `json:"fingerprint"`
				Occurrences []json.RawMessage `json:"occurrences"`
			}
			ir.decode(t, &inc)
			if ir.status != http.StatusOK || inc.Status != "open" || inc.Fingerprint.Stage != tc.stage || inc.Fingerprint.Error != tc.err || len(inc.Occurrences) != 1 {
				t.Fatalf("incident: %d %s", ir.status, ir.body)
			}
			if r := tg.do(t, http.MethodPost, "/waves/"+rec.WaveID+"/resume", nil, []byte(`{}`)); r.status != http.StatusUnauthorized {
				t.Errorf("resume without a token: %d, want 401", r.status)
			}
			var res response
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				res = tg.do(t, http.MethodPost, "/waves/"+rec.WaveID+"/resume", tg.authed(), []byte(`{"as_is":true,"reason":"the drill's fault fired once"}`))
				if res.status != http.StatusConflict || !strings.Contains(string(res.body), "pausing") {
					break
				}
			}
			if res.status != http.StatusOK || !strings.Contains(string(res.body), `"resume_at":"`+tc.stage+`"`) {
				t.Fatalf("resume: %d %s", res.status, res.body)
			}
			w = tg.operatorWave(t, rec.WaveID, "SUCCESS")
			if w.Status != "SUCCEEDED" {
				t.Fatalf("after resume: %s", w.Status)
			}
			if got := kinds(tg.entries(t, rec.SignalID)); got["execution-evidence"] != 1 || got["final-verdict"] != 1 {
				t.Errorf("the action must run exactly once: kinds %v", got)
			}
			entered := map[string]int{}
			for _, ev := range w.History {
				if ev.Entered != nil {
					entered[ev.Entered.Name]++
				}
			}
			for _, stage := range []string{"Plan observations", "Fetch inline?", "Fetch observations", "Orient and reason", "Act and validate"} {
				want := 1
				switch {
				case stage == tc.parent:
					want = 2
				case stage == "Fetch observations" && tc.state != "Fetch":
					want = 0 // a small fan-out runs inline
				}
				if entered[stage] != want {
					t.Errorf("%s entered %d times, want %d", stage, entered[stage], want)
				}
			}
			lr := tg.do(t, http.MethodGet, "/incidents", tg.authed(), nil)
			var list struct {
				Summary struct {
					Resumed        int     `json:"resumed"`
					ResumptionRate float64 `json:"resumption_rate"`
				} `json:"summary"`
			}
			lr.decode(t, &list)
			if list.Summary.Resumed != 1 || list.Summary.ResumptionRate != 1 {
				t.Errorf("GET /incidents: %s", lr.body)
			}
		})
	}
}
