package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/ora-runtime/ora/shared/ora"
)

// ora:retention reaches every function as ORA_RETENTION, in the form the
// ledger reads (dynamo.FromEnv), and sets the jobs bucket's lifecycle; the
// defaults are the ledger's own.
func TestRetentionReachesEveryFunction(t *testing.T) {
	synth(t)
	for _, tt := range []struct {
		name      string
		tmpl      map[string]any
		retention string
		jobsDays  int
	}{
		{"defaults", tmpl, ora.DefaultRetention().String(), 7},
		{"ora:retention", guardrailTemplate(), "observed-fact=336h0m0s,orientation-packet=168h0m0s", 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fns := 0
			for id, r := range tt.tmpl["Resources"].(map[string]any) {
				res := r.(map[string]any)
				props, _ := res["Properties"].(map[string]any)
				switch res["Type"] {
				case "AWS::Lambda::Function":
					if !strings.HasPrefix(fmt.Sprint(props["Description"]), "ora ") {
						continue
					}
					fns++
					vars, _ := props["Environment"].(map[string]any)["Variables"].(map[string]any)
					got := fmt.Sprint(vars[ora.EnvRetention])
					if got != tt.retention {
						t.Errorf("%s: %s=%q, want %q", props["Description"], ora.EnvRetention, got, tt.retention)
					}
					if _, err := ora.ParseRetention(got); err != nil {
						t.Errorf("%s: the ledger cannot read %q: %v", props["Description"], got, err)
					}
				case "AWS::S3::Bucket":
					if !strings.HasPrefix(id, "Jobs") {
						continue
					}
					b, _ := json.Marshal(props["LifecycleConfiguration"])
					if !strings.Contains(string(b), fmt.Sprintf(`"ExpirationInDays":%d`, tt.jobsDays)) {
						t.Errorf("jobs bucket lifecycle %s, want %d days", b, tt.jobsDays)
					}
				}
			}
			if fns < len(FunctionNames(root)) {
				t.Errorf("%d functions checked, want %d", fns, len(FunctionNames(root)))
			}
		})
	}
}

// A retention the ledger would refuse stops the synth with a message naming
// the key.
func TestRetentionRefused(t *testing.T) {
	for name, v := range map[string]any{
		"packets outlive facts": map[string]any{"factsDays": 7, "packetsDays": 30, "jobsDays": 7},
		"no jobs retention":     map[string]any{"factsDays": 30, "packetsDays": 30, "jobsDays": 0},
	} {
		t.Run(name, func(t *testing.T) {
			app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"ora:retention": v}})
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "ora:retention") {
					t.Errorf("panic %v, want one naming ora:retention", r)
				}
			}()
			ConfigFromContext(app)
		})
	}
}
