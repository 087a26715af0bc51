package orient

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Principal is who calls (ora.Principal).
type Principal = ora.Principal

// ProposalView is a proposal with its status and decision (ora.ProposalView).
type ProposalView = ora.ProposalView

// Proposal returns a proposal's view. Errors: ENOTFOUND, EINVALID, ETRANSIENT.
func (s *Profiles) Proposal(ctx context.Context, id string) (ProposalView, error) {
	es, err := s.store.Entries(ctx, ProposalKey(id))
	if err != nil {
		return ProposalView{}, fmt.Errorf("orient: proposal %s: %w", id, err)
	}
	v := ProposalView{Status: ora.ProposalPending}
	found := false
	var recorded time.Time
	for _, e := range es {
		switch e.Kind {
		case ora.KindProfileProposal:
			if err := json.Unmarshal(e.Body, &v.Proposal); err != nil {
				return ProposalView{}, ora.Invalid("proposal", "stored proposal %s is malformed: %v", id, err)
			}
			found, recorded = true, e.CreatedAt
		case ora.KindProposalDecision:
			var d ora.ProposalDecision
			if err := json.Unmarshal(e.Body, &d); err != nil {
				return ProposalView{}, ora.Invalid("decision", "stored decision of %s is malformed: %v", id, err)
			}
			v.Decision, v.Status = &d, d.Status
		}
	}
	if !found {
		return ProposalView{}, ora.Errorf(ora.ENOTFOUND, "proposal %s", id)
	}
	if v.Decision == nil && s.o.ProposalTTL > 0 && !recorded.IsZero() && !s.o.Now().Before(recorded.Add(s.o.ProposalTTL)) {
		// Undecided past its time to live: expired, terminally, the first
		// time anyone reads or decides it (the decision is written once).
		return s.decide(ctx, v.Proposal, ora.ProposalExpired, &Rejection{Code: RejectExpired,
			Reason: fmt.Sprintf("not decided within %s of %s", s.o.ProposalTTL, recorded.UTC().Format(time.RFC3339))}, "orientation.expiry")
	}
	if v.Status == ora.ProposalApproved {
		st, err := s.load(ctx, v.Proposal.BaseProfileID)
		if err != nil {
			return ProposalView{}, err
		}
		for _, p := range st.versions {
			if p.ProposalID == id && p.HorizonWaves > 0 {
				v.Version = p.Version
			}
		}
	}
	return v, nil
}

// Propose records a proposal (once per proposal id: a repeat with the same
// content returns the stored view, one with other content is ECONFLICT) and
// runs the guard at once: a proposal that breaks a rule is rejected with its
// code, terminally; one that passes stays pending for approval. The
// principal's subject and namespace replace the body's. Errors: EINVALID
// naming the field (nothing written), ECONFLICT, ETRANSIENT.
func (s *Profiles) Propose(ctx context.Context, p ora.ProfileProposal, by Principal) (ProposalView, error) {
	start := time.Now()
	p.RequestedBy, p.Namespace = by.Subject, by.Namespace
	p = s.o.URLCredentials.redactProposal(p)
	if p.CreatedAt.IsZero() {
		p.CreatedAt = s.o.Now().UTC()
	}
	p.CreatedAt = p.CreatedAt.UTC()
	if err := p.Validate(); err != nil {
		return ProposalView{}, fmt.Errorf("orient: propose: %w", err)
	}
	if err := s.configured(p); err != nil {
		return ProposalView{}, fmt.Errorf("orient: propose: %w", err)
	}
	e, err := ora.NewEntry(ProposalKey(p.ID), ora.KindProfileProposal, "", p)
	if err != nil {
		return ProposalView{}, err
	}
	if _, err := s.store.Append(ctx, e); err != nil {
		if ora.ErrorCode(err) != ora.ECONFLICT {
			return ProposalView{}, fmt.Errorf("orient: propose %s: %w", p.ID, err)
		}
		v, verr := s.Proposal(ctx, p.ID)
		if verr != nil {
			return ProposalView{}, verr
		}
		q := v.Proposal
		q.CreatedAt = p.CreatedAt
		if !reflect.DeepEqual(normalize(q), normalize(p)) {
			return ProposalView{}, ora.Conflict(v, "proposal %s exists with other content", p.ID)
		}
		if v.Decision != nil {
			return v, nil
		}
		// A crash after the write and before the guard: run it now.
	} else {
		s.o.Metrics.Add(MetricProposals, 1, "status", ora.ProposalPending)
	}
	if err := s.audit(ctx, ProposalKey(p.ID), ora.AuditProfileProposed, ora.AuditRecord{Action: ora.AuditProfileProposed, Actor: by.Subject, Subject: p.ID, Result: "recorded", Detail: map[string]string{"namespace": p.Namespace}}); err != nil {
		return ProposalView{}, err
	}
	if _, rej, err := s.check(ctx, p); err != nil {
		return ProposalView{}, err
	} else if rej != nil {
		v, err := s.decide(ctx, p, ora.ProposalRejected, rej, "orientation.guard")
		s.o.log(ctx, "propose", logFields{ProfileID: p.BaseProfileID, ProfileVersion: p.BaseProfileVersion, Actor: by.Subject, Result: "rejected", ErrorCode: rej.Code, Start: start})
		return v, err
	}
	s.o.log(ctx, "propose", logFields{ProfileID: p.BaseProfileID, ProfileVersion: p.BaseProfileVersion, Actor: by.Subject, Result: "pending", Start: start})
	return s.Proposal(ctx, p.ID)
}

// configured refuses a proposal whose enabled rules name a source family
// this home has not configured: approved, it would fail every wave of its horizon at
// Plan. Errors: EINVALID naming the rule and the configured families.
func (s *Profiles) configured(p ora.ProfileProposal) error {
	fams := s.o.Families()
	for i, r := range p.Change.Rules {
		if r.Enabled && !slices.Contains(fams, r.SourceType) {
			return ora.Invalid(fmt.Sprintf("change.rules[%d].source_type", i), "source family %q is not configured here (configured: %s)", r.SourceType, strings.Join(fams, ", "))
		}
	}
	return nil
}

func normalize(p ora.ProfileProposal) string {
	b, _ := json.Marshal(p)
	var v any
	_ = json.Unmarshal(b, &v)
	b, _ = json.Marshal(v)
	return string(b)
}

// check runs the guard against the profile's current version: a proposal
// must be based on it (else stale_base).
func (s *Profiles) check(ctx context.Context, p ora.ProfileProposal) (ora.Profile, *Rejection, error) {
	cur, err := s.Current(ctx, p.BaseProfileID)
	if ora.ErrorCode(err) == ora.ENOTFOUND {
		return ora.Profile{}, reject(RejectStaleBase, "profile %s does not exist", p.BaseProfileID), nil
	}
	if err != nil {
		return ora.Profile{}, nil, err
	}
	if cur.Version != p.BaseProfileVersion || cur.HorizonWaves > 0 {
		return ora.Profile{}, reject(RejectStaleBase, "profile %s is at version %d (temporary: %v), the proposal is based on %d", cur.ID, cur.Version, cur.HorizonWaves > 0, p.BaseProfileVersion), nil
	}
	a, err := s.admin(ctx)
	if err != nil {
		return ora.Profile{}, nil, err
	}
	c, rej := Guard(a, cur, p)
	return c, rej, nil
}

// decide writes the proposal's one decision; a decision already stored wins
// and is returned.
func (s *Profiles) decide(ctx context.Context, p ora.ProfileProposal, status string, rej *Rejection, by string) (ProposalView, error) {
	d := ora.ProposalDecision{ProposalID: p.ID, Status: status, DecidedBy: by, DecidedAt: s.o.Now().UTC()}
	if rej != nil {
		d.RejectionCode, d.RejectionReason = rej.Code, rej.Reason
	}
	e, err := ora.NewEntry(ProposalKey(p.ID), ora.KindProposalDecision, "", d)
	if err != nil {
		return ProposalView{}, err
	}
	if _, err := s.store.Append(ctx, e); err != nil {
		if ora.ErrorCode(err) != ora.ECONFLICT {
			return ProposalView{}, fmt.Errorf("orient: decide %s: %w", p.ID, err)
		}
	} else {
		s.o.Metrics.Add(MetricProposals, 1, "status", status)
		action := ora.AuditProfileRejected
		switch status {
		case ora.ProposalApproved:
			action = ora.AuditProfileApproved
		case ora.ProposalExpired:
			action = ora.AuditProfileExpired
		}
		detail := map[string]string{}
		if rej != nil {
			detail["rejection_code"] = rej.Code
		}
		if err := s.audit(ctx, ProposalKey(p.ID), action, ora.AuditRecord{Action: action, Actor: by, Subject: p.ID, Result: status, Detail: detail}); err != nil {
			return ProposalView{}, err
		}
	}
	return s.Proposal(ctx, p.ID)
}

// Approve approves a pending proposal after running the guard again, and
// applies it: a new temporary profile version, effective for the
// proposal's waves. Approving an approved proposal is harmless (a crash
// between the decision and the version is finished); approving a decided
// one otherwise is ECONFLICT carrying its view. A proposal that fails the
// guard now is rejected, and Approve answers ECONFLICT with that view.
// Errors: ENOTFOUND, ECONFLICT, ETRANSIENT.
func (s *Profiles) Approve(ctx context.Context, id string, by Principal) (ProposalView, error) {
	start := time.Now()
	v, err := s.Proposal(ctx, id)
	if err != nil {
		return ProposalView{}, err
	}
	if v.Decision == nil {
		_, rej, err := s.check(ctx, v.Proposal)
		if err != nil {
			return ProposalView{}, err
		}
		status := ora.ProposalApproved
		if rej != nil {
			status = ora.ProposalRejected
		}
		if v, err = s.decide(ctx, v.Proposal, status, rej, by.Subject); err != nil {
			return ProposalView{}, err
		}
	}
	if v.Status != ora.ProposalApproved {
		return ProposalView{}, ora.Conflict(v, "proposal %s is %s", id, v.Status)
	}
	if v.Version == 0 {
		if err := s.apply(ctx, v.Proposal); err != nil {
			return ProposalView{}, err
		}
		if v, err = s.Proposal(ctx, id); err != nil {
			return ProposalView{}, err
		}
	}
	s.o.log(ctx, "approve", logFields{ProfileID: v.Proposal.BaseProfileID, ProfileVersion: v.Version, Actor: by.Subject, Result: "approved", Start: start})
	return v, nil
}

// apply writes the approved proposal's version on top of the latest one.
// It never widens capability bounds: the candidate's limits are checked
// against the version it lands on, whatever the proposal's base was.
func (s *Profiles) apply(ctx context.Context, p ora.ProfileProposal) error {
	for range 8 {
		cur, err := s.Current(ctx, p.BaseProfileID)
		if err != nil {
			return err
		}
		c := Candidate(cur, p)
		if r := widened(cur.Limits, c.Limits); r != nil {
			return ora.Errorf(ora.ECONFLICT, "orient: apply %s: %s", p.ID, r.Reason)
		}
		if _, err := s.Put(ctx, c); ora.ErrorCode(err) != ora.ECONFLICT {
			return err
		}
	}
	return ora.Errorf(ora.ECONFLICT, "orient: apply %s: profile %s kept changing", p.ID, p.BaseProfileID)
}

// Reject rejects a pending proposal. Rejecting a rejected one is harmless;
// rejecting an approved one is ECONFLICT carrying its view. Errors:
// ENOTFOUND, ECONFLICT, ETRANSIENT.
func (s *Profiles) Reject(ctx context.Context, id, reason string, by Principal) (ProposalView, error) {
	v, err := s.Proposal(ctx, id)
	if err != nil {
		return ProposalView{}, err
	}
	if v.Decision == nil {
		if reason == "" {
			reason = "rejected"
		}
		if v, err = s.decide(ctx, v.Proposal, ora.ProposalRejected, &Rejection{Code: RejectHuman, Reason: reason}, by.Subject); err != nil {
			return ProposalView{}, err
		}
	}
	if v.Status != ora.ProposalRejected {
		return ProposalView{}, ora.Conflict(v, "proposal %s is %s", id, v.Status)
	}
	return v, nil
}
