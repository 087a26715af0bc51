package operate

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// An incident lives in the ledger as the operator-decision entries of its own
// id (Fingerprint.ID, "incident-..."): one "incident" entry when first seen,
// one "occurrence/<operator decision>" per failure filed under it, one
// "resumed/<operator decision>" per resumed wave, one "closed/<motor version>"
// when a motor fix closes it. Every entry is written once, so filing the same
// failure twice changes nothing and the incident is the fold of its entries.

// incidentHead is the body of an incident's first entry.
type incidentHead struct {
	ID             string      `json:"id"`
	Fingerprint    Fingerprint `json:"fingerprint"`
	Classification string      `json:"classification"`
	FirstSeen      time.Time   `json:"first_seen"`
}

// Occurrence is one failure filed under an incident.
type Occurrence struct {
	WaveID             string    `json:"wave_id"`
	Source             string    `json:"source,omitempty"`
	OperatorDecisionID string    `json:"operator_decision_id"`
	Action             string    `json:"action"`
	At                 time.Time `json:"at"`
	ResumedAt          time.Time `json:"resumed_at,omitzero"`
	ResumedUnder       string    `json:"resumed_under,omitempty"` // the motor version it resumed under
	ResumedBy          string    `json:"resumed_by,omitempty"`
	// ResumedWith is what the resume changed: motor, app-patch (with the
	// patch's kind and digest), motor+app-patch, or as-is; "" for an
	// automatic retry.
	ResumedWith string `json:"resumed_with,omitempty"`
	// FailedJobs are the failed Fetch children's jobs, when the failure's
	// cause named them.
	FailedJobs []FailedJob `json:"failed_jobs,omitempty"`
}

// resumedBody is the body of an incident's resumed entry.
type resumedBody struct {
	WaveID       string    `json:"wave_id"`
	At           time.Time `json:"at"`
	MotorVersion string    `json:"motor_version"`
	By           string    `json:"by"`
	// Fix is what the resume changed: motor, app-patch, motor+app-patch or
	// as-is ("" for an automatic retry).
	Fix         string `json:"fix,omitempty"`
	PatchKind   string `json:"patch_kind,omitempty"`
	PatchDigest string `json:"patch_digest,omitempty"`
}

// Fix links an incident to the motor version that closed it.
type Fix struct {
	MotorVersion string    `json:"motor_version"`
	WaveID       string    `json:"wave_id"`
	At           time.Time `json:"at"`
}

// Impact compares the incident's fingerprint (stage, error) before and after
// its fix: occurrences under the motor version it was seen with, and under
// the version that fixed it.
type Impact struct {
	Before int `json:"before"`
	After  int `json:"after"`
}

// Incident is the operator's view of one fingerprint's failures.
type Incident struct {
	ID             string       `json:"id"`
	Fingerprint    Fingerprint  `json:"fingerprint"`
	Classification string       `json:"classification"`
	Status         string       `json:"status"` // open | resolved | closed
	FirstSeen      time.Time    `json:"first_seen"`
	LastSeen       time.Time    `json:"last_seen"`
	Occurrences    []Occurrence `json:"occurrences"`
	Sources        []string     `json:"sources"`
	Resumed        int          `json:"resumed"`
	MTTRSeconds    float64      `json:"mttr_seconds"`
	ClosedBy       *Fix         `json:"closed_by,omitempty"`
	Impact         *Impact      `json:"impact,omitempty"`
	// Override is the latest person's correction of Classification.
	Override *Override `json:"override,omitempty"`
}

// Summary are the operator's KPIs over incidents (seed 003 §13).
type Summary struct {
	Incidents      int     `json:"incidents"`
	Open           int     `json:"open"`
	Occurrences    int     `json:"occurrences"`
	Paused         int     `json:"paused"`
	Resumed        int     `json:"resumed"`
	ResumptionRate float64 `json:"resumption_rate"` // resumed / (paused or retried)
	MTTRSeconds    float64 `json:"mttr_seconds"`    // mean failure-to-resume time
	// Overridden incidents had their classification corrected by a person;
	// ClassificationAccuracy is the share that were not (1 with none).
	Overridden             int     `json:"overridden"`
	ClassificationAccuracy float64 `json:"classification_accuracy"`
	// ByMotor are the same KPIs per motor version an incident was first seen
	// under.
	ByMotor map[string]MotorKPIs `json:"by_motor,omitempty"`
}

// fileIncident writes the incident (first time) and the occurrence of rec.
func (s *Service) fileIncident(ctx context.Context, rec Record, source string) error {
	head := incidentHead{ID: rec.IncidentID, Fingerprint: rec.Fingerprint, Classification: rec.Classification, FirstSeen: rec.At}
	e, err := ora.NewEntry(rec.IncidentID, ora.KindOperatorDecision, qIncident, head)
	if err != nil {
		return fmt.Errorf("operate: %w", err)
	}
	e.CreatedAt = s.o.Now().UTC()
	switch _, err := s.ledger.Append(ctx, e); {
	case err == nil: // first seen
		s.o.Metrics.Add(MetricIncidents, 1, "motor_version", rec.MotorVersion, "class", rec.Classification)
	case !isExisting(err):
		return fmt.Errorf("ledger: append incident %s: %w", rec.IncidentID, err)
	}
	occ := Occurrence{WaveID: rec.SignalID, Source: source, OperatorDecisionID: rec.DecisionID, Action: rec.Action, At: rec.At, FailedJobs: rec.FailedJobs}
	if err := s.append(ctx, rec.IncidentID, qOccurs+rec.DecisionID, occ); err != nil {
		return err
	}
	if rec.Action == actRetry { // resumed by the operator itself after the backoff
		at := rec.At.Add(time.Duration(rec.ActionPlan[0].Seconds) * time.Second)
		r := resumedBody{WaveID: rec.SignalID, At: at, MotorVersion: rec.MotorVersion, By: "operator (transient, auto)"}
		return s.append(ctx, rec.IncidentID, qResumed+rec.DecisionID, r)
	}
	return nil
}

func isExisting(err error) bool {
	_, ok := ora.Existing[ora.Entry](err)
	return ok
}

// IncidentWindow is how far back Incidents looks for first sightings (and so
// how much history the heuristics weigh).
const IncidentWindow = 90 * 24 * time.Hour

// Incidents returns the incidents first seen within IncidentWindow, most
// recently seen first, and the KPIs over them. Errors: ETRANSIENT.
func (s *Service) Incidents(ctx context.Context) ([]Incident, Summary, error) {
	now := s.o.Now().UTC()
	heads, err := s.ledger.Recent(ctx, ora.KindOperatorDecision, now.Add(-IncidentWindow), now.Add(time.Hour), 0)
	if err != nil {
		return nil, Summary{}, fmt.Errorf("operate: list incidents: %w", err)
	}
	var out []Incident
	seen := map[string]bool{}
	for _, h := range heads {
		if h.Qualifier != qIncident || !strings.HasPrefix(h.SignalID, "incident-") || seen[h.SignalID] {
			continue
		}
		seen[h.SignalID] = true
		inc, err := s.Incident(ctx, h.SignalID)
		if err != nil {
			return nil, Summary{}, err
		}
		out = append(out, inc)
	}
	// Impact of fixes: occurrences of the same stage and error under the
	// version seen with, and under the fixing version.
	for i := range out {
		if out[i].ClosedBy == nil {
			continue
		}
		imp := Impact{}
		for _, o := range out {
			if o.Fingerprint.Stage != out[i].Fingerprint.Stage || o.Fingerprint.Error != out[i].Fingerprint.Error {
				continue
			}
			switch o.Fingerprint.MotorVersion {
			case out[i].Fingerprint.MotorVersion:
				imp.Before += len(o.Occurrences)
			case out[i].ClosedBy.MotorVersion:
				imp.After += len(o.Occurrences)
			}
		}
		out[i].Impact = &imp
	}
	sort.Slice(out, func(a, b int) bool { return out[a].LastSeen.After(out[b].LastSeen) })
	sum := summarize(out)
	sum.ByMotor = byMotor(out)
	return out, sum, nil
}

func summarize(incs []Incident) Summary {
	var sum Summary
	var ttr time.Duration
	for _, inc := range incs {
		sum.Incidents++
		if inc.Status == "open" {
			sum.Open++
		}
		if inc.Override != nil && inc.Override.Taxonomy != inc.Fingerprint.Taxonomy {
			sum.Overridden++
		}
		for _, o := range inc.Occurrences {
			sum.Occurrences++
			if o.Action == actPause || o.Action == actRetry {
				sum.Paused++
			}
			if !o.ResumedAt.IsZero() {
				sum.Resumed++
				ttr += o.ResumedAt.Sub(o.At)
			}
		}
	}
	if sum.Paused > 0 {
		sum.ResumptionRate = float64(sum.Resumed) / float64(sum.Paused)
	}
	if sum.Resumed > 0 {
		sum.MTTRSeconds = (ttr / time.Duration(sum.Resumed)).Seconds()
	}
	sum.ClassificationAccuracy = 1
	if sum.Incidents > 0 {
		sum.ClassificationAccuracy = float64(sum.Incidents-sum.Overridden) / float64(sum.Incidents)
	}
	return sum
}

// Incident returns one incident. Errors: ENOTFOUND, ETRANSIENT.
func (s *Service) Incident(ctx context.Context, id string) (Incident, error) {
	if !strings.HasPrefix(id, "incident-") {
		return Incident{}, ora.Errorf(ora.ENOTFOUND, "no incident %q", id)
	}
	entries, err := s.ledger.Entries(ctx, id)
	if ora.ErrorCode(err) == ora.ENOTFOUND {
		return Incident{}, ora.Errorf(ora.ENOTFOUND, "no incident %q", id)
	}
	if err != nil {
		return Incident{}, fmt.Errorf("operate: incident %s: %w", id, err)
	}
	var inc Incident
	resumed := map[string]resumedBody{}
	sources := map[string]bool{}
	for _, e := range entries {
		switch {
		case e.Qualifier == qIncident:
			var h incidentHead
			if err := json.Unmarshal(e.Body, &h); err != nil {
				return Incident{}, fmt.Errorf("operate: incident %s: %w", id, err)
			}
			inc.ID, inc.Fingerprint, inc.Classification, inc.FirstSeen = h.ID, h.Fingerprint, h.Classification, h.FirstSeen
		case strings.HasPrefix(e.Qualifier, qOccurs):
			var o Occurrence
			if json.Unmarshal(e.Body, &o) == nil {
				inc.Occurrences = append(inc.Occurrences, o)
			}
		case strings.HasPrefix(e.Qualifier, qResumed):
			var r resumedBody
			if json.Unmarshal(e.Body, &r) == nil {
				resumed[strings.TrimPrefix(e.Qualifier, qResumed)] = r
			}
		case strings.HasPrefix(e.Qualifier, qOverride):
			var o Override
			if json.Unmarshal(e.Body, &o) == nil {
				inc.Override = &o // entries come in order: the latest wins
			}
		case strings.HasPrefix(e.Qualifier, qClosed):
			var f Fix
			if json.Unmarshal(e.Body, &f) == nil && inc.ClosedBy == nil {
				inc.ClosedBy = &f
			}
		}
	}
	if inc.ID == "" {
		return Incident{}, ora.Errorf(ora.ENOTFOUND, "no incident %q", id)
	}
	var ttr time.Duration
	open := false
	for i := range inc.Occurrences {
		o := &inc.Occurrences[i]
		if r, ok := resumed[o.OperatorDecisionID]; ok {
			o.ResumedAt, o.ResumedUnder, o.ResumedBy, o.ResumedWith = r.At, r.MotorVersion, r.By, r.Fix
			if r.PatchKind != "" {
				o.ResumedWith += ":" + r.PatchKind + "@" + r.PatchDigest[:min(12, len(r.PatchDigest))]
			}
			inc.Resumed++
			ttr += r.At.Sub(o.At)
		} else if o.Action != actFail {
			open = true
		}
		if o.Source != "" {
			sources[o.Source] = true
		}
		if o.At.After(inc.LastSeen) {
			inc.LastSeen = o.At
		}
	}
	if inc.Resumed > 0 {
		inc.MTTRSeconds = (ttr / time.Duration(inc.Resumed)).Seconds()
	}
	inc.Sources = sortedSet(sources)
	switch {
	case inc.ClosedBy != nil:
		inc.Status = "closed"
	case open:
		inc.Status = "open"
	default:
		inc.Status = "resolved"
	}
	sort.Slice(inc.Occurrences, func(a, b int) bool { return inc.Occurrences[a].At.Before(inc.Occurrences[b].At) })
	return inc, nil
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// facts gathers what the heuristics of §11 need from the incident history.
func (s *Service) facts(ctx context.Context, f Failure, msg, stage, source string, motor Motor) (Facts, error) {
	facts := Facts{Error: f.Error, Cause: msg, Stage: stage}
	incs, _, err := s.Incidents(ctx)
	if err != nil {
		return Facts{}, err
	}
	sources := map[string]bool{}
	if source != "" {
		sources[source] = true
	}
	earlier := false
	for _, inc := range incs {
		if inc.Fingerprint.Stage != stage || inc.Fingerprint.Error != f.Error {
			continue
		}
		if inc.Fingerprint.MotorVersion != motor.Version {
			earlier = true
			continue
		}
		for _, src := range inc.Sources {
			sources[src] = true
		}
	}
	facts.Sources = len(sources)
	facts.NewWithMotor = motor.Previous != "" && !earlier
	if source != "" && facts.Sources < 2 {
		passed, err := s.otherSourcePassed(ctx, source, motor)
		if err != nil {
			return Facts{}, err
		}
		facts.OtherProfilePassed = passed
	}
	return facts, nil
}

// otherSourcePassed reports whether a wave of another source completed under
// the current motor (since it became current, or in the last day).
func (s *Service) otherSourcePassed(ctx context.Context, source string, motor Motor) (bool, error) {
	now := s.o.Now().UTC()
	from := now.Add(-24 * time.Hour)
	if motor.Since.After(from) {
		from = motor.Since
	}
	verdicts, err := s.ledger.Recent(ctx, ora.KindFinalVerdict, from, now.Add(time.Minute), 20)
	if err != nil {
		return false, fmt.Errorf("operate: recent verdicts: %w", err)
	}
	for _, e := range verdicts {
		var v Verdict
		if json.Unmarshal(e.Body, &v) != nil || v.Outcome != "completed" {
			continue
		}
		entries, err := s.ledger.Entries(ctx, e.SignalID)
		if err != nil {
			continue
		}
		if src := readWave(entries).source; src != "" && src != source {
			return true, nil
		}
	}
	return false, nil
}
