package sfnapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/ora-runtime/ora/shared/stepfn"
)

// apiError is an error as the API answers it: an HTTP status, AWS's error
// code (the SDKs' exception type) and a message.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.code + ": " + e.msg }

// Error codes the API answers with, as AWS names them.
const (
	codeValidation        = "ValidationException"
	codeInvalidArn        = "InvalidArn"
	codeInvalidToken      = "InvalidToken"
	codeAlreadyExists     = "StateMachineAlreadyExists"
	codeTypeNotSupported  = "StateMachineTypeNotSupported"
	codeInternal          = "InternalFailure"
	codeInvalidDefinition = stepfn.CodeInvalidDefinition
)

// engineCodes maps each error code of the engine to the API's: the status and
// the code the SDKs turn into their exception types. Every engine code is in
// the table (a test checks it); StoreFailure is internal.
var engineCodes = map[string]struct {
	status int
	code   string
}{
	stepfn.CodeInvalidDefinition:        {http.StatusBadRequest, "InvalidDefinition"},
	stepfn.CodeInvalidArn:               {http.StatusBadRequest, "InvalidArn"},
	stepfn.CodeInvalidName:              {http.StatusBadRequest, "InvalidName"},
	stepfn.CodeInvalidExecutionInput:    {http.StatusBadRequest, "InvalidExecutionInput"},
	stepfn.CodeInvalidOutput:            {http.StatusBadRequest, "InvalidOutput"},
	stepfn.CodeInvalidToken:             {http.StatusBadRequest, "InvalidToken"},
	stepfn.CodeStateMachineDoesNotExist: {http.StatusBadRequest, "StateMachineDoesNotExist"},
	stepfn.CodeExecutionDoesNotExist:    {http.StatusBadRequest, "ExecutionDoesNotExist"},
	stepfn.CodeExecutionAlreadyExists:   {http.StatusBadRequest, "ExecutionAlreadyExists"},
	stepfn.CodeExecutionNotRedrivable:   {http.StatusBadRequest, "ExecutionNotRedrivable"},
	stepfn.CodeExecutionLimitExceeded:   {http.StatusBadRequest, "ExecutionLimitExceeded"},
	stepfn.CodeTaskDoesNotExist:         {http.StatusBadRequest, "TaskDoesNotExist"},
	stepfn.CodeTaskTimedOut:             {http.StatusBadRequest, "TaskTimedOut"},
	stepfn.CodeStore:                    {http.StatusInternalServerError, codeInternal},
}

// translate turns an engine error into the API's; anything unknown is logged
// and answered as an internal error.
func (s *Server) translate(action string, err error) *apiError {
	var se *stepfn.Error
	if errors.As(err, &se) {
		if m, ok := engineCodes[se.Code]; ok && m.code != codeInternal {
			return &apiError{status: m.status, code: m.code, msg: se.Message}
		}
	}
	s.log.Error("sfnapi: internal error", "action", action, "err", err)
	return internal()
}

func validation(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: codeValidation, msg: fmt.Sprintf(format, args...)}
}

func clientErr(code, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: code, msg: fmt.Sprintf(format, args...)}
}

func internal() *apiError {
	return &apiError{status: http.StatusInternalServerError, code: codeInternal, msg: "internal error"}
}

// writeError answers err as AWS JSON 1.0 does: the code in X-Amzn-ErrorType
// and in the body's __type, with the message.
func writeError(w http.ResponseWriter, e *apiError) {
	b, _ := json.Marshal(struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{e.code, e.msg})
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-ErrorType", e.code)
	w.WriteHeader(e.status)
	_, _ = w.Write(b)
}
