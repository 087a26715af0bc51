package statemachines

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
)

// ExpressBudgetSeconds is what the longest run of an Express child may take
// in the worst case: Express executions are stopped at 5 minutes, and a child
// stopped there reports no stage, so every child keeps 30 s in hand.
const ExpressBudgetSeconds = 270

// budgetState is the part of a state its worst-case duration depends on.
type budgetState struct {
	Type           string  `json:"Type"`
	Next           string  `json:"Next"`
	Default        string  `json:"Default"`
	TimeoutSeconds float64 `json:"TimeoutSeconds"`
	Seconds        float64 `json:"Seconds"`
	Choices        []struct {
		Next string `json:"Next"`
	} `json:"Choices"`
	Catch []struct {
		Next string `json:"Next"`
	} `json:"Catch"`
	Retry         []retrier `json:"Retry"`
	Branches      []flow    `json:"Branches"`
	ItemProcessor *flow     `json:"ItemProcessor"`
}

// retrier is one Retry entry, with the ASL's defaults when a field is left
// out (MaxAttempts 3, IntervalSeconds 1, BackoffRate 2).
type retrier struct {
	ErrorEquals     []string `json:"ErrorEquals"`
	IntervalSeconds *float64 `json:"IntervalSeconds"`
	MaxAttempts     *float64 `json:"MaxAttempts"`
	BackoffRate     *float64 `json:"BackoffRate"`
	MaxDelaySeconds float64  `json:"MaxDelaySeconds"`
}

// flow is a state machine, a Parallel branch or a Map's item processor.
type flow struct {
	StartAt         string                 `json:"StartAt"`
	States          map[string]budgetState `json:"States"`
	ProcessorConfig struct {
		Mode          string `json:"Mode"`
		ExecutionType string `json:"ExecutionType"`
	} `json:"ProcessorConfig"`
}

func or(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}

// waits is the longest a retrier waits in all: every attempt's interval
// at its full length (full jitter waits at most that), capped by
// MaxDelaySeconds.
func (r retrier) waits() float64 {
	var total float64
	interval, rate := or(r.IntervalSeconds, 1), or(r.BackoffRate, 2)
	for k := 0; k < int(or(r.MaxAttempts, 3)); k++ {
		d := interval * math.Pow(rate, float64(k))
		if r.MaxDelaySeconds > 0 {
			d = math.Min(d, r.MaxDelaySeconds)
		}
		total += d
	}
	return total
}

// worst returns the longest a flow can run: along its longest path (Next,
// Choices, Default and Catch targets), each Task counts its TimeoutSeconds
// once per attempt (the first and every retry, whatever the error: a retry
// may follow a run that took all its time) plus every retry's wait; a
// Parallel counts its slowest branch, an inline Map its item processor (its
// items run at once), a Wait its Seconds. A Task without TimeoutSeconds is an
// error: its worst case is unbounded.
func (f flow) worst(where string) (float64, error) {
	memo := map[string]float64{}
	visiting := map[string]bool{}
	var from func(name string) (float64, error)
	from = func(name string) (float64, error) {
		if v, ok := memo[name]; ok {
			return v, nil
		}
		if visiting[name] {
			return 0, fmt.Errorf("%s: a loop through %q: no worst case", where, name)
		}
		visiting[name] = true
		defer delete(visiting, name)
		st, ok := f.States[name]
		if !ok {
			return 0, fmt.Errorf("%s: no state %q", where, name)
		}
		var own float64
		switch st.Type {
		case "Task":
			if st.TimeoutSeconds <= 0 {
				return 0, fmt.Errorf("%s: task %q has no TimeoutSeconds", where, name)
			}
			attempts := 1.0
			for _, r := range st.Retry {
				attempts += or(r.MaxAttempts, 3)
				own += r.waits()
			}
			own += attempts * st.TimeoutSeconds
		case "Parallel":
			for i, b := range st.Branches {
				w, err := b.worst(fmt.Sprintf("%s/%s[%d]", where, name, i))
				if err != nil {
					return 0, err
				}
				own = math.Max(own, w)
			}
		case "Map":
			if st.ItemProcessor == nil {
				return 0, fmt.Errorf("%s: map %q has no ItemProcessor", where, name)
			}
			if st.ItemProcessor.ProcessorConfig.Mode == "DISTRIBUTED" {
				return 0, fmt.Errorf("%s: a Distributed Map (%q) inside an Express child", where, name)
			}
			w, err := st.ItemProcessor.worst(where + "/" + name)
			if err != nil {
				return 0, err
			}
			own = w
		case "Wait":
			own = st.Seconds
		}
		next := []string{st.Next, st.Default}
		for _, c := range st.Choices {
			next = append(next, c.Next)
		}
		for _, c := range st.Catch {
			next = append(next, c.Next)
		}
		var longest float64
		for _, n := range next {
			if n == "" {
				continue
			}
			w, err := from(n)
			if err != nil {
				return 0, err
			}
			longest = math.Max(longest, w)
		}
		memo[name] = own + longest
		return memo[name], nil
	}
	return from(f.StartAt)
}

// expressFlows are the flows that run as Express executions: the wave's
// children and the item processors of the parent's Distributed Maps.
func expressFlows(t *testing.T) map[string]flow {
	t.Helper()
	out := map[string]flow{}
	for _, ch := range Children {
		var f flow
		if err := json.Unmarshal(ch.Definition, &f); err != nil {
			t.Fatalf("%s: %v", ch.Name, err)
		}
		out[ch.Name] = f
	}
	var parent flow
	if err := json.Unmarshal(Wave, &parent); err != nil {
		t.Fatal(err)
	}
	for name, st := range parent.States {
		if p := st.ItemProcessor; p != nil && p.ProcessorConfig.ExecutionType == "EXPRESS" {
			out["ora: "+name] = *p
		}
	}
	return out
}

// Every Express flow's worst case, retries included, fits in
// ExpressBudgetSeconds: longer retries belong to the Standard parent (its
// operator backs off and resumes the failed stage).
func TestExpressBudgets(t *testing.T) {
	flows := expressFlows(t)
	if len(flows) < len(Children)+1 {
		t.Fatalf("found %d Express flows, want the %d children and the Fetch Map's", len(flows), len(Children))
	}
	for name, f := range flows {
		t.Run(name, func(t *testing.T) {
			w, err := f.worst(name)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: worst case %.0f s of %d", name, w, ExpressBudgetSeconds)
			if w > ExpressBudgetSeconds {
				t.Errorf("%s: worst case %.0f s, over the %d s budget", name, w, ExpressBudgetSeconds)
			}
		})
	}
}

// The budget arithmetic itself, on small definitions.
func TestWorstCase(t *testing.T) {
	tests := []struct {
		name string
		def  string
		want float64
		err  bool
	}{
		{"one task, no retry", `{"StartAt":"A","States":{"A":{"Type":"Task","TimeoutSeconds":10,"End":true}}}`, 10, false},
		{"retries count every attempt and every wait", `{"StartAt":"A","States":{"A":{"Type":"Task","TimeoutSeconds":10,
			"Retry":[{"ErrorEquals":["X"],"IntervalSeconds":2,"MaxAttempts":3,"BackoffRate":2}],"End":true}}}`, 4*10 + 2 + 4 + 8, false},
		{"MaxDelaySeconds caps a wait", `{"StartAt":"A","States":{"A":{"Type":"Task","TimeoutSeconds":1,
			"Retry":[{"ErrorEquals":["X"],"IntervalSeconds":2,"MaxAttempts":3,"BackoffRate":2,"MaxDelaySeconds":3}],"End":true}}}`, 4 + 2 + 3 + 3, false},
		{"ASL defaults: 3 attempts from 1 s doubling", `{"StartAt":"A","States":{"A":{"Type":"Task","TimeoutSeconds":1,
			"Retry":[{"ErrorEquals":["X"]}],"End":true}}}`, 4 + 1 + 2 + 4, false},
		{"the longer of a choice's and a catch's paths", `{"StartAt":"C","States":{
			"C":{"Type":"Choice","Choices":[{"Variable":"$.x","IsPresent":true,"Next":"A"}],"Default":"B"},
			"A":{"Type":"Task","TimeoutSeconds":5,"Catch":[{"ErrorEquals":["States.ALL"],"Next":"W"}],"Next":"B"},
			"W":{"Type":"Wait","Seconds":30,"End":true},
			"B":{"Type":"Task","TimeoutSeconds":7,"End":true}}}`, 35, false},
		{"a parallel counts its slowest branch", `{"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,"Branches":[
			{"StartAt":"A","States":{"A":{"Type":"Task","TimeoutSeconds":3,"End":true}}},
			{"StartAt":"B","States":{"B":{"Type":"Task","TimeoutSeconds":9,"End":true}}}]}}}`, 9, false},
		{"an inline map counts its items' processor once", `{"StartAt":"M","States":{"M":{"Type":"Map","End":true,
			"ItemProcessor":{"ProcessorConfig":{"Mode":"INLINE"},"StartAt":"A","States":{"A":{"Type":"Task","TimeoutSeconds":4,"End":true}}}}}}`, 4, false},
		{"a task without TimeoutSeconds is unbounded", `{"StartAt":"A","States":{"A":{"Type":"Task","End":true}}}`, 0, true},
		{"a loop is unbounded", `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B"},"B":{"Type":"Pass","Next":"A"}}}`, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f flow
			if err := json.Unmarshal([]byte(tt.def), &f); err != nil {
				t.Fatal(err)
			}
			got, err := f.worst("test")
			if (err != nil) != tt.err {
				t.Fatalf("worst = %v, %v; want error %v", got, err, tt.err)
			}
			if got != tt.want {
				t.Errorf("worst = %v, want %v", got, tt.want)
			}
		})
	}
}
