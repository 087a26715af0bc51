// Package sfn adapts AWS Step Functions (aws-sdk-go-v2/service/sfn) to ora: it
// starts a wave as an execution named after its signal id, and settles the
// task tokens of .waitForTaskToken states. SDK errors are translated to ora's
// error kinds at this boundary.
package sfn

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awssfn "github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"

	"github.com/ora-runtime/ora/shared/ora"
)

// API is the part of the Step Functions API this package calls; the SDK's
// *sfn.Client satisfies it.
type API interface {
	StartExecution(ctx context.Context, in *awssfn.StartExecutionInput, opts ...func(*awssfn.Options)) (*awssfn.StartExecutionOutput, error)
	DescribeExecution(ctx context.Context, in *awssfn.DescribeExecutionInput, opts ...func(*awssfn.Options)) (*awssfn.DescribeExecutionOutput, error)
	SendTaskSuccess(ctx context.Context, in *awssfn.SendTaskSuccessInput, opts ...func(*awssfn.Options)) (*awssfn.SendTaskSuccessOutput, error)
	SendTaskFailure(ctx context.Context, in *awssfn.SendTaskFailureInput, opts ...func(*awssfn.Options)) (*awssfn.SendTaskFailureOutput, error)
}

var _ API = (*awssfn.Client)(nil)

// Client starts waves on one state machine and settles task tokens.
type Client struct {
	api          API
	stateMachine string
}

// New returns a Client that starts executions of the state machine with the
// given ARN through api.
func New(api API, stateMachineARN string) *Client {
	return &Client{api: api, stateMachine: stateMachineARN}
}

// StartWave starts an execution named signalID with input. It is idempotent by
// name: when the execution already exists (running, or closed within Step
// Functions' 90-day window) it returns nil, so a redelivered signal never starts
// a second wave. It satisfies observe.WaveStarter. Errors: EINVALID (a bad name
// or input), ENOTFOUND (no such state machine), ETRANSIENT (throttled, the
// execution limit, a timeout), EINTERNAL.
func (c *Client) StartWave(ctx context.Context, signalID string, input []byte) error {
	_, err := c.api.StartExecution(ctx, &awssfn.StartExecutionInput{
		StateMachineArn: aws.String(c.stateMachine),
		Name:            aws.String(signalID),
		Input:           aws.String(string(input)),
	})
	var exists *types.ExecutionAlreadyExists
	if errors.As(err, &exists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sfn: start execution %s: %w", signalID, translate(err))
	}
	return nil
}

// WaveExists reports whether the execution named signalID exists (running, or
// closed within Step Functions' 90-day window). It satisfies
// observe.WaveFinder. Errors: EINVALID (a bad name), ETRANSIENT, EINTERNAL.
func (c *Client) WaveExists(ctx context.Context, signalID string) (bool, error) {
	arn, err := ExecutionARN(c.stateMachine, signalID)
	if err != nil {
		return false, fmt.Errorf("sfn: describe execution %s: %w", signalID, err)
	}
	_, err = c.api.DescribeExecution(ctx, &awssfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	var missing *types.ExecutionDoesNotExist
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &missing):
		return false, nil
	}
	return false, fmt.Errorf("sfn: describe execution %s: %w", signalID, translate(err))
}

// SendTaskSuccess completes the waiting task identified by token with output
// (JSON). Errors: EINVALID (a malformed token or output), ENOTFOUND (the task no
// longer exists), ECONFLICT (the task already timed out), ETRANSIENT, EINTERNAL.
func (c *Client) SendTaskSuccess(ctx context.Context, token string, output []byte) error {
	_, err := c.api.SendTaskSuccess(ctx, &awssfn.SendTaskSuccessInput{
		TaskToken: aws.String(token),
		Output:    aws.String(string(output)),
	})
	if err != nil {
		return fmt.Errorf("sfn: send task success: %w", translate(err))
	}
	return nil
}

// SendTaskFailure fails the waiting task identified by token with an error name
// and cause. Errors: as SendTaskSuccess.
func (c *Client) SendTaskFailure(ctx context.Context, token, errorName, cause string) error {
	_, err := c.api.SendTaskFailure(ctx, &awssfn.SendTaskFailureInput{
		TaskToken: aws.String(token),
		Error:     aws.String(errorName),
		Cause:     aws.String(cause),
	})
	if err != nil {
		return fmt.Errorf("sfn: send task failure: %w", translate(err))
	}
	return nil
}

// translate maps an SDK error to an ora error kind, keeping it as the cause.
func translate(err error) error {
	var (
		invalidToken  *types.InvalidToken
		invalidInput  *types.InvalidExecutionInput
		invalidOutput *types.InvalidOutput
		invalidName   *types.InvalidName
		invalidArn    *types.InvalidArn
		validation    *types.ValidationException
		missing       *types.MissingRequiredParameter
		noMachine     *types.StateMachineDoesNotExist
		noTask        *types.TaskDoesNotExist
		timedOut      *types.TaskTimedOut
		deleting      *types.StateMachineDeleting
		limit         *types.ExecutionLimitExceeded
		kmsThrottle   *types.KmsThrottlingException
	)
	switch {
	case errors.As(err, &invalidToken), errors.As(err, &invalidInput), errors.As(err, &invalidOutput),
		errors.As(err, &invalidName), errors.As(err, &invalidArn), errors.As(err, &validation),
		errors.As(err, &missing):
		return &ora.Error{Code: ora.EINVALID, Message: "step functions refused the request", Err: err}
	case errors.As(err, &noMachine), errors.As(err, &noTask):
		return &ora.Error{Code: ora.ENOTFOUND, Message: "step functions has no such resource", Err: err}
	case errors.As(err, &timedOut), errors.As(err, &deleting):
		return &ora.Error{Code: ora.ECONFLICT, Message: "step functions resource is no longer in a state that accepts this", Err: err}
	case errors.As(err, &limit), errors.As(err, &kmsThrottle), isRetryable(err):
		return ora.Transient(err, "step functions is busy or unreachable")
	}
	// An operation only decodes the errors its model declares; anything else
	// arrives as a generic API error carrying the code.
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "InvalidToken", "InvalidOutput", "InvalidExecutionInput", "InvalidName", "InvalidArn", "ValidationException":
			return &ora.Error{Code: ora.EINVALID, Message: "step functions refused the request", Err: err}
		case "TaskDoesNotExist", "StateMachineDoesNotExist":
			return &ora.Error{Code: ora.ENOTFOUND, Message: "step functions has no such resource", Err: err}
		case "TaskTimedOut":
			return &ora.Error{Code: ora.ECONFLICT, Message: "step functions resource is no longer in a state that accepts this", Err: err}
		}
	}
	return &ora.Error{Code: ora.EINTERNAL, Message: "step functions call failed", Err: err}
}

// isRetryable reports throttling, timeouts and connection failures.
func isRetryable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "ThrottlingException", "ServiceUnavailable", "InternalServerError", "RequestLimitExceeded":
			return true
		}
	}
	var maxAttempts *retry.MaxAttemptsError
	if errors.As(err, &maxAttempts) {
		return true
	}
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}
