package validate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/validate"
)

// TestTechnicalMCPCall: an mcp.call passes the technical validator when
// its receipt names the planned tool and carries the digest of a result.
func TestTechnicalMCPCall(t *testing.T) {
	cases := []struct {
		name    string
		receipt act.Receipt
		want    ora.Verdict
	}{
		{"the planned tool answered", act.Receipt{Target: "mcp://tracker/add_label", Output: `{"content":[]}`, OutputDigest: ora.Digest([]byte(`{"content":[]}`))}, ora.Pass},
		{"no result", act.Receipt{Target: "mcp://tracker/add_label"}, ora.Fail},
		{"another tool", act.Receipt{Target: "mcp://tracker/close_issue", OutputDigest: ora.Digest([]byte(`{}`))}, ora.Fail},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := acttest.DB(t)
			params := acttest.Params(t, map[string]any{"server": "tracker", "tool": "add_label", "arguments": map[string]any{"number": 7, "label": "bug"}})
			de := acttest.Record(t, db, acttest.Decision("d1", "s1", ora.Scope{AllowedOperations: []string{act.TypeMCPCall}}, ora.Action{Type: act.TypeMCPCall, Parameters: params}))
			r := c.receipt
			r.Type = act.TypeMCPCall
			ev := act.Evidence{DecisionID: "d1", DecisionDigest: de.Digest, SignalID: "s1", Index: 0, Type: act.TypeMCPCall, Parameters: params,
				Targets: []string{"mcp://tracker/add_label"}, Outcome: act.OutcomeSuccess, Receipt: &r}
			e, err := ora.NewEntry("s1", ora.KindExecutionEvidence, "0", ev)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Append(context.Background(), e); err != nil {
				t.Fatal(err)
			}
			res, err := validate.New(db).Validate(context.Background(), ora.ValidatorTechnical, "s1", "d1")
			switch {
			case c.want == ora.Pass && (err != nil || res.Verdict != ora.Pass):
				t.Errorf("verdict %s, err %v: want PASS", res.Verdict, err)
			case c.want == ora.Fail && (err == nil || !strings.Contains(err.Error(), "FAIL") || !strings.Contains(err.Error(), "mcp.call")):
				t.Errorf("err %v: want the technical validator to FAIL the mcp.call", err)
			}
		})
	}
}
