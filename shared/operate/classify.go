package operate

import (
	"strings"
)

// Classifications of seed 003 §8.2.
const (
	ClassApp   = "app"
	ClassMotor = "motor"
	ClassMixed = "mixed"
)

// The taxonomy of seed 003 §10.
const (
	AppSpec    = "APP-SPEC"    // missing fields, invalid mappings
	AppBuild   = "APP-BUILD"   // broken dependency, failing integration
	MotorRules = "MOTOR-RULES" // wrong validator, incomplete template or rule
	MotorPerf  = "MOTOR-PERF"  // latency, token or cost budget exceeded
	MixedDrift = "MIXED-DRIFT" // drift between the motor version and the app
)

// Facts are what the classifier knows of one failure: the error, the stage it
// struck, the app (source) of the wave, and what the incident history says
// about the same stage and error.
type Facts struct {
	Error string
	Cause string
	Stage string
	// Sources are the distinct apps (source names) in which this stage and
	// error occurred under the current motor version, this wave's included.
	Sources int
	// NewWithMotor: the current motor version is not the first, and this stage
	// and error never occurred under an earlier motor version, though earlier
	// waves ran.
	NewWithMotor bool
	// OtherProfilePassed: waves of another app completed under the current
	// motor version while this one failed (the failure disappears with
	// another profile).
	OtherProfilePassed bool
}

// Class is the classifier's answer.
type Class struct {
	Classification string `json:"classification"` // app | motor | mixed
	Taxonomy       string `json:"taxonomy"`       // seed 003 §10
	Transient      bool   `json:"transient"`      // retry with backoff before anything else
	Rule           string `json:"rule"`           // the row of Policy that matched
}

// Rule is one row of the classification policy: when Match holds for a
// failure, it is classified as Verdict. The first matching row wins.
type Rule struct {
	Name    string
	Match   func(Facts) bool
	Verdict Class
}

// transientErrors are the runtime's passing failures: Lambda's service errors,
// throttling, and ora's TransientError once its own Retry gave up.
var transientErrors = []string{
	"TransientError", "Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException",
	"Lambda.TooManyRequestsException", "Lambda.Unknown", "States.TaskFailed",
}

// budgetErrors: a latency, token or cost budget ran out (Sandbox.Timedout: a
// Lambda function ran past its timeout).
var budgetErrors = []string{"States.Timeout", "Sandbox.Timedout", "States.HeartbeatTimeout", "BudgetExceeded", "SpendLimitExceeded"}

// specErrors: the app's input or configuration is wrong (missing fields,
// invalid mappings, a decision out of its scope).
var specErrors = []string{"InvalidInput", "NotFound", "ScopeViolation", "ProvenanceError", "Forbidden"}

func oneOf(s string, list []string) bool {
	for _, x := range list {
		if s == x {
			return true
		}
	}
	return false
}

// appStage reports whether stage runs the app's own integrations (actions,
// their validation and recording) rather than orientation and reasoning.
func appStage(stage string) bool {
	switch stage {
	case "Act", "Validate", "Record outcome", "Record rejection":
		return true
	}
	return false
}

// ErrToleratedFailure is the error of a Distributed Map whose failed children
// passed its tolerated share (ToleratedFailurePercentage/Count): in a wave,
// the "Fetch observations" Map, whose children run the observation jobs.
const ErrToleratedFailure = "States.ExceedToleratedFailureThreshold"

// Policy is the operator's classification table (seed 003 §10 and §11), in
// the order it is applied; the README prints the same table. Budgets and
// transient failures come first (they are the plant's, and retried before
// anything else); then the history heuristics of §11; then the error name.
//
// A Fetch Map that failed past its tolerated share is the observation
// sources failing: the app's integrations (APP-BUILD), whatever the failed
// jobs' families. The profile chooses the sources and the tolerated share;
// an outside source (objects, http) that fails is a broken dependency of the
// app, and a ledger job fails a child only when its reads keep failing past
// the child's own retries, which the operator sees in the incident. The row
// comes before the history heuristics, so that two apps whose sources fail
// in the same week are not read as a motor fault. The failed jobs and their
// families, when the cause names them (FailedJobsOf), go into the incident.
var Policy = []Rule{
	{"budget exceeded", func(f Facts) bool {
		return oneOf(f.Error, budgetErrors) || strings.Contains(strings.ToLower(f.Cause), "budget exceeded")
	}, Class{ClassMotor, MotorPerf, false, ""}},
	{ruleTransient, func(f Facts) bool { return oneOf(f.Error, transientErrors) }, Class{ClassMotor, MotorPerf, true, ""}},
	{"outcome unknown: an operator says whether the action ran", func(f Facts) bool { return f.Error == errOutcomeUnknown }, Class{ClassApp, AppBuild, false, ""}},
	{"tolerated failure threshold exceeded: the observation sources failed", func(f Facts) bool { return f.Error == ErrToleratedFailure }, Class{ClassApp, AppBuild, false, ""}},
	{"reproduced in >=2 apps under one motor", func(f Facts) bool { return f.Sources >= 2 }, Class{ClassMotor, MotorRules, false, ""}},
	{"began with a new motor version", func(f Facts) bool { return f.NewWithMotor }, Class{ClassMixed, MixedDrift, false, ""}},
	{"validator disagrees with the executed work", func(f Facts) bool { return f.Error == "ValidationFailed" }, Class{ClassMixed, MixedDrift, false, ""}},
	{"missing field or invalid mapping", func(f Facts) bool { return oneOf(f.Error, specErrors) }, Class{ClassApp, AppSpec, false, ""}},
	{"failing integration", func(f Facts) bool { return f.Error == "ActionFailed" }, Class{ClassApp, AppBuild, false, ""}},
	{"disappears with another profile, integration stage", func(f Facts) bool { return f.OtherProfilePassed && appStage(f.Stage) }, Class{ClassApp, AppBuild, false, ""}},
	{"disappears with another profile", func(f Facts) bool { return f.OtherProfilePassed }, Class{ClassApp, AppSpec, false, ""}},
	{"anything else: the motor's rules", func(Facts) bool { return true }, Class{ClassMotor, MotorRules, false, ""}},
}

// ruleTransient names the Policy row of the runtime's passing failures: a
// wave paused after their automatic retries resumes as is.
const ruleTransient = "transient"

// Classify applies Policy to f.
func Classify(f Facts) Class {
	for _, r := range Policy {
		if r.Match(f) {
			v := r.Verdict
			v.Rule = r.Name
			return v
		}
	}
	return Class{ClassMotor, MotorRules, false, "none"} // unreachable: the last row matches all
}
