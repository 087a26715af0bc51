package statemachines

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

// A failed wave ends FAILED, so Step Functions may redrive it: the paths out
// of the operator lead back into the stages ("Resume at the failed stage")
// or to a Fail state, never to a Succeed state that would hide the failure
// behind a SUCCEEDED execution; and the Fail state is reached only after a
// Task that records the failed verdict (Operate on failure deciding "fail",
// or Abandon paused wave), which is why ora redrive refuses a wave that ended
// there.
func TestFailuresEndRedrivable(t *testing.T) {
	var def struct {
		States map[string]map[string]any `json:"States"`
	}
	if err := json.Unmarshal(Wave, &def); err != nil {
		t.Fatal(err)
	}
	next := func(name string) []string {
		st := def.States[name]
		var out []string
		if n, ok := st["Next"].(string); ok {
			out = append(out, n)
		}
		if d, ok := st["Default"].(string); ok {
			out = append(out, d)
		}
		for _, c := range toList(st["Choices"]) {
			out = append(out, c.(map[string]any)["Next"].(string))
		}
		for _, c := range toList(st["Catch"]) {
			out = append(out, c.(map[string]any)["Next"].(string))
		}
		return out
	}
	// From the operator, without going back into the stages.
	seen, ends := map[string]bool{}, map[string]bool{}
	todo := []string{"Operate on failure"}
	for len(todo) > 0 {
		n := todo[0]
		todo = todo[1:]
		if seen[n] {
			continue
		}
		seen[n] = true
		if n == "Resume at the failed stage" {
			for _, d := range next(n) {
				if def.States[d]["Type"] == "Fail" {
					ends[d] = true
				}
			}
			continue
		}
		switch def.States[n]["Type"] {
		case "Succeed", "Fail":
			ends[n] = true
			continue
		}
		if def.States[n]["End"] == true {
			ends[n] = true
		}
		todo = append(todo, next(n)...)
	}
	var got []string
	for n := range ends {
		got = append(got, n+" ("+def.States[n]["Type"].(string)+")")
	}
	sort.Strings(got)
	if strings.Join(got, ", ") != "Wave failed (Fail)" {
		t.Errorf("the operator's paths end at %v, want only the Fail state Wave failed", got)
	}
	// Who enters Wave failed.
	var preds []string
	for name := range def.States {
		for _, n := range next(name) {
			if n == "Wave failed" {
				preds = append(preds, name)
			}
		}
	}
	sort.Strings(preds)
	if want := "Abandon paused wave, Pause or fail?, Resume at the failed stage"; strings.Join(preds, ", ") != want {
		t.Errorf("Wave failed is entered from %v, want %s", preds, want)
	}
}

func toList(v any) []any {
	l, _ := v.([]any)
	return l
}
