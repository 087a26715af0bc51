package taskerr

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/ora-runtime/ora/shared/ora"
)

// typeName mirrors aws-lambda-go's errorType: the element name for a pointer.
func typeName(err error) string {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		return t.Elem().Name()
	}
	return t.Name()
}

func TestFromNamesWhatStepFunctionsSees(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"transient domain error", ora.Transient(fmt.Errorf("throttled"), "ledger"), "TransientError"},
		{"wrapped transient", fmt.Errorf("act: %w", ora.Transient(nil, "x")), "TransientError"},
		{"invalid", ora.Invalid("decision.tier", "bad"), "InvalidInput"},
		{"not found", ora.Errorf(ora.ENOTFOUND, "no decision"), "NotFound"},
		{"conflict", ora.Conflict(nil, "taken"), "Conflict"},
		{"forbidden", ora.Errorf(ora.EFORBIDDEN, "blocked"), "Forbidden"},
		{"wrapped scope violation", fmt.Errorf("act: %w", &ScopeViolation{"no"}), "ScopeViolation"},
		{"plain error", fmt.Errorf("boom"), "InternalError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := typeName(From(tt.err))
			if got != tt.want {
				t.Errorf("From(%v) is a %s, want %s", tt.err, got, tt.want)
			}
		})
	}
	if From(nil) != nil {
		t.Errorf("From(nil) is not nil")
	}
}

func TestNamesListsEveryType(t *testing.T) {
	all := []error{&TransientError{}, &InvalidInput{}, &NotFound{}, &Conflict{}, &Forbidden{}, &ProvenanceError{},
		&ScopeViolation{}, &ActionFailed{}, &OutcomeUnknown{}, &ValidationFailed{}, &InternalError{}}
	if len(all) != len(Names) {
		t.Fatalf("Names has %d entries, the package has %d types", len(Names), len(all))
	}
	for i, e := range all {
		if typeName(e) != Names[i] {
			t.Errorf("Names[%d] = %s, want %s", i, Names[i], typeName(e))
		}
	}
}
