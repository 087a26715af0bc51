package stepfn

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/aws/aws-lambda-go/lambda/messages"
)

// Error names the engine raises, as AWS documents them.
const (
	ErrAll                    = "States.ALL"
	ErrTaskFailed             = "States.TaskFailed"
	ErrTimeout                = "States.Timeout"
	ErrHeartbeatTimeout       = "States.HeartbeatTimeout"
	ErrRuntime                = "States.Runtime"
	ErrNoChoiceMatched        = "States.NoChoiceMatched"
	ErrDataLimitExceeded      = "States.DataLimitExceeded"
	ErrIntrinsicFailure       = "States.IntrinsicFailure" // reserved by AWS: intrinsic failures are States.Runtime
	ErrResultPathMatchFailure = "States.ResultPathMatchFailure"
	ErrParameterPathFailure   = "States.ParameterPathFailure"
	ErrBranchFailed           = "States.BranchFailed"
	ErrExceedToleratedFailure = "States.ExceedToleratedFailureThreshold"
	ErrPermissions            = "States.Permissions"
)

// Names of the API errors the Engine returns (Error.Code), as the Step
// Functions API names them.
const (
	CodeInvalidDefinition        = "InvalidDefinition"
	CodeInvalidArn               = "InvalidArn"
	CodeInvalidName              = "InvalidName"
	CodeInvalidExecutionInput    = "InvalidExecutionInput"
	CodeInvalidOutput            = "InvalidOutput"
	CodeInvalidToken             = "InvalidToken"
	CodeStateMachineDoesNotExist = "StateMachineDoesNotExist"
	CodeExecutionDoesNotExist    = "ExecutionDoesNotExist"
	CodeExecutionAlreadyExists   = "ExecutionAlreadyExists"
	CodeExecutionNotRedrivable   = "ExecutionNotRedrivable"
	CodeExecutionLimitExceeded   = "ExecutionLimitExceeded"
	CodeTaskDoesNotExist         = "TaskDoesNotExist"
	CodeTaskTimedOut             = "TaskTimedOut"
	CodeStore                    = "StoreFailure"
)

// Error is an error the Engine's API returns. Code is one of the Code*
// constants; callers branch on it with errors.As.
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string {
	msg := "stepfn: " + e.Code
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

func apiErr(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the Code of the first *Error in err's chain, or "".
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Store errors: a Store returns these (possibly wrapped) so the Engine can tell
// the cases apart.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
)

// stateError is an error inside an execution: what Retry and Catch match on.
type stateError struct {
	Name  string
	Cause string
}

func runtimeErr(format string, args ...any) *stateError {
	return &stateError{Name: ErrRuntime, Cause: fmt.Sprintf(format, args...)}
}

// terminal errors are caught by no Retry or Catch.
func (e *stateError) terminal() bool {
	return e.Name == ErrRuntime || e.Name == ErrDataLimitExceeded
}

// matches reports whether an ErrorEquals list matches the error, with AWS's
// wildcards: States.ALL matches any error but the terminal ones;
// States.TaskFailed matches any but those and States.Timeout.
func (e *stateError) matches(names []string) bool {
	if e.terminal() {
		return false
	}
	for _, n := range names {
		switch n {
		case e.Name, ErrAll:
			return true
		case ErrTaskFailed:
			if e.Name != ErrTimeout {
				return true
			}
		}
	}
	return false
}

// handlerError turns a Go handler's error into the name and cause AWS shows for
// a Lambda function error: the name is the reflect type name of the top-level
// error (the element's for a pointer), as aws-lambda-go reports it; the cause is
// the JSON {"errorMessage", "errorType"} Lambda returns.
func handlerError(err error) *stateError {
	var tf *TaskFailure
	if errors.As(err, &tf) {
		return &stateError{Name: tf.Name, Cause: tf.Cause}
	}
	name, msg := errorType(err), err.Error()
	var ive messages.InvokeResponse_Error
	if errors.As(err, &ive) {
		name, msg = ive.Type, ive.Message
	}
	cause, _ := json.Marshal(struct {
		ErrorMessage string `json:"errorMessage"`
		ErrorType    string `json:"errorType"`
	}{msg, name})
	return &stateError{Name: name, Cause: string(cause)}
}

// errorType mirrors aws-lambda-go's getErrorType.
func errorType(err error) string {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		return t.Elem().Name()
	}
	return t.Name()
}
