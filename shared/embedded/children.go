package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ora-runtime/ora/shared/stepfn"
	"github.com/ora-runtime/ora/statemachines"
)

// Express children. On AWS the wave's automated segments run as Express
// executions the Standard parent starts with states:startExecution.sync:2.
// Express keeps no durable history and runs at least once, so locally the
// children run on a second engine over a MemoryStore: no checkpoint per
// event, and after a crash the parent's Task (checkpointed in the durable
// engine) starts the child again, as AWS would. Every child step is
// idempotent, which is what makes both safe.

// childEngine is the in-memory engine the children run on.
type childEngine struct {
	e     *stepfn.Engine
	store *stepfn.MemoryStore
	arns  map[string]string // state machine ARN by child name
	seq   atomic.Uint64

	mu      sync.Mutex
	entered map[string][]string // states the children of a parent execution entered, in order
	parents []string            // parents in entered, oldest first (at most keepEntered)
	kept    recentHistories     // the console's view of recent children (executions.go)
}

// keepEntered bounds how many parent executions' child states are kept: like
// an Express execution's history on AWS (in CloudWatch Logs, not the
// parent's history), they are for looking at recent waves, not a record.
const keepEntered = 1024

// note records the states a child of parent entered.
func (c *childEngine) note(parent string, names []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entered[parent]; !ok {
		c.parents = append(c.parents, parent)
		if len(c.parents) > keepEntered {
			delete(c.entered, c.parents[0])
			c.parents = c.parents[1:]
		}
	}
	c.entered[parent] = append(c.entered[parent], names...)
}

// Entered returns the states the children of the parent execution entered,
// in the order they ran (this process's recent waves only).
func (c *childEngine) Entered(parent string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.entered[parent]...)
}

// newChildEngine loads statemachines.Children with subs into an in-memory
// engine using clock (nil: the real clock).
func newChildEngine(clock stepfn.Clock, subs map[string]string) (*childEngine, error) {
	c := &childEngine{store: stepfn.NewMemoryStore(), arns: map[string]string{}, entered: map[string][]string{}}
	c.e = stepfn.NewEngine(func(eo *stepfn.Options) {
		eo.Store = c.store
		eo.Region, eo.Account = region, account
		if clock != nil {
			eo.Clock = clock
		}
	})
	for _, ch := range statemachines.Children {
		for _, p := range statemachines.Placeholders(ch.Definition) {
			if subs[p] == "" {
				return nil, fmt.Errorf("embedded: statemachines/%s.asl.json: ${%s} has no value", ch.Name, p)
			}
		}
		arn, err := c.e.CreateStateMachine(stateMachine+"-"+ch.Name, statemachines.Substitute(ch.Definition, subs))
		if err != nil {
			return nil, fmt.Errorf("embedded: load statemachines/%s.asl.json: %w", ch.Name, err)
		}
		c.arns[ch.Name] = arn
	}
	return c, nil
}

// startSyncInput is the Parameters of a states:startExecution.sync:2 task.
type startSyncInput struct {
	StateMachineArn string          `json:"StateMachineArn"`
	Input           json.RawMessage `json:"Input"`
	Name            string          `json:"Name"`
}

// describe is the DescribeExecution answer .sync:2 returns (Output as JSON)
// and, as a string, the cause of the task's failure when the child fails.
type describe struct {
	ExecutionArn    string          `json:"ExecutionArn"`
	StateMachineArn string          `json:"StateMachineArn"`
	Name            string          `json:"Name"`
	Status          string          `json:"Status"`
	StartDate       float64         `json:"StartDate"`
	StopDate        float64         `json:"StopDate"`
	Input           string          `json:"Input"`
	Output          json.RawMessage `json:"Output,omitempty"`
	Error           string          `json:"Error,omitempty"`
	Cause           string          `json:"Cause,omitempty"`
}

// Invoke runs one child execution to its end: the handler of the parent's
// states:startExecution.sync:2 tasks. A child that succeeds answers its
// DescribeExecution with the output as JSON; one that fails, times out or is
// aborted fails the task with States.TaskFailed and the DescribeExecution as
// the cause, as Step Functions does.
func (c *childEngine) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var in startSyncInput
	if err := json.Unmarshal(payload, &in); err != nil {
		return nil, &stepfn.TaskFailure{Name: "States.Runtime", Cause: fmt.Sprintf("startExecution.sync:2: the parameters are not JSON: %v", err)}
	}
	if len(in.Input) == 0 {
		in.Input = json.RawMessage("{}")
	}
	if in.Input[0] == '"' { // Input given as a JSON string
		var s string
		if json.Unmarshal(in.Input, &s) == nil {
			in.Input = json.RawMessage(s)
		}
	}
	name := in.Name
	if name == "" {
		name = fmt.Sprintf("child-%d-%d", time.Now().UnixNano(), c.seq.Add(1))
	}
	arn, err := c.e.StartExecution(ctx, in.StateMachineArn, name, in.Input)
	if err != nil {
		return nil, &stepfn.TaskFailure{Name: "StepFunctions." + stepfn.ErrorCode(err) + "Exception", Cause: err.Error()}
	}
	// The parent's history links the child, as Step Functions' does.
	if x, err := c.e.DescribeExecution(ctx, arn); err == nil {
		stepfn.TaskSubmitted(ctx, stepfn.SubmittedOutput(arn, x.StartDate))
	}
	ex, err := c.e.WaitFromTask(ctx, arn)
	if err != nil {
		_ = c.e.StopExecution(context.WithoutCancel(ctx), arn, "States.Aborted", "the parent task ended")
		return nil, err
	}
	// The child's history is kept as it is, rendered only if the console
	// asks for it (rendering every child's was 1.5% of a wave's CPU).
	if hist, ok := c.store.TakeHistory(ctx, arn); ok {
		if ti, ok := stepfn.TaskInfoFrom(ctx); ok {
			c.note(ti.Execution, hist.StatesEntered())
			c.kept.keep(arn, hist)
		}
	}
	d := describe{
		ExecutionArn: ex.ExecutionArn, StateMachineArn: ex.StateMachineArn, Name: ex.Name, Status: ex.Status,
		StartDate: float64(ex.StartDate.UnixMilli()) / 1000, Input: string(ex.Input), Error: ex.Error, Cause: ex.Cause,
	}
	if !ex.StopDate.IsZero() {
		d.StopDate = float64(ex.StopDate.UnixMilli()) / 1000
	}
	if ex.Status != stepfn.StatusSucceeded {
		b, _ := json.Marshal(d)
		return nil, &stepfn.TaskFailure{Name: "States.TaskFailed", Cause: string(b)}
	}
	d.Output = ex.Output
	return json.Marshal(d)
}
