package telemetry

import (
	"fmt"
	"slices"
)

// Metrics records ora's measurements. Names come from Catalog; labels are
// key, value pairs drawn from small fixed sets (an outcome, a band, a stage),
// never ids. Implementations are safe for concurrent use and never fail the
// caller: a measurement that cannot be written is dropped.
type Metrics interface {
	// Add adds delta (>= 0) to the counter name.
	Add(name string, delta float64, labels ...string)
	// Observe records one value of the histogram name.
	Observe(name string, value float64, labels ...string)
	// Set sets the gauge name.
	Set(name string, value float64, labels ...string)
}

// Discard is a Metrics that records nothing.
var Discard Metrics = discard{}

type discard struct{}

func (discard) Add(string, float64, ...string)     {}
func (discard) Observe(string, float64, ...string) {}
func (discard) Set(string, float64, ...string)     {}

// Kind is a metric's type.
type Kind string

// The metric kinds.
const (
	Counter   Kind = "counter"
	Histogram Kind = "histogram"
	Gauge     Kind = "gauge"
)

// Def describes one metric: its Prometheus name (the EMF metric has the same
// name), kind, unit (for EMF), labels and meaning.
type Def struct {
	Name   string
	Kind   Kind
	Unit   string // CloudWatch unit: Count, Seconds, None
	Labels []string
	Help   string
}

// The metric names ora records.
const (
	WavesStarted        = "ora_waves_started_total"
	Waves               = "ora_waves_total"
	StageDuration       = "ora_stage_duration_seconds"
	StageFailures       = "ora_stage_failures_total"
	Decisions           = "ora_decisions_total"
	DecisionConfidence  = "ora_decision_confidence"
	Actions             = "ora_actions_total"
	ValidatorVerdicts   = "ora_validator_verdicts_total"
	Escalations         = "ora_escalations_total"
	EscalationsPending  = "ora_escalations_pending"
	EscalationOldestAge = "ora_escalation_oldest_age_seconds"
	Incidents           = "ora_incidents_total"
	// The operator's KPIs by motor version (shared/operate records them).
	ClassificationOverrides = "ora_classification_overrides_total"
	OperatorResumes         = "ora_operator_resumes_total"
	OperatorTimeToResume    = "ora_operator_time_to_resume_seconds"
	OperatorIncidents       = "ora_operator_incidents_total"
	OperatorPauses          = "ora_operator_pauses_total"
	PacketTokens            = "ora_packet_tokens"
	ModelTokens             = "ora_model_tokens_total"
	ModelCost               = "ora_model_cost_usd_total"
	ModelChains             = "ora_model_chains_total"
	OrientationFacts        = "ora_orientation_facts_total"
	OrientationJobs         = "ora_orientation_jobs_total"
	OrientationBudgetUse    = "ora_orientation_budget_ratio"
	GoldenRecordings        = "ora_golden_recordings_total"
)

// The eight orientation metrics of seed 002 §14.1, under the seed's names
// with ora's prefix (shared/orient records them through WithPrefix).
const (
	OrientationPacketTokensUsed = "ora_orientation_packet_tokens_used"
	OrientationBudgetOverflow   = "ora_orientation_budget_overflow_total"
	OrientationFactDrops        = "ora_orientation_fact_drop_total"
	ObservationJobs             = "ora_observation_jobs_total"
	ObservationJobLatency       = "ora_observation_job_latency_ms"
	ProfileProposals            = "ora_profile_proposal_total"
	ProfileRollbacks            = "ora_profile_rollback_total"
	DecisionRegret              = "ora_decision_regret_total"
	orientationPrefix           = "ora_"
)

// Catalog lists every metric ora records; the README prints the same table.
var Catalog = []Def{
	{WavesStarted, Counter, "Count", nil, "waves started (counted when a wave's first task, Plan, succeeds)"},
	{Waves, Counter, "Count", []string{"outcome"}, "waves ended, by final verdict (completed, rejected, failed, ...)"},
	{StageDuration, Histogram, "Seconds", []string{"stage", "outcome"}, "latency of one stage (task) call, outcome ok or error"},
	{StageFailures, Counter, "Count", []string{"stage", "error_code"}, "stage calls that failed, by the error name Step Functions sees"},
	{Decisions, Counter, "Count", []string{"band", "author_type"}, "decisions made, by confidence band and author (rules, model)"},
	{DecisionConfidence, Histogram, "None", []string{"band"}, "the confidence of each decision"},
	{Actions, Counter, "Count", []string{"type", "outcome"}, "actions run by the Act stage, by action type and outcome"},
	{ValidatorVerdicts, Counter, "Count", []string{"validator", "verdict"}, "validator verdicts, by validator"},
	{Escalations, Counter, "Count", nil, "decisions escalated to a human"},
	{EscalationsPending, Gauge, "Count", nil, "decisions waiting for a human's verdict (ora dev: read at scrape time; AWS: by the outbox sweep)"},
	{EscalationOldestAge, Gauge, "Seconds", nil, "age of the oldest decision waiting for a human"},
	{Incidents, Counter, "Count", []string{"class"}, "operator incidents, by classification (app, motor, mixed)"},
	{ClassificationOverrides, Counter, "Count", []string{"motor_version", "from", "to"}, "incident classifications a person corrected, by the motor version the incident was seen under"},
	{OperatorResumes, Counter, "Count", []string{"motor_version"}, "paused waves resumed, by the motor version they failed under"},
	{OperatorTimeToResume, Histogram, "Seconds", []string{"motor_version"}, "time from a wave's failure to its resume (MTTR), by motor version"},
	{OperatorIncidents, Counter, "Count", []string{"motor_version", "class"}, "incidents first seen, by motor version and classification (classification accuracy: 1 - overrides / incidents)"},
	{OperatorPauses, Counter, "Count", []string{"motor_version"}, "waves paused or retried by the operator, by motor version (resumption rate: resumes / pauses)"},
	{PacketTokens, Histogram, "Count", nil, "tokens in each compiled orientation packet"},
	{ModelTokens, Counter, "Count", []string{"direction"}, "model tokens spent on decisions (input, output)"},
	{ModelCost, Counter, "None", nil, "model cost of decisions in US dollars"},
	{ModelChains, Counter, "Count", []string{"crystallization_reason", "stages"}, "model decisions, by why the observer chain stopped and how many stages ran (PatternMatch with 0 stages: reused from the pattern cache, no call)"},
	{OrientationFacts, Counter, "Count", nil, "facts fetched by orientation jobs"},
	{OrientationJobs, Counter, "Count", nil, "orientation jobs planned"},
	{OrientationBudgetUse, Histogram, "None", nil, "packet tokens used over the profile's token budget"},
	{GoldenRecordings, Counter, "Count", []string{"outcome"}, "real waves recorded for the promotion gate, by outcome (kept, secret, size, failed, skipped)"},
	{OrientationPacketTokensUsed, Histogram, "Count", nil, "seed 002: tokens used by each orientation packet"},
	{OrientationBudgetOverflow, Counter, "Count", nil, "seed 002: packets that left facts out for the budget"},
	{OrientationFactDrops, Counter, "Count", []string{"reason"}, "seed 002: facts dropped, by reason (caps, budget, timeouts)"},
	{ObservationJobs, Counter, "Count", []string{"source", "status"}, "seed 002: observation jobs run, by source family and status"},
	{ObservationJobLatency, Histogram, "Milliseconds", []string{"source"}, "seed 002: latency of one observation job in milliseconds"},
	{ProfileProposals, Counter, "Count", []string{"status"}, "seed 002: profile change proposals, by status"},
	{ProfileRollbacks, Counter, "Count", nil, "seed 002: temporary profiles reverted at their horizon"},
	{DecisionRegret, Counter, "Count", nil, "seed 002: decisions a human rejected or reversed"},
}

// WithPrefix returns m recording every name with ora's prefix: shared/orient
// names its metrics as seed 002 does (orientation_fact_drop_total), and the
// catalog holds them as ora_orientation_fact_drop_total.
func WithPrefix(m Metrics) Metrics { return prefixed{m} }

type prefixed struct{ m Metrics }

func (p prefixed) Add(name string, delta float64, labels ...string) {
	p.m.Add(orientationPrefix+name, delta, labels...)
}

func (p prefixed) Observe(name string, value float64, labels ...string) {
	p.m.Observe(orientationPrefix+name, value, labels...)
}

func (p prefixed) Set(name string, value float64, labels ...string) {
	p.m.Set(orientationPrefix+name, value, labels...)
}

// Lookup returns the definition of name.
func Lookup(name string) (Def, bool) {
	i := slices.IndexFunc(Catalog, func(d Def) bool { return d.Name == name })
	if i < 0 {
		return Def{}, false
	}
	return Catalog[i], true
}

// CheckLabels reports whether labels are key, value pairs naming exactly the
// labels def declares, in any order.
func CheckLabels(def Def, labels []string) error {
	if len(labels)%2 != 0 {
		return fmt.Errorf("telemetry: %s: odd number of label strings", def.Name)
	}
	if len(labels)/2 != len(def.Labels) {
		return fmt.Errorf("telemetry: %s: labels %v, want %v", def.Name, labels, def.Labels)
	}
	for i := 0; i < len(labels); i += 2 {
		if !slices.Contains(def.Labels, labels[i]) {
			return fmt.Errorf("telemetry: %s: unknown label %q (want %v)", def.Name, labels[i], def.Labels)
		}
	}
	return nil
}
