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
