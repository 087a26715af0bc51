package console_test

import (
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/telemetry"
)

// The nav says how many decisions wait for a human, on every page.
func TestNavCountsPendingApprovals(t *testing.T) {
	s, _ := server(t, false)
	for _, tt := range []struct {
		pending float64
		want    string
	}{{0, `>Approvals</a>`}, {3, `>Approvals <span class="count" title="3 decisions wait for a human">3</span></a>`}} {
		s.Metrics = metrics{telemetry.EscalationsPending: tt.pending}
		for _, path := range []string{"/console/", "/console/metrics"} {
			if code, body := get(t, s.Handler(), path, nil); code != 200 || !strings.Contains(body, tt.want) {
				t.Errorf("%s with %v pending: %d, want the nav to say %s", path, tt.pending, code, tt.want)
			}
		}
	}
}
