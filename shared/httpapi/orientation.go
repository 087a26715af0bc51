package httpapi

import (
	"context"
	"io"
	"net/http"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// The orientation scopes of seed 002 §11.1.
const (
	ScopeOrientationRead    = "orientation.read"
	ScopeOrientationPropose = "orientation.propose"
	ScopeOrientationApprove = "orientation.approve"
	ScopeOrientationAdmin   = "orientation.admin"
)

// Orientation is what the orientation routes call (shared/orient.Service).
type Orientation interface {
	// Proposal returns a proposal's view. Errors: ENOTFOUND, ETRANSIENT.
	Proposal(ctx context.Context, id string) (ora.ProposalView, error)
	// CurrentProfile returns the current profile version. Errors: ETRANSIENT.
	CurrentProfile(ctx context.Context) (ora.Profile, error)
	// Propose records and guards a proposal. Errors: EINVALID, ECONFLICT.
	Propose(ctx context.Context, p ora.ProfileProposal, by ora.Principal) (ora.ProposalView, error)
	// Approve approves and applies a proposal. Errors: ENOTFOUND, ECONFLICT.
	Approve(ctx context.Context, id string, by ora.Principal) (ora.ProposalView, error)
	// Reject rejects a proposal. Errors: ENOTFOUND, ECONFLICT.
	Reject(ctx context.Context, id, reason string, by ora.Principal) (ora.ProposalView, error)
	// Packet returns a wave's packet. Errors: ENOTFOUND, EINVALID.
	Packet(ctx context.Context, waveID string) (ora.OrientationPacket, error)
	// Feedback returns a wave's orientation feedback. Errors: ENOTFOUND.
	Feedback(ctx context.Context, waveID string) ([]ora.Feedback, error)
	// RecordFeedback records one feedback record for a wave. Errors:
	// EINVALID, ENOTFOUND.
	RecordFeedback(ctx context.Context, f ora.Feedback) error
	// Verify replays a wave's packet and records the verification. Errors:
	// ENOTFOUND, EINVALID.
	Verify(ctx context.Context, waveID string) (orient.Verification, error)
	// Admin returns the guard's admin settings in effect. Errors: ETRANSIENT.
	Admin(ctx context.Context) (orient.AdminView, error)
	// SetAdmin changes the guard's admin settings. Errors: EINVALID, ECONFLICT.
	SetAdmin(ctx context.Context, change orient.AdminSettings, by ora.Principal) (orient.AdminView, error)
}

// orientationRoutes mounts the six routes of seed 002 §12.1 and four more
// (feedback, verification, the admin settings), each behind its scope
// whatever ReadAuth says (401 without a valid token, 403 without the scope):
//
//	GET  /api/orientation/profile/current          orientation.read
//	POST /api/orientation/proposals                orientation.propose
//	POST /api/orientation/proposals/{id}/approve   orientation.approve
//	POST /api/orientation/proposals/{id}/reject    orientation.approve
//	GET  /api/orientation/packets/{wave_id}        orientation.read
//	POST /api/orientation/packets/{wave_id}/verify orientation.read
//	GET  /api/orientation/feedback/{wave_id}       orientation.read
//	POST /api/orientation/feedback/{wave_id}       orientation.propose
//	GET  /api/orientation/admin                    orientation.read
//	PUT  /api/orientation/admin                    orientation.admin
//
// The proposer's subject and namespace come from the token (Namespace),
// never from the body. Approving and rejecting act only on proposals of the
// token's namespace (any namespace with orientation.admin), and the
// proposer never approves their own proposal (separation of duties).
func (s *Server) orientationRoutes(handle handle) {
	if s.Orientation == nil {
		return
	}
	o := s.Orientation
	handle("GET /api/orientation/profile/current", s.scoped(ScopeOrientationRead, func(r *http.Request, _ ora.Principal) (any, error) {
		return o.CurrentProfile(r.Context())
	}))
	handle("POST /api/orientation/proposals", s.scoped(ScopeOrientationPropose, func(r *http.Request, by ora.Principal) (any, error) {
		b, err := io.ReadAll(io.LimitReader(r.Body, 256<<10))
		if err != nil {
			return nil, ora.Invalid("body", "cannot read: %v", err)
		}
		var p ora.ProfileProposal
		if err := ora.DecodeJSON(b, &p); err != nil {
			return nil, err
		}
		return o.Propose(r.Context(), p, by)
	}))
	handle("POST /api/orientation/proposals/{id}/approve", s.scoped(ScopeOrientationApprove, func(r *http.Request, by ora.Principal) (any, error) {
		v, err := o.Proposal(r.Context(), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		if err := MayDecide(v, by, true, s.isAdmin(r)); err != nil {
			return nil, err
		}
		return o.Approve(r.Context(), r.PathValue("id"), by)
	}))
	handle("POST /api/orientation/proposals/{id}/reject", s.scoped(ScopeOrientationApprove, func(r *http.Request, by ora.Principal) (any, error) {
		v, err := o.Proposal(r.Context(), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		if err := MayDecide(v, by, false, s.isAdmin(r)); err != nil {
			return nil, err
		}
		var in struct {
			Reason string `json:"reason"`
		}
		if b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10)); len(b) > 0 {
			if err := ora.DecodeJSON(b, &in); err != nil {
				return nil, err
			}
		}
		return o.Reject(r.Context(), r.PathValue("id"), in.Reason, by)
	}))
	handle("GET /api/orientation/packets/{wave_id}", s.scoped(ScopeOrientationRead, func(r *http.Request, _ ora.Principal) (any, error) {
		return o.Packet(r.Context(), r.PathValue("wave_id"))
	}))
	handle("GET /api/orientation/feedback/{wave_id}", s.scoped(ScopeOrientationRead, func(r *http.Request, _ ora.Principal) (any, error) {
		fb, err := o.Feedback(r.Context(), r.PathValue("wave_id"))
		if fb == nil {
			fb = []ora.Feedback{}
		}
		return map[string]any{"wave_id": r.PathValue("wave_id"), "feedback": fb}, err
	}))
	handle("POST /api/orientation/feedback/{wave_id}", s.scoped(ScopeOrientationPropose, func(r *http.Request, by ora.Principal) (any, error) {
		var in struct {
			FeedbackID           string   `json:"feedback_id"`
			DecisionQualityScore *float64 `json:"decision_quality_score,omitempty"`
			DecisionRegret       bool     `json:"decision_regret,omitempty"`
			MissedSignalFlags    []string `json:"missed_signal_flags,omitempty"`
			OperatorFeedback     string   `json:"operator_feedback,omitempty"`
		}
		if err := decodeOptional(r, &in); err != nil {
			return nil, err
		}
		f := ora.Feedback{WaveID: r.PathValue("wave_id"), FeedbackID: in.FeedbackID, Source: FeedbackSource, By: by.Subject,
			DecisionQualityScore: in.DecisionQualityScore, DecisionRegret: in.DecisionRegret, MissedSignalFlags: in.MissedSignalFlags,
			OperatorFeedback: in.OperatorFeedback}
		if err := o.RecordFeedback(r.Context(), f); err != nil {
			return nil, err
		}
		fb, err := o.Feedback(r.Context(), f.WaveID)
		return map[string]any{"wave_id": f.WaveID, "feedback": fb}, err
	}))
	handle("POST /api/orientation/packets/{wave_id}/verify", s.scoped(ScopeOrientationRead, func(r *http.Request, _ ora.Principal) (any, error) {
		return o.Verify(r.Context(), r.PathValue("wave_id"))
	}))
	handle("GET /api/orientation/admin", s.scoped(ScopeOrientationRead, func(r *http.Request, _ ora.Principal) (any, error) {
		return o.Admin(r.Context())
	}))
	handle("PUT /api/orientation/admin", s.scoped(ScopeOrientationAdmin, func(r *http.Request, by ora.Principal) (any, error) {
		var change orient.AdminSettings
		if r.ContentLength == 0 {
			return nil, ora.Invalid("body", "required: the settings to change")
		}
		if err := decodeOptional(r, &change); err != nil {
			return nil, err
		}
		return o.SetAdmin(r.Context(), change, by)
	}))
}

// FeedbackSource is the source of feedback submitted through the API.
const FeedbackSource = "api"

// scoped authorizes the scope, builds the principal (its namespace from the
// token, "main" when the deployment has none) and writes the answer as JSON.
func (s *Server) scoped(scope string, h func(*http.Request, ora.Principal) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		subject, err := s.authorize(r, scope)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		v, err := h(r, s.principal(r, subject))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// TokenNamespaces returns the Namespace function of StaticTokens: the
// namespace of the request's bearer token, "main" when it names none.
func TokenNamespaces(tokens []Token) func(*http.Request) string {
	return func(r *http.Request) string {
		raw, _ := BearerToken(r)
		for _, t := range tokens {
			if t.Token == raw && t.Namespace != "" {
				return t.Namespace
			}
		}
		return "main"
	}
}
