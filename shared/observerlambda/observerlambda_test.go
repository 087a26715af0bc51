package observerlambda

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
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
		{"a bad coalescing window", map[string]string{"ORA_LEDGER_TABLE": "t", "ORA_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:1:stateMachine:w",
			"ORA_COALESCE_WINDOW_MS": "half a second"}, []string{"ORA_COALESCE_WINDOW_MS"}},
		{"bad coalescing sources", map[string]string{"ORA_LEDGER_TABLE": "t", "ORA_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:1:stateMachine:w",
			"ORA_COALESCE_WINDOW_MS": "500", "ORA_COALESCE_SOURCES": `["slack"]`}, []string{"ORA_COALESCE_SOURCES"}},
		{"coalescing", map[string]string{"ORA_LEDGER_TABLE": "t", "ORA_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:1:stateMachine:w",
			"ORA_COALESCE_WINDOW_MS": "500", "ORA_COALESCE_SOURCES": `{"slack":"off"}`}, nil},
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
				var o observe.Options
				d.Options(&o)
				d.coalescer(&o)
				wantWindow := time.Duration(0)
				if tt.env["ORA_COALESCE_WINDOW_MS"] != "" {
					wantWindow = 500 * time.Millisecond
				}
				if o.Coalescer != d.Ledger || o.Coalesce.Window != wantWindow || (wantWindow > 0 && o.Coalesce.Sources["slack"] != observe.CoalesceOff) {
					t.Errorf("coalescing options %+v, want the ledger claiming windows of %v", o.Coalesce, wantWindow)
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
