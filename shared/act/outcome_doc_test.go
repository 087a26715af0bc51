package act_test

import (
	"os"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/act"
)

// TestOutcomeTableInTheDocs: docs/actions.md prints act.Outcomes, row for row.
func TestOutcomeTableInTheDocs(t *testing.T) {
	b, err := os.ReadFile("../../docs/actions.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range act.Outcomes {
		row := "| " + r.Case + " | " + r.Outcome + " | " + r.Why + " |"
		if !strings.Contains(string(b), row) {
			t.Errorf("docs/actions.md lacks the row\n%s", row)
		}
	}
}

// TestActionTypesInTheDocs: docs/actions.md's table of action types has a
// row for every type the actor can run.
func TestActionTypesInTheDocs(t *testing.T) {
	b, err := os.ReadFile("../../docs/actions.md")
	if err != nil {
		t.Fatal(err)
	}
	types := []string{act.TypeFunctionInvoke, act.TypeMCPCall}
	for _, d := range act.StandardCatalogue(act.Config{}) {
		types = append(types, d.Type)
	}
	for _, typ := range types {
		if !strings.Contains(string(b), "\n| `"+typ+"`") && !strings.Contains(string(b), "`, `"+typ+"` |") {
			t.Errorf("docs/actions.md's table of action types has no row for %s", typ)
		}
	}
}
