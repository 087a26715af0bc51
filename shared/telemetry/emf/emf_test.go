package emf_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/telemetry"
	"github.com/ora-runtime/ora/shared/telemetry/emf"
)

func TestEMFLine(t *testing.T) {
	var buf bytes.Buffer
	w := emf.New(&buf)
	w.Observe(telemetry.StageDuration, 0.25, "stage", "reason", "outcome", "ok")
	w.Add(telemetry.Waves, 1, "wave_id", "w-1") // dropped: ids are never dimensions
	w.Add("ora_unknown_total", 1)               // dropped: not catalogued
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1:\n%s", len(lines), buf.String())
	}
	var doc struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		Stage    string  `json:"stage"`
		Outcome  string  `json:"outcome"`
		Duration float64 `json:"ora_stage_duration_seconds"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &doc); err != nil {
		t.Fatal(err)
	}
	cw := doc.AWS.CloudWatchMetrics
	if doc.AWS.Timestamp == 0 || len(cw) != 1 || cw[0].Namespace != "Ora" {
		t.Fatalf("bad _aws: %s", lines[0])
	}
	if got := cw[0].Dimensions; len(got) != 1 || strings.Join(got[0], ",") != "stage,outcome" {
		t.Errorf("dimensions %v", got)
	}
	if m := cw[0].Metrics; len(m) != 1 || m[0].Name != telemetry.StageDuration || m[0].Unit != "Seconds" {
		t.Errorf("metrics %v", m)
	}
	if doc.Stage != "reason" || doc.Outcome != "ok" || doc.Duration != 0.25 {
		t.Errorf("values %+v", doc)
	}
}

// A registered value in a dimension (a label should never hold one) is
// written as its marker; the line stays one JSON object.
func TestEMFRedactsDimensions(t *testing.T) {
	var buf bytes.Buffer
	secrets := ora.NewSecrets()
	secrets.Add("connection:github", "ghp_emf-canary-012345")
	w := emf.New(&buf, func(o *emf.Options) { o.Secrets = secrets })
	w.Add(telemetry.StageFailures, 1, "stage", "act", "error_code", "ghp_emf-canary-012345")
	line := buf.String()
	if strings.Contains(line, "ghp_emf-canary-012345") || !strings.Contains(line, ora.Marker("connection:github")) {
		t.Errorf("line %s: want the dimension's value redacted", line)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(line), &doc); err != nil {
		t.Errorf("not one JSON object: %v", err)
	}
}
