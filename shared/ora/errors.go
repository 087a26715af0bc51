package ora

import (
	"errors"
	"fmt"
)

// Error codes: the handful of kinds every layer speaks. Adapters translate their
// own failures into these at the boundary; the HTTP layer maps them to statuses.
const (
	ECONFLICT     = "conflict"     // the write lost a conditional check
	EINTERNAL     = "internal"     // a bug or an unexpected failure
	EINVALID      = "invalid"      // the input is malformed; Field names what
	ENOTFOUND     = "not_found"    // the thing asked for does not exist
	EUNAUTHORIZED = "unauthorized" // no credentials, or bad ones
	EFORBIDDEN    = "forbidden"    // credentials lack the needed scope
	ETRANSIENT    = "transient"    // throttled or timed out; safe to retry
)

// Error is the domain error. Code is one of the E* constants; Field names the
// offending field for EINVALID; Existing carries what is already stored when a
// conditional write loses (ECONFLICT): an Entry, a DecisionState, a Commitment,
// or whatever the store's record type is.
type Error struct {
	Code     string
	Field    string
	Message  string
	Existing any
	Err      error
}

// Error renders the code, the field when there is one, the message and the cause.
func (e *Error) Error() string {
	msg := e.Code
	if e.Field != "" {
		msg += ": " + e.Field
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid returns an EINVALID error naming the offending field.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Code: EINVALID, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Conflict returns an ECONFLICT error carrying the record already stored.
func Conflict(existing any, format string, args ...any) *Error {
	return &Error{Code: ECONFLICT, Existing: existing, Message: fmt.Sprintf(format, args...)}
}

// Transient wraps err as an ETRANSIENT error: the caller may retry.
func Transient(err error, format string, args ...any) *Error {
	return &Error{Code: ETRANSIENT, Message: fmt.Sprintf(format, args...), Err: err}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL for
// any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorField returns the Field of the first *Error in err's chain, or "".
func ErrorField(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}

// ErrorMessage returns a message safe to show a client: the domain message for
// an *Error, "internal error" for anything else.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Code != EINTERNAL {
		if e.Field != "" {
			return e.Field + ": " + e.Message
		}
		return e.Message
	}
	return "internal error"
}

// Existing returns the record a conflicting write found, typed as T, when err
// is an ECONFLICT *Error carrying one.
func Existing[T any](err error) (T, bool) {
	var e *Error
	var zero T
	if !errors.As(err, &e) || e.Code != ECONFLICT {
		return zero, false
	}
	switch v := e.Existing.(type) {
	case T:
		return v, true
	case *T:
		if v != nil {
			return *v, true
		}
	}
	return zero, false
}
