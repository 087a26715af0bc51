package operate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// qOverride prefixes a person's reclassification of an incident.
const qOverride = "override/"

// Override is a person's correction of an incident's classification: the
// classifier's accuracy is measured against these.
type Override struct {
	Classification string    `json:"classification"`
	Taxonomy       string    `json:"taxonomy"`
	Reason         string    `json:"reason"`
	By             string    `json:"by"`
	At             time.Time `json:"at"`
}

// classOf is the classification each taxonomy class belongs to.
var classOf = map[string]string{
	AppSpec: ClassApp, AppBuild: ClassApp, MotorRules: ClassMotor, MotorPerf: ClassMotor, MixedDrift: ClassMixed,
}

// ClassOf returns the classification a taxonomy class belongs to (app,
// motor or mixed); ok is false for an unknown class.
func ClassOf(taxonomy string) (class string, ok bool) {
	class, ok = classOf[taxonomy]
	return class, ok
}

// Reclassify records that a person corrects an incident's classification
// to taxonomy (APP-SPEC, APP-BUILD, MOTOR-RULES, MOTOR-PERF or MIXED-DRIFT),
// with a reason. The latest correction is the incident's Override; the
// classifier's own answer stays. Errors: EINVALID naming the field,
// ENOTFOUND, ETRANSIENT.
func (s *Service) Reclassify(ctx context.Context, incidentID, taxonomy, by, reason string) (Incident, error) {
	class, ok := classOf[taxonomy]
	if !ok {
		return Incident{}, ora.Invalid("taxonomy", "%q is not APP-SPEC, APP-BUILD, MOTOR-RULES, MOTOR-PERF or MIXED-DRIFT", taxonomy)
	}
	if strings.TrimSpace(reason) == "" {
		return Incident{}, ora.Invalid("reason", "required: say why the classifier was wrong")
	}
	inc, err := s.Incident(ctx, incidentID)
	if err != nil {
		return Incident{}, err
	}
	at := s.o.Now().UTC()
	o := Override{Classification: class, Taxonomy: taxonomy, Reason: reason, By: by, At: at}
	if err := s.append(ctx, incidentID, qOverride+at.Format("20060102T150405.000000000Z"), o); err != nil {
		return Incident{}, fmt.Errorf("operate: reclassify %s: %w", incidentID, err)
	}
	s.o.Metrics.Add(MetricClassificationOverrides, 1, "motor_version", inc.Fingerprint.MotorVersion, "from", inc.Fingerprint.Taxonomy, "to", taxonomy)
	return s.Incident(ctx, incidentID)
}

// MotorKPIs are the operator's KPIs of the incidents first seen under one
// motor version.
type MotorKPIs struct {
	Incidents int `json:"incidents"`
	// Overridden incidents had their classification corrected by a person;
	// ClassificationAccuracy is the share that were not (1 with none).
	Overridden             int     `json:"overridden"`
	ClassificationAccuracy float64 `json:"classification_accuracy"`
	Paused                 int     `json:"paused"`
	Resumed                int     `json:"resumed"`
	ResumptionRate         float64 `json:"resumption_rate"`
	MTTRSeconds            float64 `json:"mttr_seconds"`
}

// byMotor folds incidents into KPIs per the motor version they were first
// seen under.
func byMotor(incs []Incident) map[string]MotorKPIs {
	out := map[string]MotorKPIs{}
	groups := map[string][]Incident{}
	for _, inc := range incs {
		groups[inc.Fingerprint.MotorVersion] = append(groups[inc.Fingerprint.MotorVersion], inc)
	}
	for v, g := range groups {
		s := summarize(g)
		k := MotorKPIs{Incidents: s.Incidents, Overridden: s.Overridden, ClassificationAccuracy: s.ClassificationAccuracy,
			Paused: s.Paused, Resumed: s.Resumed, ResumptionRate: s.ResumptionRate, MTTRSeconds: s.MTTRSeconds}
		out[v] = k
	}
	return out
}
