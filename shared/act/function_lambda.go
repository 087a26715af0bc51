package act

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go"

	"github.com/ora-runtime/ora/shared/ora"
)

// LambdaAPI is the part of the Lambda API LambdaFunction calls;
// *lambda.Client satisfies it.
type LambdaAPI interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

var _ LambdaAPI = (*lambda.Client)(nil)

// LambdaFunction is a FunctionTarget that invokes a Lambda function (its
// ARN, or an alias's or version's) synchronously with the invocation event.
type LambdaFunction struct {
	Client LambdaAPI
	ARN    string
}

var _ FunctionTarget = LambdaFunction{}

// Describe names the function's ARN.
func (l LambdaFunction) Describe() string { return "lambda " + l.ARN }

// LambdaRetried lists the Lambda error codes that mean the function did not
// run and a later try may succeed (throttling, a service fault, a function
// not ready yet): the SDK's retryer tries again first, then the action
// answers ETRANSIENT, so the Act task's retry runs it again under the same
// idempotency key. Every other error Lambda answers fails the action (the
// function is missing, the payload too large, access denied); a request
// that got no answer is an unknown outcome.
var LambdaRetried = map[string]bool{
	"TooManyRequestsException":   true, // throttled: concurrency or rate
	"ServiceException":           true, // Lambda's own fault
	"EC2ThrottledException":      true,
	"ResourceNotReadyException":  true, // the function is being created or updated
	"ResourceConflictException":  true, // an update is in progress
	"SnapStartNotReadyException": true,
	"SnapStartTimeoutException":  true,
}

// Invoke runs the function once. Errors: *FunctionError (the function
// raised: its errorType and errorMessage), ETRANSIENT (LambdaRetried, or
// Lambda unreachable), *UnknownOutcomeError (no answer: the timeout, a
// connection lost after the request went out), Lambda's other errors.
func (l LambdaFunction) Invoke(ctx context.Context, ev FunctionEvent, body []byte) (FunctionResult, error) {
	ctx, connected := connectedTrace(ctx)
	out, err := l.Client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(l.ARN),
		InvocationType: types.InvocationTypeRequestResponse,
		Payload:        body,
	})
	if err != nil {
		var api smithy.APIError
		switch {
		case errors.As(err, &api) && LambdaRetried[api.ErrorCode()]:
			return FunctionResult{}, ora.Errorf(ora.ETRANSIENT, "lambda invoke %s: %v", l.ARN, err)
		case errors.As(err, &api):
			return FunctionResult{}, fmt.Errorf("lambda invoke %s: %w", l.ARN, err)
		case ctx.Err() != nil || connected():
			return FunctionResult{}, &UnknownOutcomeError{Err: fmt.Errorf("lambda invoke %s: %w", l.ARN, err)}
		}
		return FunctionResult{}, ora.Errorf(ora.ETRANSIENT, "lambda invoke %s: Lambda unreachable: %v", l.ARN, err)
	}
	if out.FunctionError != nil {
		return FunctionResult{}, &FunctionError{Function: ev.Function, Message: lambdaErrorMessage(aws.ToString(out.FunctionError), out.Payload)}
	}
	res := FunctionResult{Output: out.Payload, ID: aws.ToString(out.ExecutedVersion)}
	if len(res.Output) > MaxFunctionOutput {
		res.Output, res.Truncated = res.Output[:MaxFunctionOutput], true
	}
	return res, nil
}

// lambdaErrorMessage reads a function error's payload
// ({"errorType": ..., "errorMessage": ...}).
func lambdaErrorMessage(kind string, payload []byte) string {
	var p struct {
		Type    string `json:"errorType"`
		Message string `json:"errorMessage"`
	}
	if json.Unmarshal(payload, &p) == nil && (p.Type != "" || p.Message != "") {
		return fmt.Sprintf("%s error %s: %s", kind, p.Type, tail([]byte(p.Message), maxFunctionError))
	}
	return kind + " error: " + tail(payload, maxFunctionError)
}
