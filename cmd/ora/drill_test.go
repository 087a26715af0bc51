package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
)

// Every drill ends every wave with a verdict, none stuck, no action run
// twice; the fault drills paused and resumed, the store outage was retried by
// the operator.
func TestDrills(t *testing.T) {
	code, stdout, stderr := runOra(t, "drill", "--waves", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	var res []DrillResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if len(res) < 5 {
		t.Fatalf("%d drills, want at least 5", len(res))
	}
	for _, r := range res {
		t.Run(r.Name, func(t *testing.T) {
			if r.Started != 2 || r.Ended != 2 || r.Stuck != 0 || r.ActionsTwice != 0 || r.Error != "" {
				t.Errorf("got %+v", r)
			}
			switch r.Name {
			case "orient", "reason", "act", "validate":
				if r.Paused < 1 || r.ResumeSeconds <= 0 {
					t.Errorf("a fault drill must pause and resume a wave: %+v", r)
				}
			case "store-outage":
				if r.AutoRetried < 1 {
					t.Errorf("the operator must retry the outage: %+v", r)
				}
			case "crash":
				if r.ResumeSeconds <= 0 {
					t.Errorf("the crash drill measures the recovery: %+v", r)
				}
			}
		})
	}
	if code, _, _ := runOra(t, "drill", "nope"); code != 2 {
		t.Errorf("unknown drill: exit %d, want 2", code)
	}
}

// The counter finds an action performed twice.
func TestActionCounter(t *testing.T) {
	c := &actionCounter{counts: map[string]int{}}
	log := slog.New(c)
	ctx := context.Background()
	log.InfoContext(ctx, "notify", "subject", "s", "decision_id", "d-1")
	log.InfoContext(ctx, "notify", "subject", "s", "decision_id", "d-2")
	if c.twice() != 0 {
		t.Fatalf("two actions once each: twice %d", c.twice())
	}
	log.InfoContext(ctx, "notify", "subject", "s", "decision_id", "d-1")
	if c.twice() != 1 {
		t.Errorf("d-1 twice: got %d, want 1", c.twice())
	}
}
