package e2e

import (
	"bufio"
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// scrape reads GET /metrics (Prometheus text) into series -> value.
func (tg target) scrape(t *testing.T) map[string]float64 {
	t.Helper()
	r := tg.do(t, http.MethodGet, "/metrics", nil, nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", r.status, r.body)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("GET /metrics: bad line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

// metricsMove sends a wave and checks the counters of /metrics moved: waves
// started and ended, a decision, the stage latencies.
func metricsMove(t *testing.T, tg target) {
	before := tg.scrape(t)
	r := tg.send(t, unique("metrics"), map[string]any{"confidence": "high"})
	var rec receipt
	r.decode(t, &rec)
	if w := tg.waitWave(t, rec.WaveID, stopped); w.Status != "SUCCEEDED" {
		t.Fatalf("wave %+v, want SUCCEEDED", w)
	}
	after := tg.scrape(t)
	for _, series := range []string{
		"ora_waves_started_total",
		`ora_waves_total{outcome="completed"}`,
		`ora_decisions_total{author_type="rules",band="high"}`,
		`ora_stage_duration_seconds_count{outcome="ok",stage="reason"}`,
		`ora_validator_verdicts_total{validator="witness",verdict="PASS"}`,
	} {
		if after[series] < before[series]+1 {
			t.Errorf("%s: %v before the wave, %v after; want it to grow by at least 1", series, before[series], after[series])
		}
	}
}
