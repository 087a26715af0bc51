// Package stepfn is a local AWS Step Functions engine: it runs Amazon States
// Language definitions (JSONPath query language) in-process, with the semantics
// AWS documents for Standard workflows: every state type, input and output
// processing, intrinsic functions, Retry and Catch, callbacks by task token,
// redrive, and an injectable clock so that Wait states, retry intervals and
// timeouts take no real time in tests.
//
// Tasks are dispatched to Go handlers registered by Lambda function name, so a
// handler written for aws-lambda-go (lambda.NewHandler(fn)) runs unchanged:
//
//	e := stepfn.NewEngine()
//	e.RegisterHandler("plan", lambda.NewHandler(planHandler))
//	arn, err := e.CreateStateMachine("wave", definition)
//	exec, err := e.StartExecution(ctx, arn, "signal-1", input)
//	result, err := e.Wait(ctx, exec)
//
// Tasks can also be answered by state name from a tasks file (Options.Tasks),
// as `ora statemachine run` does. The engine's API (CreateStateMachine,
// DescribeStateMachine, ListStateMachines, StartExecution, ListExecutions,
// GetExecutionHistory, ...) is what package sfnapi serves as the AWS Step
// Functions API.
//
// Executions and their history live in a Store: MemoryStore by default, or a
// durable one (shared/sqlite's ExecutionStore) with which executions survive a
// restart and Resume continues the RUNNING ones.
package stepfn
