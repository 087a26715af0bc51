package dynamo_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/ora"
)

// A function's ledger takes its retention from ORA_RETENTION (the stack's
// ora:retention), the default without it, and refuses one it cannot read.
func TestFromEnvRetention(t *testing.T) {
	for _, tt := range []struct {
		name, env string
		set       bool
		want      ora.Retention
		err       string
	}{
		{"unset: the default", "", false, ora.DefaultRetention(), ""},
		{"set", "observed-fact=336h,orientation-packet=168h", true, ora.Retention{ora.KindObservedFact: 336 * time.Hour, ora.KindOrientationPacket: 168 * time.Hour}, ""},
		{"empty: nothing expires", "", true, ora.Retention{}, ""},
		{"unreadable", "observed-fact=14d", true, nil, ora.EnvRetention},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.set {
				t.Setenv(ora.EnvRetention, tt.env)
			}
			opt, err := dynamo.FromEnv(aws.Config{Region: "us-east-1"})
			if tt.err != "" {
				if ora.ErrorCode(err) != ora.EINVALID || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want EINVALID naming %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var o dynamo.Options
			opt(&o)
			if o.Retention.String() != tt.want.String() || len(o.Retention) != len(tt.want) {
				t.Errorf("retention %q, want %q", o.Retention, tt.want)
			}
		})
	}
}
