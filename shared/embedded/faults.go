package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/stepfn"
	"github.com/ora-runtime/ora/statemachines"
)

// FaultConfig injects a failure: the first Times invocations of the task
// state named State fail with the error Error and the cause Cause, exactly as
// a Lambda returning that error type would. Chaos drills and tests use it.
type FaultConfig struct {
	State string `yaml:"state" json:"state"`
	Error string `yaml:"error" json:"error"`
	Cause string `yaml:"cause,omitempty" json:"cause,omitempty"`
	Times int    `yaml:"times" json:"times"`
}

// validateFaults checks every fault names a Task state of the wave's definition,
// an error and a positive count; errors name the key.
func validateFaults(fs []FaultConfig) error {
	states, err := taskStates(statemachines.Wave)
	if err != nil {
		return fmt.Errorf("faults: %w", err)
	}
	for _, ch := range statemachines.Children {
		cs, err := taskStates(ch.Definition)
		if err != nil {
			return fmt.Errorf("faults: statemachines/%s.asl.json: %w", ch.Name, err)
		}
		for name := range cs {
			states[name] = true
		}
	}
	for i, f := range fs {
		key := fmt.Sprintf("faults[%d]", i)
		switch {
		case f.State == "":
			return ora.Invalid(key+".state", "required: a Task state of the wave (statemachines/*.asl.json)")
		case !states[f.State]:
			return ora.Invalid(key+".state", "%q is not a Task state of the wave (statemachines/*.asl.json; Task states: %v)", f.State, sortedKeys(states))
		case f.Error == "":
			return ora.Invalid(key+".error", "required, e.g. InternalError")
		case f.Times <= 0:
			return ora.Invalid(key+".times", "must be at least 1")
		}
	}
	return nil
}

// taskStates returns the name of every Task state of an ASL definition, at
// any depth (Parallel branches and Map processors included): the states that
// invoke a handler, where a fault can strike.
func taskStates(def []byte) (map[string]bool, error) {
	var root map[string]any
	if err := json.Unmarshal(def, &root); err != nil {
		return nil, fmt.Errorf("the wave definition is not JSON: %w", err)
	}
	names := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if states, ok := x["States"].(map[string]any); ok {
				for name, st := range states {
					if m, ok := st.(map[string]any); ok && m["Type"] == "Task" {
						names[name] = true
					}
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(root)
	return names, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// faults counts invocations per state and fails the first Times of each
// configured state. Counts live in the process: a restarted `ora dev` injects
// the configured faults afresh.
type faults struct {
	mu     sync.Mutex
	byName map[string]*FaultConfig
	used   map[string]int
}

func newFaults(fs []FaultConfig) *faults {
	f := &faults{byName: map[string]*FaultConfig{}, used: map[string]int{}}
	for i := range fs {
		f.byName[fs[i].State] = &fs[i]
	}
	return f
}

// take reports the fault to inject for state, if any, and counts it.
func (f *faults) take(state string) (FaultConfig, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.byName[state]
	if !ok || f.used[state] >= c.Times {
		return FaultConfig{}, false
	}
	f.used[state]++
	return *c, true
}

// wrap returns h failing as configured for the state it is invoked for.
func (f *faults) wrap(h stepfn.Handler) stepfn.Handler {
	if f == nil || len(f.byName) == 0 {
		return h
	}
	return stepfn.HandlerFunc(func(ctx context.Context, payload []byte) ([]byte, error) {
		if ti, ok := stepfn.TaskInfoFrom(ctx); ok {
			if c, hit := f.take(ti.State); hit {
				cause := c.Cause
				if cause == "" {
					cause = fmt.Sprintf("fault injected at %s", c.State)
				}
				return nil, messages.InvokeResponse_Error{Type: c.Error, Message: cause}
			}
		}
		return h.Invoke(ctx, payload)
	})
}
