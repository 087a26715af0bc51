package console

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/telemetry"
)

// event is the part of a Step Functions history event the console reads.
type event struct {
	Type      string    `json:"type"`
	ID        int64     `json:"id"`
	Timestamp time.Time `json:"timestamp"`
	Entered   *struct {
		Name  string `json:"name"`
		Input string `json:"input"`
	} `json:"stateEnteredEventDetails"`
	Exited *struct {
		Name   string `json:"name"`
		Output string `json:"output"`
	} `json:"stateExitedEventDetails"`
	TaskSucceeded *struct {
		Output string `json:"output"`
	} `json:"taskSucceededEventDetails"`
}

// failure finds an error and cause in any *EventDetails of a raw event.
func failure(raw json.RawMessage) (string, string) {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	for k, v := range m {
		if !strings.HasSuffix(k, "EventDetails") {
			continue
		}
		var d struct{ Error, Cause string }
		if json.Unmarshal(v, &d) == nil && d.Error != "" {
			return d.Error, d.Cause
		}
	}
	return "", ""
}

// StateRun is what happened to one state in a wave.
type StateRun struct {
	Name          string
	Status        string // succeeded, running, failed, caught
	Entered       time.Time
	Exited        time.Time
	Runs          int // how many times it was entered (Map iterations, retries of a loop)
	Input, Output string
	Error, Cause  string
	// Execution is the ARN of the child execution the state ran
	// (states:startExecution.sync), read from its task's output.
	Execution string
}

// Timing renders the state's duration.
func (s StateRun) Timing() string {
	if s.Exited.IsZero() || s.Entered.IsZero() {
		return ""
	}
	return duration(s.Exited.Sub(s.Entered))
}

func duration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return "<1 ms"
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// EventRow is one line of the event history.
type EventRow struct {
	ID      int64
	Type    string
	State   string
	Elapsed string
	Time    string
	Detail  string
}

// runs reads a wave's history: each state's run, in order of first entry,
// the event rows, and the transitions taken. follows says which moves the
// definition allows (nil: no transitions are read): a state entered
// follows the most recently left state that leads to it, which holds while
// Parallel branches interleave.
func runs(history []byte, status string, follows func(from, to string) bool) ([]StateRun, []EventRow, Transitions, error) {
	var raws []json.RawMessage
	if len(history) > 0 {
		if err := json.Unmarshal(history, &raws); err != nil {
			return nil, nil, nil, fmt.Errorf("console: history: %w", err)
		}
	}
	taken := Transitions{}
	var left []string // states exited or failed, not yet followed, most recent last
	byName := map[string]*StateRun{}
	var order []string
	var open []string // states entered and not exited, most recent last
	var rows []EventRow
	var start time.Time
	for _, raw := range raws {
		var e event
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, nil, nil, fmt.Errorf("console: history event: %w", err)
		}
		if start.IsZero() {
			start = e.Timestamp
		}
		row := EventRow{ID: e.ID, Type: e.Type, Elapsed: duration(e.Timestamp.Sub(start)), Time: e.Timestamp.UTC().Format("15:04:05.000")}
		switch {
		case e.Entered != nil:
			row.State = e.Entered.Name
			r := byName[e.Entered.Name]
			if r == nil {
				r = &StateRun{Name: e.Entered.Name, Entered: e.Timestamp}
				byName[r.Name] = r
				order = append(order, r.Name)
			}
			r.Runs++
			r.Status, r.Input = "running", e.Entered.Input
			open = append(open, r.Name)
			for i := len(left) - 1; follows != nil && i >= 0; i-- {
				if follows(left[i], r.Name) {
					taken[[2]string{left[i], r.Name}] = true
					left = append(left[:i], left[i+1:]...)
					break
				}
			}
		case e.TaskSucceeded != nil:
			var out struct{ ExecutionArn string }
			if len(open) > 0 && json.Unmarshal([]byte(e.TaskSucceeded.Output), &out) == nil && out.ExecutionArn != "" {
				byName[open[len(open)-1]].Execution = out.ExecutionArn
			}
		case e.Exited != nil:
			row.State = e.Exited.Name
			if r := byName[e.Exited.Name]; r != nil {
				r.Exited, r.Output = e.Timestamp, e.Exited.Output
				if r.Status == "running" {
					r.Status = "succeeded"
				}
			}
			open = remove(open, e.Exited.Name)
			left = append(remove(left, e.Exited.Name), e.Exited.Name)
		case strings.HasSuffix(e.Type, "Failed") || strings.HasSuffix(e.Type, "TimedOut") || strings.HasSuffix(e.Type, "Aborted"):
			errName, cause := failure(raw)
			row.Detail = strings.TrimSpace(errName + " " + cause)
			if len(open) > 0 && !strings.HasPrefix(e.Type, "Execution") {
				r := byName[open[len(open)-1]]
				row.State = r.Name
				r.Status, r.Error, r.Cause, r.Exited = "caught", errName, cause, e.Timestamp
				open = open[:len(open)-1]
				left = append(remove(left, r.Name), r.Name)
			}
		}
		rows = append(rows, row)
	}
	out := make([]StateRun, 0, len(order))
	for _, n := range order {
		r := byName[n]
		if r.Status == "caught" && status == "FAILED" && len(open) == 0 && n == lastFailed(byName, order) {
			r.Status = "failed"
		}
		if r.Status == "running" && status != "RUNNING" {
			r.Status = "failed"
		}
		out = append(out, *r)
	}
	return out, rows, taken, nil
}

// lastFailed is the last state, in entry order, whose run failed.
func lastFailed(by map[string]*StateRun, order []string) string {
	last := ""
	for _, n := range order {
		if by[n].Error != "" {
			last = n
		}
	}
	return last
}

func remove(s []string, name string) []string {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == name {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}

// pretty renders a body for the page: indented, bounded in depth and size
// (httpapi.Render), the values of secret-named keys (task tokens,
// signatures) blanked. Anything that is not JSON comes back as it is, cut
// at the size bound.
//
// Hook: the registry of secret values (*ora.Secrets) is applied to the
// rendered Text here, once it exists in the console's dependencies.
func pretty(raw []byte) httpapi.Rendering {
	return httpapi.Render(raw, httpapi.RenderOptions{SecretKey: telemetry.Sensitive})
}

// rawBody is a body as the raw link serves it: compact JSON with the values
// of secret-named keys blanked (the page's rule), or nothing when it is not
// JSON the standard decoder reads.
//
// Hook: the registry of secret values (*ora.Secrets) is applied to the
// result here too, once the console has it.
func rawBody(raw []byte) []byte {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return []byte(`"` + telemetry.Redacted + `"`)
	}
	b, err := json.Marshal(scrub(v))
	if err != nil {
		return []byte(`"` + telemetry.Redacted + `"`)
	}
	return b
}

func scrub(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if telemetry.Sensitive(k) {
				t[k] = telemetry.Redacted
			} else {
				t[k] = scrub(x)
			}
		}
	case []any:
		for i := range t {
			t[i] = scrub(t[i])
		}
	}
	return v
}
