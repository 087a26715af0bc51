package sfnapi

import (
	"net/http"
	"testing"

	"github.com/ora-runtime/ora/shared/stepfn"
)

// TestEngineCodes: every error code of the engine has a row, client errors
// keep AWS's name and answer 400, and a store failure is internal.
func TestEngineCodes(t *testing.T) {
	codes := []string{
		stepfn.CodeInvalidDefinition, stepfn.CodeInvalidArn, stepfn.CodeInvalidName, stepfn.CodeInvalidExecutionInput,
		stepfn.CodeInvalidOutput, stepfn.CodeInvalidToken, stepfn.CodeStateMachineDoesNotExist, stepfn.CodeExecutionDoesNotExist,
		stepfn.CodeExecutionAlreadyExists, stepfn.CodeExecutionNotRedrivable, stepfn.CodeExecutionLimitExceeded, stepfn.CodeTaskDoesNotExist, stepfn.CodeTaskTimedOut,
		stepfn.CodeStore,
	}
	if len(codes) != len(engineCodes) {
		t.Errorf("the table has %d rows, the engine %d codes", len(engineCodes), len(codes))
	}
	s := New(stepfn.NewEngine())
	for _, code := range codes {
		t.Run(code, func(t *testing.T) {
			row, ok := engineCodes[code]
			if !ok {
				t.Fatalf("no row for %s", code)
			}
			got := s.translate("Test", &stepfn.Error{Code: code, Message: "m"})
			if code == stepfn.CodeStore {
				if got.status != http.StatusInternalServerError || got.code != codeInternal || got.msg != "internal error" {
					t.Errorf("store failure = %+v, want an internal error that says no more", got)
				}
				return
			}
			if got.status != http.StatusBadRequest || got.code != code || row.code != code || got.msg != "m" {
				t.Errorf("%s = %+v", code, got)
			}
		})
	}
}
