package stepfn

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"
)

// Handler runs a task: it receives the task's JSON payload and returns its
// JSON result. The engine may invoke one Handler concurrently (Map and
// Parallel states), so it must be safe for concurrent use: wrap a Lambda's own
// handler function with LambdaHandler(fn) (lambda.NewHandler(fn) satisfies
// this interface but reuses an output buffer across calls). The error's name,
// as Retry and Catch see it, is the Go type name of the returned error value.
type Handler interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, payload []byte) ([]byte, error)

// Invoke calls f.
func (f HandlerFunc) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return f(ctx, payload)
}

// Execution statuses.
const (
	StatusRunning   = "RUNNING"
	StatusSucceeded = "SUCCEEDED"
	StatusFailed    = "FAILED"
	StatusTimedOut  = "TIMED_OUT"
	StatusAborted   = "ABORTED"
)

// Execution describes one execution, as DescribeExecution does.
type Execution struct {
	ExecutionArn    string          `json:"executionArn"`
	StateMachineArn string          `json:"stateMachineArn"`
	Name            string          `json:"name"`
	Status          string          `json:"status"`
	Input           json.RawMessage `json:"input"`
	Output          json.RawMessage `json:"output,omitempty"`
	Error           string          `json:"error,omitempty"`
	Cause           string          `json:"cause,omitempty"`
	StartDate       time.Time       `json:"startDate"`
	StopDate        time.Time       `json:"stopDate,omitzero"`
	RedriveCount    int             `json:"redriveCount"`
	RedriveDate     time.Time       `json:"redriveDate,omitzero"`
}

// ExecutionRecord is what a Store keeps for an execution: its description,
// the definition it runs, and the engine's checkpoint (an opaque JSON document
// from which a RUNNING execution resumes and a failed one is redriven).
type ExecutionRecord struct {
	Execution
	Definition []byte
	Checkpoint []byte
}

// Store keeps executions and their history.
type Store interface {
	// CreateExecution stores a new execution with its first events. It returns
	// an error wrapping ErrExists, and writes nothing, when the ARN is taken.
	CreateExecution(ctx context.Context, rec ExecutionRecord, events []HistoryEvent) error
	// SaveExecution replaces the execution's record and appends events, at
	// once. It returns an error wrapping ErrNotFound for an unknown ARN.
	SaveExecution(ctx context.Context, rec ExecutionRecord, events []HistoryEvent) error
	// GetExecution returns an execution's record, or an error wrapping ErrNotFound.
	GetExecution(ctx context.Context, execArn string) (ExecutionRecord, error)
	// RunningExecutions returns the records of every RUNNING execution.
	RunningExecutions(ctx context.Context) ([]ExecutionRecord, error)
	// History returns an execution's events in order, or an error wrapping
	// ErrNotFound for an unknown ARN.
	History(ctx context.Context, execArn string) ([]HistoryEvent, error)
}

// PartStore is a Store that keeps a checkpoint in parts: the record's
// Checkpoint holds the execution's own flow, and each branch of a Parallel
// state and each iteration of a Map state is a part of its own, under a key
// naming its place in the tree ("3" for the root's fourth child, "3/0" for
// that child's first). The engine then writes, with each event, only the
// parts that changed since the previous one, so a Map of n iterations costs
// O(n) checkpoint bytes, not O(n²).
type PartStore interface {
	Store
	// SaveExecutionParts is SaveExecution that also writes parts (replacing
	// those under the same keys), all in one transaction.
	SaveExecutionParts(ctx context.Context, rec ExecutionRecord, parts []CheckpointPart, events []HistoryEvent) error
	// CheckpointParts returns the parts stored for an execution, by key; an
	// execution without any has none (a nil map, no error).
	CheckpointParts(ctx context.Context, execArn string) (map[string][]byte, error)
}

// CheckpointPart is one part of a checkpoint kept by a PartStore: a JSON
// document under its key.
type CheckpointPart struct {
	Key  string
	Data []byte
}

// Options configure an Engine.
type Options struct {
	// Clock is the source of time. Default RealClock.
	Clock Clock
	// Store keeps executions and history. Default a new MemoryStore.
	Store Store
	// Logger receives the engine's diagnostics. Default: discarded.
	Logger *slog.Logger
	// Region and Account go into ARNs. Defaults us-east-1 and 123456789012.
	Region  string
	Account string
	// Objects serves a Distributed Map's ItemReader (s3:getObject). Default:
	// none, and an ItemReader fails with States.ItemReaderFailed.
	Objects ObjectGetter

	// Tasks answers Task states by name, as a tasks file does (ParseTaskScript),
	// before the registered handlers: a state with an entry takes its items,
	// one per invocation and the last repeating, counted per execution; a
	// state without one goes to the handler its Resource names. Default: none.
	Tasks TaskScript

	// MaxRunning bounds the executions running at once in this engine, as
	// an account's quota of open executions does on AWS: StartExecution and
	// RedriveExecution beyond it fail with ExecutionLimitExceeded. Default 0:
	// no bound.
	MaxRunning int

	// invoke replaces handler dispatch (RunScripted's tasks file).
	invoke invoker
}

// HistoryEvent is one event of an execution's history, shaped like AWS's
// GetExecutionHistory: a type, an id, the id of the event before it in the same
// flow (a branch of a Parallel or an iteration of a Map has its own), a
// timestamp, and the details of its type.
type HistoryEvent struct {
	Type            string    `json:"type"`
	ID              int64     `json:"id"`
	PreviousEventID int64     `json:"previousEventId"`
	Timestamp       time.Time `json:"timestamp"`

	ExecutionStartedEventDetails        *ExecutionStartedDetails `json:"executionStartedEventDetails,omitempty"`
	ExecutionSucceededEventDetails      *OutputDetails           `json:"executionSucceededEventDetails,omitempty"`
	ExecutionFailedEventDetails         *FailureDetails          `json:"executionFailedEventDetails,omitempty"`
	ExecutionAbortedEventDetails        *FailureDetails          `json:"executionAbortedEventDetails,omitempty"`
	ExecutionTimedOutEventDetails       *FailureDetails          `json:"executionTimedOutEventDetails,omitempty"`
	ExecutionRedrivenEventDetails       *RedrivenDetails         `json:"executionRedrivenEventDetails,omitempty"`
	StateEnteredEventDetails            *StateEnteredDetails     `json:"stateEnteredEventDetails,omitempty"`
	StateExitedEventDetails             *StateExitedDetails      `json:"stateExitedEventDetails,omitempty"`
	TaskScheduledEventDetails           *TaskScheduledDetails    `json:"taskScheduledEventDetails,omitempty"`
	TaskStartedEventDetails             *TaskDetails             `json:"taskStartedEventDetails,omitempty"`
	TaskSubmittedEventDetails           *TaskOutputDetails       `json:"taskSubmittedEventDetails,omitempty"`
	TaskSucceededEventDetails           *TaskOutputDetails       `json:"taskSucceededEventDetails,omitempty"`
	TaskFailedEventDetails              *TaskFailureDetails      `json:"taskFailedEventDetails,omitempty"`
	TaskTimedOutEventDetails            *TaskFailureDetails      `json:"taskTimedOutEventDetails,omitempty"`
	LambdaFunctionScheduledEventDetails *LambdaScheduledDetails  `json:"lambdaFunctionScheduledEventDetails,omitempty"`
	LambdaFunctionSucceededEventDetails *OutputDetails           `json:"lambdaFunctionSucceededEventDetails,omitempty"`
	LambdaFunctionFailedEventDetails    *FailureDetails          `json:"lambdaFunctionFailedEventDetails,omitempty"`
	LambdaFunctionTimedOutEventDetails  *FailureDetails          `json:"lambdaFunctionTimedOutEventDetails,omitempty"`
	MapStateStartedEventDetails         *MapStateStartedDetails  `json:"mapStateStartedEventDetails,omitempty"`
	MapIterationStartedEventDetails     *MapIterationDetails     `json:"mapIterationStartedEventDetails,omitempty"`
	MapIterationSucceededEventDetails   *MapIterationDetails     `json:"mapIterationSucceededEventDetails,omitempty"`
	MapIterationFailedEventDetails      *MapIterationDetails     `json:"mapIterationFailedEventDetails,omitempty"`
	MapIterationAbortedEventDetails     *MapIterationDetails     `json:"mapIterationAbortedEventDetails,omitempty"`
}

// ExecutionStartedDetails: the execution's input.
type ExecutionStartedDetails struct {
	Input   string `json:"input"`
	RoleArn string `json:"roleArn,omitempty"`
}

// OutputDetails: an output JSON document.
type OutputDetails struct {
	Output string `json:"output"`
}

// FailureDetails: an error name and cause.
type FailureDetails struct {
	Error string `json:"error,omitempty"`
	Cause string `json:"cause,omitempty"`
}

// RedrivenDetails: how many times the execution was redriven.
type RedrivenDetails struct {
	RedriveCount int `json:"redriveCount"`
}

// StateEnteredDetails: the state entered and its raw input.
type StateEnteredDetails struct {
	Name  string `json:"name"`
	Input string `json:"input"`
}

// StateExitedDetails: the state left and its output.
type StateExitedDetails struct {
	Name   string `json:"name"`
	Output string `json:"output"`
}

// TaskScheduledDetails: a service-integration task sent to its resource.
type TaskScheduledDetails struct {
	ResourceType       string `json:"resourceType"`
	Resource           string `json:"resource"`
	Region             string `json:"region"`
	Parameters         string `json:"parameters"`
	TimeoutInSeconds   int64  `json:"timeoutInSeconds,omitempty"`
	HeartbeatInSeconds int64  `json:"heartbeatInSeconds,omitempty"`
}

// TaskDetails names a task's resource.
type TaskDetails struct {
	ResourceType string `json:"resourceType"`
	Resource     string `json:"resource"`
}

// TaskOutputDetails: a task's resource and its output.
type TaskOutputDetails struct {
	ResourceType string `json:"resourceType"`
	Resource     string `json:"resource"`
	Output       string `json:"output"`
}

// TaskFailureDetails: a task's resource, error name and cause.
type TaskFailureDetails struct {
	ResourceType string `json:"resourceType"`
	Resource     string `json:"resource"`
	Error        string `json:"error,omitempty"`
	Cause        string `json:"cause,omitempty"`
}

// LambdaScheduledDetails: a Lambda function task (a function ARN as Resource).
type LambdaScheduledDetails struct {
	Resource         string `json:"resource"`
	Input            string `json:"input"`
	TimeoutInSeconds int64  `json:"timeoutInSeconds,omitempty"`
}

// MapStateStartedDetails: how many items the Map iterates over.
type MapStateStartedDetails struct {
	Length int `json:"length"`
}

// MapIterationDetails: the Map state's name and the item's index.
type MapIterationDetails struct {
	Name  string `json:"name"`
	Index int    `json:"index"`
}
