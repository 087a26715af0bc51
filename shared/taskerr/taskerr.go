// Package taskerr holds the named error types a Lambda that the state machine
// calls returns at the top level. Step Functions sees the Go type name of the
// top-level error value (aws-lambda-go reports reflect.TypeOf(err).Name(), the
// element type's name for a pointer), and the ASL's Retry and Catch match on it:
// a wrapped error arrives as "wrapError" and matches nothing. Handlers therefore
// end with `return out, taskerr.From(err)`.
package taskerr

import (
	"errors"

	"github.com/ora-runtime/ora/shared/ora"
)

// TransientError is a failure worth retrying: a throttle, a timeout, a store
// that was briefly unavailable, an idempotent call still in progress. The only
// error the state machine retries.
type TransientError struct{ Message string }

func (e *TransientError) Error() string { return e.Message }

// InvalidInput means the task's input, or a record it read, is malformed.
type InvalidInput struct{ Message string }

func (e *InvalidInput) Error() string { return e.Message }

// NotFound means a record the task needs does not exist.
type NotFound struct{ Message string }

func (e *NotFound) Error() string { return e.Message }

// Conflict means a conditional write lost: the record is not in the state the
// task expected.
type Conflict struct{ Message string }

func (e *Conflict) Error() string { return e.Message }

// Forbidden means the task was refused by a guard: a reasoning program was
// BLOCKED (a tool outside its whitelist, diagnostic mode, the spend cap), or
// credentials lacked a permission.
type Forbidden struct{ Message string }

func (e *Forbidden) Error() string { return e.Message }

// ProvenanceError means the actor could not prove the decision it was asked to
// run: it is missing from the ledger, its digest differs, or it is not in a
// status that may execute.
type ProvenanceError struct{ Message string }

func (e *ProvenanceError) Error() string { return e.Message }

// ScopeViolation means an action fell outside the decision's scope
// (allowed_operations, forbidden_paths) or the configured allow-lists.
type ScopeViolation struct{ Message string }

func (e *ScopeViolation) Error() string { return e.Message }

// ActionFailed means an action ran and failed (a non-2xx answer, a refused
// write); it is recorded as evidence before this is returned.
type ActionFailed struct{ Message string }

func (e *ActionFailed) Error() string { return e.Message }

// OutcomeUnknown means an action may or may not have reached its target (the
// request went out and no answer came back); it is recorded as evidence with
// outcome "unknown", the decision moves to unknown, and the operator is asked.
type OutcomeUnknown struct{ Message string }

func (e *OutcomeUnknown) Error() string { return e.Message }

// ValidationFailed means a validator recorded a FAIL verdict.
type ValidationFailed struct{ Message string }

func (e *ValidationFailed) Error() string { return e.Message }

// InternalError is anything else.
type InternalError struct{ Message string }

func (e *InternalError) Error() string { return e.Message }

// Names lists the name of every type in this package, as Step Functions sees
// it; a test checks each ErrorEquals in the ASL against it.
var Names = []string{
	"TransientError", "InvalidInput", "NotFound", "Conflict", "Forbidden", "ProvenanceError",
	"ScopeViolation", "ActionFailed", "OutcomeUnknown", "ValidationFailed", "InternalError",
}

// From returns err as one of this package's types, so that it reaches Step
// Functions under a name the ASL can match: errors already of these types are
// returned as they are (even when wrapped), domain errors are mapped by code,
// anything else becomes an InternalError. From(nil) is nil.
func From(err error) error {
	if err == nil {
		return nil
	}
	var (
		te *TransientError
		ii *InvalidInput
		nf *NotFound
		cf *Conflict
		fb *Forbidden
		pe *ProvenanceError
		sv *ScopeViolation
		af *ActionFailed
		ou *OutcomeUnknown
		vf *ValidationFailed
		ie *InternalError
	)
	switch {
	case errors.As(err, &te):
		return te
	case errors.As(err, &ii):
		return ii
	case errors.As(err, &nf):
		return nf
	case errors.As(err, &cf):
		return cf
	case errors.As(err, &fb):
		return fb
	case errors.As(err, &pe):
		return pe
	case errors.As(err, &sv):
		return sv
	case errors.As(err, &af):
		return af
	case errors.As(err, &ou):
		return ou
	case errors.As(err, &vf):
		return vf
	case errors.As(err, &ie):
		return ie
	}
	msg := err.Error()
	switch ora.ErrorCode(err) {
	case ora.ETRANSIENT:
		return &TransientError{Message: msg}
	case ora.EINVALID:
		return &InvalidInput{Message: msg}
	case ora.ENOTFOUND:
		return &NotFound{Message: msg}
	case ora.ECONFLICT:
		return &Conflict{Message: msg}
	case ora.EFORBIDDEN, ora.EUNAUTHORIZED:
		return &Forbidden{Message: msg}
	}
	return &InternalError{Message: msg}
}
