package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/ora"
)

// The orientation page lists at most this many proposals and packets (the
// newest of each).
const (
	MaxProposals = 10
	MaxPackets   = 10
)

// PacketRow is one wave's orientation packet, summed up.
type PacketRow struct {
	WaveID, Profile string
	Used, Budget    int
	Facts           int
	Digest          string
	Truncated       bool
}

func (s *Server) orientationPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	prof, err := s.Orientation.CurrentProfile(ctx)
	if err != nil {
		return err
	}
	now := s.Now()
	from, to := now.Add(-Lookback), now.Add(timeSlack)
	entries, err := s.Ledger.Recent(ctx, ora.KindProfileProposal, from, to, MaxProposals)
	if err != nil {
		return err
	}
	var proposals []ora.ProposalView
	for _, e := range entries {
		var p struct {
			ID string `json:"proposal_id"`
		}
		if json.Unmarshal(e.Body, &p) != nil || p.ID == "" {
			continue
		}
		if v, err := s.Orientation.Proposal(ctx, p.ID); err == nil {
			proposals = append(proposals, v)
		}
	}
	signals, err := s.Ledger.Recent(ctx, ora.KindSignalReceived, from, to, MaxPackets)
	if err != nil {
		return err
	}
	var packets []PacketRow
	for _, e := range signals {
		p, err := s.Orientation.Packet(ctx, e.SignalID)
		if err != nil {
			continue // no packet yet, or none kept
		}
		row := PacketRow{WaveID: e.SignalID, Profile: p.ProfileID + " v" + strconv.Itoa(p.ProfileVersion), Used: p.TokenUsed,
			Budget: p.TokenBudget, Digest: p.Digest, Truncated: p.Truncated}
		for _, b := range p.Bands {
			row.Facts += len(b.Facts)
		}
		packets = append(packets, row)
	}
	s.render(w, r, "orientation", map[string]any{"Title": "Orientation", "Nav": "orientation", "Profile": prof,
		"Proposals": proposals, "Packets": packets, "Done": r.URL.Query().Get("done")})
	return nil
}

// timeSlack is how far past now a page's time window reaches (clock skew).
const timeSlack = time.Minute

// decideProposal answers a proposal's Approve or Reject form with the checks
// of POST /api/orientation/proposals/{id}/approve|reject: scope
// orientation.approve, the proposal in the token's namespace (or
// orientation.admin), and an approver who is not the proposer.
func (s *Server) decideProposal(w http.ResponseWriter, r *http.Request) {
	approve, by, ok := s.verdictForm(w, r, httpapi.ScopeOrientationApprove)
	if !ok {
		return
	}
	id := r.PathValue("id")
	what := "reject proposal " + id
	if approve {
		what = "approve proposal " + id
	}
	ctx := r.Context()
	v, err := s.Orientation.Proposal(ctx, id)
	if err == nil {
		tok, _ := s.bearer(r)
		_, adminErr := s.authorize(withBearer(r, tok), httpapi.ScopeOrientationAdmin)
		err = httpapi.MayDecide(v, by, approve, adminErr == nil)
	}
	if err == nil && approve {
		v, err = s.Orientation.Approve(ctx, id, by)
	} else if err == nil {
		v, err = s.Orientation.Reject(ctx, id, strings.TrimSpace(r.PostForm.Get("reason")), by)
	}
	if err != nil {
		s.refuse(w, r, err, what, id, s.orientationPage, "")
		return
	}
	done := "proposal " + id + " " + v.Status
	if v.Version > 0 {
		done += ": profile version " + strconv.Itoa(v.Version)
	}
	http.Redirect(w, r, "/console/orientation?"+url.Values{"done": {done}}.Encode(), http.StatusSeeOther)
}
