package orient_test

import (
	"context"
	"testing"

	"github.com/ora-runtime/ora/shared/orient"
)

// memJobs is a job store in memory.
type memJobs map[string][]byte

func (m memJobs) PutJobs(_ context.Context, key string, body []byte) (string, error) {
	m[key] = body
	return "jobs", nil
}

// A fan-out no larger than InlineMaxJobs (and than the profile's
// max_concurrency) is handed to the state machine inline, for an inline Map;
// a larger one only by its key, for a Distributed Map. The jobs are written
// to the store either way.
func TestStageInline(t *testing.T) {
	l := openLedger(t)
	sig := seedWorld(t, l) // the default profile: 4 jobs, max_concurrency 128
	tests := []struct {
		name   string
		env    string
		inline bool
	}{
		{"the default (40) runs 4 jobs inline", "", true},
		{"a limit of 4 runs 4 jobs inline", "4", true},
		{"a limit of 3 runs 4 jobs in a Distributed Map", "3", false},
		{"0: every fan-out is a Distributed Map", "0", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := orient.EnvOptions(func(k string) string {
				if k == "ORA_INLINE_FETCH_MAX_JOBS" {
					return tt.env
				}
				return ""
			})
			if err != nil {
				t.Fatal(err)
			}
			store := memJobs{}
			st, err := orient.NewPlanner(l, env, func(o *orient.Options) { o.Jobs = store }).Stage(context.Background(), sig.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Jobs != nil; got != tt.inline {
				t.Errorf("inline: got %v (%d jobs), want %v", got, len(st.Jobs), tt.inline)
			}
			if tt.inline && len(st.Jobs) != st.JobCount {
				t.Errorf("inline jobs: got %d, want %d", len(st.Jobs), st.JobCount)
			}
			if len(store[st.JobsKey]) == 0 {
				t.Errorf("no jobs written under %s", st.JobsKey)
			}
		})
	}
}
