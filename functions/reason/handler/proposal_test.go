package handler

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// A reasoner may emit an orientation proposal beside its decision: it goes
// through the guard like any other proposal, under the reasoner's principal,
// once, and never fails or changes the decision.
func TestReasonerEmittedProposal(t *testing.T) {
	base := orient.DefaultProfile()
	weather, _ := json.Marshal(orient.ObjectPredicate{Prefix: "weather/", Limit: 10})
	shift := func(p *ora.ProfileProposal) {
		p.Change.Rules = append(append([]ora.AttentionRule{}, base.Rules...),
			ora.AttentionRule{ID: "weather", SourceType: orient.FamilyObjects, Predicate: weather, Band: ora.BandExploration, PriorityWeight: 2, Enabled: true})
	}
	suppress := func(p *ora.ProfileProposal) { // every ledger rule off: critical context suppressed
		shift(p)
		for i := range p.Change.Rules[:len(base.Rules)] {
			p.Change.Rules[i].Enabled = false
		}
	}
	proposal := func(edit func(*ora.ProfileProposal)) *ora.ProfileProposal {
		p := &ora.ProfileProposal{BaseProfileID: base.ID, BaseProfileVersion: base.Version, EffectiveWaves: 3,
			HorizonPolicy: ora.HorizonRevert, RequestedBy: "spoofed-by-the-model", Namespace: "team-spoofed"}
		edit(p)
		return p
	}
	tests := []struct {
		name       string
		proposal   *ora.ProfileProposal
		wantStatus string
		wantCode   string
	}{
		{"an attention shift passes the guard and waits for approval", proposal(shift), ora.ProposalPending, ""},
		{"one that suppresses critical context is rejected by the guard", proposal(suppress), ora.ProposalRejected, orient.RejectCriticalSource},
		{"a malformed one is reported, not recorded", proposal(func(p *ora.ProfileProposal) { shift(p); p.EffectiveWaves = 0 }), "invalid", "effective_waves"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openLedger(t)
			oriented(t, db, "sig-1", `{}`)
			profiles := orient.NewProfiles(db, orient.WithObjects(nil)) // the shift attends to objects
			calls := 0
			h := Handler{Ledger: db, Proposals: profiles, Reasoner: reasonerFunc(func(context.Context, ora.ReasonerInput) (ora.ReasonerDecision, error) {
				calls++
				return ora.ReasonerDecision{
					ID: "Dec-1", SignalID: "sig-1", ActionType: "notify", Confidence: 0.9, Reasoning: "r",
					AuthorType: ora.AuthorAuditor, Scope: ora.Scope{AllowedOperations: []string{"notify"}}, Tier: 1, Timestamp: at,
					OrientationProposal: tt.proposal,
				}, nil
			})}
			for run := range 2 { // the second run is a retry: same outcome, one proposal
				got, err := invoke(t, h, `{"signal_id":"sig-1"}`)
				if err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
				if got.DecisionID != "Dec-1" || got.Band != "high" {
					t.Errorf("run %d: decision %+v changed", run, got)
				}
				po := got.Proposal
				if po == nil || po.ID != "reasoner-dec-1" || po.Status != tt.wantStatus || (tt.wantCode != "" && !contains(po.Code, tt.wantCode)) {
					t.Fatalf("run %d: proposal outcome %+v, want reasoner-dec-1 %s %s", run, po, tt.wantStatus, tt.wantCode)
				}
			}
			if calls != 1 {
				t.Errorf("the reasoner was asked %d times, want 1", calls)
			}
			v, err := profiles.Proposal(context.Background(), "reasoner-dec-1")
			if tt.wantStatus == "invalid" {
				if ora.ErrorCode(err) != ora.ENOTFOUND {
					t.Errorf("a malformed proposal was recorded: %+v %v", v, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// The principal is the reasoner's, never the body's.
			if v.Proposal.RequestedBy != "reasoner" || v.Proposal.Namespace != "main" || v.Status != tt.wantStatus {
				t.Errorf("stored proposal by %s in %s, %s; want by reasoner in main, %s", v.Proposal.RequestedBy, v.Proposal.Namespace, v.Status, tt.wantStatus)
			}
			if tt.wantStatus == ora.ProposalRejected && (v.Decision == nil || v.Decision.RejectionCode != tt.wantCode) {
				t.Errorf("decision %+v, want rejected with %s", v.Decision, tt.wantCode)
			}
			// Approval stays a human's: the proposal changed no profile.
			cur, err := profiles.Current(context.Background(), base.ID)
			if err != nil || cur.Version != base.Version {
				t.Errorf("profile at v%d (%v), want v%d until approved", cur.Version, err, base.Version)
			}
		})
	}
	t.Run("without a proposal service the decision still stands", func(t *testing.T) {
		db := openLedger(t)
		oriented(t, db, "sig-1", `{}`)
		h := Handler{Ledger: db, Reasoner: reasonerFunc(func(context.Context, ora.ReasonerInput) (ora.ReasonerDecision, error) {
			return ora.ReasonerDecision{ID: "dec-2", SignalID: "sig-1", ActionType: "notify", Confidence: 0.9, Reasoning: "r",
				AuthorType: ora.AuthorAuditor, Scope: ora.Scope{AllowedOperations: []string{"notify"}}, Tier: 1, Timestamp: at,
				OrientationProposal: proposal(shift)}, nil
		})}
		got, err := invoke(t, h, `{"signal_id":"sig-1"}`)
		if err != nil || got.DecisionID != "dec-2" || got.Proposal == nil || got.Proposal.Status != "invalid" {
			t.Errorf("got %+v %v, want the decision with an invalid proposal outcome", got, err)
		}
	})
}

func TestProposalID(t *testing.T) {
	tests := map[string]string{
		"Dec-1":                                "reasoner-dec-1",
		"ce4fd523-6788-587d-a1ca-634af5bf1398": "reasoner-ce4fd523-6788-587d-a1ca-634af5bf1398",
		"a b/c":                                "reasoner-a-b-c",
	}
	for in, want := range tests {
		if got := ProposalID(in); got != want {
			t.Errorf("ProposalID(%q) = %q, want %q", in, got, want)
		}
	}
	long := ProposalID("0123456789012345678901234567890123456789012345678901234567890123456789")
	if len(long) != 64 {
		t.Errorf("len %d, want 64", len(long))
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
