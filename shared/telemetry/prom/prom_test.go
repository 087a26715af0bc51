package prom_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/telemetry"
	"github.com/ora-runtime/ora/shared/telemetry/prom"
)

func TestExposition(t *testing.T) {
	r := prom.New()
	r.Add(telemetry.Waves, 1, "outcome", "completed")
	r.Add(telemetry.Waves, 2, "outcome", "completed")
	r.Add(telemetry.Waves, 1, "outcome", "rejected")
	r.Add(telemetry.Waves, -5, "outcome", "rejected")     // dropped: counters only go up
	r.Add(telemetry.Waves, 1, "wave_id", "w-1")           // dropped: not its label
	r.Add("ora_unknown_total", 1)                         // dropped: not catalogued
	r.Observe(telemetry.Waves, 1, "outcome", "completed") // dropped: wrong kind
	r.Observe(telemetry.StageDuration, 0.02, "stage", "plan", "outcome", "ok")
	r.Observe(telemetry.StageDuration, 3, "outcome", "ok", "stage", "plan")
	r.GaugeFunc(telemetry.EscalationsPending, func() float64 { return 4 })

	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}
	body := rec.Body.String()
	for _, want := range []string{
		"# TYPE ora_waves_total counter\n",
		`ora_waves_total{outcome="completed"} 3` + "\n",
		`ora_waves_total{outcome="rejected"} 1` + "\n",
		"# TYPE ora_stage_duration_seconds histogram\n",
		`ora_stage_duration_seconds_bucket{outcome="ok",stage="plan",le="0.01"} 0` + "\n",
		`ora_stage_duration_seconds_bucket{outcome="ok",stage="plan",le="0.025"} 1` + "\n",
		`ora_stage_duration_seconds_bucket{outcome="ok",stage="plan",le="5"} 2` + "\n",
		`ora_stage_duration_seconds_bucket{outcome="ok",stage="plan",le="+Inf"} 2` + "\n",
		`ora_stage_duration_seconds_sum{outcome="ok",stage="plan"} 3.02` + "\n",
		`ora_stage_duration_seconds_count{outcome="ok",stage="plan"} 2` + "\n",
		"ora_escalations_pending 4\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %q in\n%s", want, body)
		}
	}
	for _, bad := range []string{"wave_id", "ora_unknown_total"} {
		if strings.Contains(body, bad) {
			t.Errorf("%s exposed:\n%s", bad, body)
		}
	}
	if got := r.Value(telemetry.Waves); got != 4 {
		t.Errorf("Value(waves) = %v, want 4", got)
	}
	if got := r.Value(telemetry.Waves, "outcome", "rejected"); got != 1 {
		t.Errorf("Value(waves, rejected) = %v, want 1", got)
	}
	if got := r.Value(telemetry.EscalationsPending); got != 4 {
		t.Errorf("Value(pending) = %v, want 4", got)
	}
}
