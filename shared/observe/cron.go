package observe

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/ora-runtime/ora/shared/ora"
)

// Job is a local schedule: Expression is a standard 5-field cron expression or
// a descriptor (@hourly, @every 10m), evaluated in UTC.
type Job struct {
	Name       string `json:"name" yaml:"name"`
	Expression string `json:"expression" yaml:"expression"`
}

// Scheduler fires local schedules into an Observer, the embedded runtime's
// stand-in for EventBridge Scheduler. Each firing is a ScheduleEvent whose
// dedup key is the job name and the scheduled time.
type Scheduler struct {
	obs  *Observer
	cron *cron.Cron
}

// NewScheduler parses jobs and returns a Scheduler that is not yet running.
// Errors: EINVALID (an unnamed or duplicate job, a bad expression).
func NewScheduler(obs *Observer, jobs []Job) (*Scheduler, error) {
	s := &Scheduler{obs: obs, cron: cron.New(cron.WithLocation(time.UTC))}
	seen := map[string]bool{}
	for _, j := range jobs {
		if j.Name == "" || seen[j.Name] {
			return nil, ora.Invalid("schedules.name", "%q: every job needs a unique name", j.Name)
		}
		seen[j.Name] = true
		sched, err := cron.ParseStandard(j.Expression)
		if err != nil {
			return nil, ora.Invalid("schedules.expression", "job %s: %v", j.Name, err)
		}
		s.cron.Schedule(sched, cron.FuncJob(func() {
			// robfig/cron fires at whole seconds, just after the scheduled
			// time: truncating recovers the scheduled time.
			at := time.Now().UTC().Truncate(time.Second)
			if _, err := s.Fire(context.Background(), j, at); err != nil {
				obs.opts.Logger.Error("schedule firing failed", "job", j.Name, "scheduled_time", at, "error", err)
			}
		}))
	}
	return s, nil
}

// Fire captures one firing of job scheduled at at, as the cron loop does.
// Errors: as Observer.Schedule.
func (s *Scheduler) Fire(ctx context.Context, job Job, at time.Time) (Receipt, error) {
	raw, err := json.Marshal(ScheduleEvent{EventSource: EventSourceCron, Job: job.Name, Expression: job.Expression, ScheduledTime: at.UTC()})
	if err != nil {
		return Receipt{}, fmt.Errorf("schedule %s: %w", job.Name, err)
	}
	return s.obs.Schedule(ctx, raw)
}

// Start runs the schedules in the background.
func (s *Scheduler) Start() { s.cron.Start() }

// Stop stops the schedules; the returned context is done when running firings
// have finished.
func (s *Scheduler) Stop() context.Context { return s.cron.Stop() }
