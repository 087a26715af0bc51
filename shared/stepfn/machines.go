package stepfn

import (
	"context"
	"sort"
	"time"
)

// StateMachine describes a registered state machine, as DescribeStateMachine
// does.
type StateMachine struct {
	Arn        string
	Name       string
	Definition []byte
	// CreationDate is when the name was first registered; UpdateDate when
	// its definition was last replaced (zero if never), Revision how many
	// times.
	CreationDate time.Time
	UpdateDate   time.Time
	Revision     int
}

// ExecutionLister is a Store that can list the executions of a state machine.
// An Engine whose Store is not one lists the executions it started or resumed
// itself, at least the most recent 10,000 of each state machine.
type ExecutionLister interface {
	// ExecutionArns returns the ARNs of the state machine's executions, in
	// no particular order (none for an unknown state machine).
	ExecutionArns(ctx context.Context, stateMachineArn string) ([]string, error)
}

var _ ExecutionLister = (*MemoryStore)(nil)

// indexMax is how many executions per state machine an Engine whose Store
// cannot list them remembers for ListExecutions: the most recent ones.
const indexMax = 10000

// noteExecution remembers an execution for ListExecutions when the store
// cannot list them; call with e.mu held.
func (e *Engine) noteExecution(smArn, execArn string) {
	if e.lister != nil {
		return
	}
	l := append(e.index[smArn], execArn)
	if len(l) >= 2*indexMax {
		l = append([]string(nil), l[len(l)-indexMax:]...)
	}
	e.index[smArn] = l
}

// DescribeStateMachine returns the state machine registered under arn.
// Errors: StateMachineDoesNotExist.
func (e *Engine) DescribeStateMachine(arn string) (StateMachine, error) {
	e.mu.Lock()
	sm := e.machines[arn]
	e.mu.Unlock()
	if sm == nil {
		return StateMachine{}, apiErr(CodeStateMachineDoesNotExist, "%s", arn)
	}
	return sm.describe(), nil
}

func (sm *stateMachine) describe() StateMachine {
	return StateMachine{Arn: sm.arn, Name: sm.name, Definition: append([]byte(nil), sm.definition...),
		CreationDate: sm.created, UpdateDate: sm.updated, Revision: sm.revision}
}

// ListStateMachines returns every registered state machine, by name.
func (e *Engine) ListStateMachines() []StateMachine {
	e.mu.Lock()
	out := make([]StateMachine, 0, len(e.machines))
	for _, sm := range e.machines {
		out = append(out, sm.describe())
	}
	e.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// DeleteStateMachine removes the state machine: no new execution can start,
// and those running go on to their end. Errors: StateMachineDoesNotExist.
func (e *Engine) DeleteStateMachine(arn string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.machines[arn] == nil {
		return apiErr(CodeStateMachineDoesNotExist, "%s", arn)
	}
	delete(e.machines, arn)
	return nil
}

// ListExecutions returns the state machine's executions, the most recently
// started first. Errors: StoreFailure.
func (e *Engine) ListExecutions(ctx context.Context, stateMachineArn string) ([]Execution, error) {
	var arns []string
	if e.lister != nil {
		var err error
		if arns, err = e.lister.ExecutionArns(ctx, stateMachineArn); err != nil {
			return nil, &Error{Code: CodeStore, Message: "list executions of " + stateMachineArn, Err: err}
		}
	} else {
		e.mu.Lock()
		arns = append(arns, e.index[stateMachineArn]...)
		e.mu.Unlock()
	}
	out := make([]Execution, 0, len(arns))
	for _, arn := range arns {
		x, err := e.DescribeExecution(ctx, arn)
		if ErrorCode(err) == CodeExecutionDoesNotExist {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].StartDate.Equal(out[j].StartDate) {
			return out[i].StartDate.After(out[j].StartDate)
		}
		return out[i].ExecutionArn > out[j].ExecutionArn
	})
	return out, nil
}

// ExecutionArns lists the ARNs of the state machine's executions.
func (s *MemoryStore) ExecutionArns(_ context.Context, stateMachineArn string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for arn, r := range s.records {
		if r.StateMachineArn == stateMachineArn {
			out = append(out, arn)
		}
	}
	return out, nil
}
