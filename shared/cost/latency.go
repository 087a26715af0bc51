package cost

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"time"
)

//go:embed latencies.json
var latenciesJSON []byte

// Latencies are per-call p50 latencies in milliseconds (latencies.json), each
// with its source.
type Latencies struct {
	Read               string            `json:"read"`
	Note               string            `json:"note"`
	APIGateway         float64           `json:"api_gateway_http_ms"`
	LambdaInvoke       float64           `json:"lambda_invoke_ms"`
	DynamoDBCall       float64           `json:"dynamodb_call_ms"`
	StandardTransition float64           `json:"standard_transition_ms"`
	ExpressSyncChild   float64           `json:"express_sync_child_ms"`
	S3Put              float64           `json:"s3_put_ms"`
	S3Get              float64           `json:"s3_get_ms"`
	DistributedMapRun  float64           `json:"distributed_map_run_ms"`
	Sources            map[string]Source `json:"sources"`
}

// LatencyTarget is the p50 a wave should stay under, the model's time
// excluded.
const LatencyTarget = 1500 * time.Millisecond

// LatencyTable returns the checked-in latency table. Errors: a figure that
// is not positive, or has no source.
func LatencyTable() (Latencies, error) {
	var l Latencies
	if err := json.Unmarshal(latenciesJSON, &l); err != nil {
		return Latencies{}, fmt.Errorf("cost: latencies.json: %w", err)
	}
	var all map[string]json.RawMessage
	_ = json.Unmarshal(latenciesJSON, &all)
	for key, raw := range all {
		if key == "read" || key == "note" || key == "sources" {
			continue
		}
		var ms float64
		if json.Unmarshal(raw, &ms) != nil || ms <= 0 {
			return Latencies{}, fmt.Errorf("cost: latencies.json: %s is not a positive number of milliseconds", key)
		}
		if src := l.Sources[key]; src.URL == "" || src.Read == "" || src.Says == "" {
			return Latencies{}, fmt.Errorf("cost: latencies.json: %s has no source (url, date read, what it says)", key)
		}
	}
	if l.Read == "" {
		return Latencies{}, fmt.Errorf("cost: latencies.json has no date")
	}
	return l, nil
}

// P50 estimates a wave's p50 latency, webhook to verdict with the model's
// time excluded, from u's calls per wave: each call at its p50, one after
// the other. Calls that run at once (the validators, a fan-out's jobs) are
// counted in full, so the estimate errs high.
func (l Latencies) P50(u Usage) (time.Duration, error) {
	if u.Waves < 1 {
		return 0, fmt.Errorf("cost: no waves measured")
	}
	ms := float64(u.APIRequests)*l.APIGateway +
		float64(u.LambdaInvocations)*l.LambdaInvoke +
		float64(u.DynamoDBCalls)*l.DynamoDBCall +
		float64(u.Transitions)*l.StandardTransition +
		float64(u.ExpressRequests)*l.ExpressSyncChild +
		float64(u.S3Puts)*l.S3Put + float64(u.S3Gets)*l.S3Get +
		float64(u.MapRuns)*l.DistributedMapRun
	return time.Duration(ms / float64(u.Waves) * float64(time.Millisecond)), nil
}

// LatencyLine is make cost's latency line.
func LatencyLine(busy, light time.Duration) string {
	return fmt.Sprintf("latency: p50 busy %.2f s, light %.2f s per wave, model excluded (target %.1f s; shared/cost/latencies.json)",
		busy.Seconds(), light.Seconds(), LatencyTarget.Seconds())
}
