package observerlambda

import (
	"context"
	"strings"
	"testing"
)

func TestFromEnv(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	tests := []struct {
		name string
		env  map[string]string
		want []string // in the error; none: no error
	}{
		{"nothing set", map[string]string{}, []string{"observe-x: configuration", "ORA_LEDGER_TABLE is not set", "ORA_STATE_MACHINE_ARN is not set"}},
		{"a bad timeout", map[string]string{"ORA_LEDGER_TABLE": "t", "ORA_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:1:stateMachine:w",
			"ORA_ESCALATION_TIMEOUT_SECONDS": "soon"}, []string{"ORA_ESCALATION_TIMEOUT_SECONDS"}},
		{"complete", map[string]string{"ORA_LEDGER_TABLE": "t", "ORA_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:1:stateMachine:w"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("AWS_REGION", "us-east-1")
			d, err := FromEnv(context.Background(), "observe-x", env(tt.env))
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				if d.Ledger == nil || d.Starter == nil || d.Options == nil {
					t.Fatalf("incomplete deps: %+v", d)
				}
				if _, err := d.Observer(nil); err != nil {
					t.Errorf("Observer: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
