package orient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

func TestProfileValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*ora.Profile)
		field string
	}{
		{"default is valid", func(*ora.Profile) {}, ""},
		{"bad id", func(p *ora.Profile) { p.ID = "Bad Id" }, "profile_id"},
		{"version 0", func(p *ora.Profile) { p.Version = 0 }, "version"},
		{"no budget", func(p *ora.Profile) { p.TokenBudget = 0 }, "total_token_budget"},
		{"five bands", func(p *ora.Profile) { p.Bands = p.Bands[:5] }, "bands"},
		{"unknown band", func(p *ora.Profile) { p.Bands[0].Band = "mood" }, "bands[0].band"},
		{"target below min", func(p *ora.Profile) { p.Bands[1].TargetTokens = 1 }, "bands[1].target_tokens"},
		{"floors over budget", func(p *ora.Profile) { p.TokenBudget = 1000 }, "bands"},
		{"rule without family", func(p *ora.Profile) { p.Rules[0].SourceType = "" }, "rules[0].source_type"},
		{"rule predicate not an object", func(p *ora.Profile) { p.Rules[1].Predicate = json.RawMessage(`[1]`) }, "rules[1].predicate"},
		{"rule weight out of range", func(p *ora.Profile) { p.Rules[2].PriorityWeight = -1 }, "rules[2].priority_weight"},
		{"duplicate rule", func(p *ora.Profile) { p.Rules[1].ID = p.Rules[0].ID }, "rules[1].rule_id"},
		{"jobs over the hard cap", func(p *ora.Profile) { p.Limits.MaxJobs = 10001 }, "limits.max_jobs"},
		{"concurrency over the hard cap", func(p *ora.Profile) { p.Limits.MaxConcurrency = 129 }, "limits.max_concurrency"},
		{"facts over the hard cap", func(p *ora.Profile) { p.Limits.MaxFacts = 50001 }, "limits.max_facts"},
		{"bad allow prefix", func(p *ora.Profile) { p.Limits.HTTPAllow = []string{"ftp://x/"} }, "limits.http_allow[0]"},
		{"share 0", func(p *ora.Profile) { p.MaxSourceShare = 0 }, "max_source_share"},
		{"horizon without policy", func(p *ora.Profile) { p.Version, p.HorizonWaves, p.BaseVersion = 2, 3, 1 }, "horizon_policy"},
		{"bad status", func(p *ora.Profile) { p.Status = "live" }, "status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := orient.DefaultProfile()
			tt.edit(&p)
			err := p.Validate()
			if got := ora.ErrorField(err); got != tt.field || (tt.field != "" && ora.ErrorCode(err) != ora.EINVALID) {
				t.Errorf("Validate: got %v (field %q), want field %q", err, got, tt.field)
			}
		})
	}
}

func TestDecodeProposalFailsClosed(t *testing.T) {
	tests := []struct {
		name, body, field string
	}{
		{"unknown field", `{"proposal_id":"p1","requested_by":"a","namespace":"main","base_profile_id":"default","base_profile_version":1,"effective_waves":2,"horizon_policy":"revert","change":{"max_source_share":0.5},"sudo":true}`, "sudo"},
		{"wrong type", `{"proposal_id":"p1","effective_waves":"two"}`, "effective_waves"},
		{"no change", `{"proposal_id":"p1","requested_by":"a","namespace":"main","base_profile_id":"default","base_profile_version":1,"effective_waves":2,"horizon_policy":"revert","change":{}}`, "change"},
		{"bad policy", `{"proposal_id":"p1","requested_by":"a","namespace":"main","base_profile_id":"default","base_profile_version":1,"effective_waves":2,"horizon_policy":"forever","change":{"max_source_share":0.5}}`, "horizon_policy"},
		{"trailing data", `{"proposal_id":"p1"} {}`, "body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ora.DecodeProposal([]byte(tt.body))
			if got := ora.ErrorField(err); got != tt.field {
				t.Errorf("DecodeProposal: got %v (field %q), want field %q", err, got, tt.field)
			}
		})
	}
}

func TestProfileVersionsAreMonotonic(t *testing.T) {
	ctx := context.Background()
	ps := orient.NewProfiles(openLedger(t))
	cur, err := ps.Current(ctx, "default")
	if err != nil || cur.Version != 1 {
		t.Fatalf("Current of a new ledger: got v%d, %v; want v1", cur.Version, err)
	}
	next := cur
	next.Version = 3
	if _, err := ps.Put(ctx, next); ora.ErrorCode(err) != ora.ECONFLICT {
		t.Errorf("Put v3 after v1: got %v, want ECONFLICT", err)
	}
	next.Version = 2
	if _, err := ps.Put(ctx, next); err != nil {
		t.Fatalf("Put v2: %v", err)
	}
	if _, err := ps.Put(ctx, next); ora.ErrorCode(err) != ora.ECONFLICT {
		t.Errorf("Put v2 twice: got %v, want ECONFLICT", err)
	}
	bad := next
	bad.Version, bad.TokenBudget = 3, -1
	if _, err := ps.Put(ctx, bad); ora.ErrorField(err) != "total_token_budget" {
		t.Errorf("Put malformed: got %v, want EINVALID on total_token_budget", err)
	}
	vs, err := ps.Versions(ctx, "default")
	if err != nil || len(vs) != 2 || vs[0].Version != 1 || vs[1].Version != 2 {
		t.Errorf("Versions: got %d versions, %v; want v1, v2", len(vs), err)
	}
}

// objectsRule attends to objects under prefix, into the exploration band.
func objectsRule(prefix string, weight float64) ora.AttentionRule {
	pred, _ := json.Marshal(orient.ObjectPredicate{Prefix: prefix, Limit: 100})
	return ora.AttentionRule{ID: "objects-" + prefix[:len(prefix)-1], SourceType: orient.FamilyObjects, Predicate: pred,
		Band: ora.BandExploration, PriorityWeight: weight, Enabled: true}
}

func proposal(id string, base ora.Profile, edit func(*ora.ProfileProposal)) ora.ProfileProposal {
	p := ora.ProfileProposal{ID: id, RequestedBy: "agent", Namespace: "main", BaseProfileID: base.ID,
		BaseProfileVersion: base.Version, EffectiveWaves: 2, HorizonPolicy: ora.HorizonRevert}
	edit(&p)
	return p
}

func ptr[T any](v T) *T { return &v }

func TestGuard(t *testing.T) {
	admin := orient.DefaultAdmin(ora.DefaultTokenBudget)
	base := orient.DefaultProfile()
	base.Limits.HTTPAllow = []string{"https://api.example.com/"}
	base.Limits.SourceQuotas = map[string]int{orient.FamilyObjects: 100}
	tests := []struct {
		name string
		edit func(*ora.ProfileProposal)
		code string
	}{
		{"attention shift passes", func(p *ora.ProfileProposal) {
			p.Change.Rules = append(append([]ora.AttentionRule{}, base.Rules...), objectsRule("weather/", 2))
		}, ""},
		{"1: floor below the admin minimum", func(p *ora.ProfileProposal) {
			bands := ora.DefaultBands()
			bands[0].MinTokens = 1000 // identity: security-relevant context
			p.Change.Bands = bands
		}, orient.RejectBandFloor},
		{"2: total budget exceeded", func(p *ora.ProfileProposal) { p.Change.TokenBudget = ptr(400000) }, orient.RejectBudget},
		{"3: critical source disabled", func(p *ora.ProfileProposal) {
			rules := append([]ora.AttentionRule{}, base.Rules...)
			for i := range rules {
				rules[i].Enabled = false
			}
			p.Change.Rules = append(rules, objectsRule("weather/", 5))
		}, orient.RejectCriticalSource},
		{"4: capability relaxed (more jobs)", func(p *ora.ProfileProposal) {
			l := base.Limits
			l.MaxJobs, l.MaxConcurrency = 10000, 128
			l.ToleratedFailurePercent = 50
			p.Change.Limits = &l
		}, orient.RejectCapabilityWidened},
		{"4: capability relaxed (new endpoint)", func(p *ora.ProfileProposal) {
			l := base.Limits
			l.HTTPAllow = []string{"https://api.example.com/", "https://evil.example.net/"}
			p.Change.Limits = &l
		}, orient.RejectCapabilityWidened},
		{"4: capability relaxed (quota lifted)", func(p *ora.ProfileProposal) {
			l := base.Limits
			l.SourceQuotas = nil
			p.Change.Limits = &l
		}, orient.RejectCapabilityWidened},
		{"5: horizon too long", func(p *ora.ProfileProposal) {
			p.EffectiveWaves = 101
			p.Change.MaxSourceShare = ptr(0.4)
		}, orient.RejectHorizon},
		{"narrowing capabilities passes", func(p *ora.ProfileProposal) {
			l := base.Limits
			l.MaxJobs = 100
			p.Change.Limits = &l
		}, ""},
		{"non-main namespace may not touch bands", func(p *ora.ProfileProposal) {
			p.Namespace = "team-x"
			p.Change.TokenBudget = ptr(100000)
		}, orient.RejectNamespace},
		{"non-main namespace may re-weight", func(p *ora.ProfileProposal) {
			p.Namespace = "team-x"
			rules := append([]ora.AttentionRule{}, base.Rules...)
			rules[2].PriorityWeight = 0.9
			p.Change.Rules = rules
		}, ""},
		{"non-main namespace may not add a rule", func(p *ora.ProfileProposal) {
			p.Namespace = "team-x"
			p.Change.Rules = append(append([]ora.AttentionRule{}, base.Rules...), objectsRule("weather/", 2))
		}, orient.RejectNamespace},
		{"malformed change", func(p *ora.ProfileProposal) { p.Change.MaxSourceShare = ptr(2.0) }, orient.RejectMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, rej := orient.Guard(admin, base, proposal("p1", base, tt.edit))
			got := ""
			if rej != nil {
				got = rej.Code
			}
			if got != tt.code {
				t.Fatalf("Guard: got %q (%+v), want %q", got, rej, tt.code)
			}
			if rej == nil && (c.Version != 2 || c.HorizonWaves != 2 || c.BaseVersion != 1 || c.ProposalID != "p1") {
				t.Errorf("candidate: got v%d horizon %d base %d proposal %q", c.Version, c.HorizonWaves, c.BaseVersion, c.ProposalID)
			}
		})
	}
}

func TestHorizonOutcome(t *testing.T) {
	score := func(v float64) ora.Feedback { return ora.Feedback{DecisionQualityScore: &v} }
	tests := []struct {
		name     string
		policy   string
		feedback []ora.Feedback
		want     string
	}{
		{"revert policy, good feedback", ora.HorizonRevert, []ora.Feedback{score(1)}, orient.OutcomeRevert},
		{"promote, no scores", ora.HorizonPromote, []ora.Feedback{{OperatorFeedback: "ok"}}, orient.OutcomeRevert},
		{"promote, regret", ora.HorizonPromote, []ora.Feedback{score(1), {DecisionRegret: true}}, orient.OutcomeRevert},
		{"promote, low mean", ora.HorizonPromote, []ora.Feedback{score(0.9), score(0.4)}, orient.OutcomeRevert},
		{"promote, good mean", ora.HorizonPromote, []ora.Feedback{score(0.9), score(0.7)}, orient.OutcomePromote},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := orient.HorizonOutcome(tt.policy, tt.feedback); got != tt.want {
				t.Errorf("HorizonOutcome: got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestProposalLifecycle(t *testing.T) {
	ctx := context.Background()
	l := openLedger(t)
	ps := orient.NewProfiles(l)
	base, err := ps.Current(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	agent := orient.Principal{Subject: "agent-1", Namespace: "main"}
	human := orient.Principal{Subject: "alice", Namespace: "main"}
	shift := proposal("shift-1", base, func(p *ora.ProfileProposal) { p.Change.MaxSourceShare = ptr(0.4) })
	shift.RequestedBy, shift.Namespace = "spoofed-admin", "main"

	v, err := ps.Propose(ctx, shift, orient.Principal{Subject: "agent-1", Namespace: "team-x"})
	if err != nil {
		t.Fatal(err)
	}
	// The token's subject and namespace win over the body's; team-x may not
	// change max_source_share (namespace envelope), so the guard rejects it.
	if v.Status != ora.ProposalRejected || v.Proposal.RequestedBy != "agent-1" || v.Proposal.Namespace != "team-x" {
		t.Fatalf("Propose: got %s by %s in %s, want rejected, by agent-1 in team-x", v.Status, v.Proposal.RequestedBy, v.Proposal.Namespace)
	}
	t.Run("guard rejection is terminal", func(t *testing.T) {
		if v.Decision == nil || v.Decision.RejectionCode != orient.RejectNamespace {
			t.Fatalf("decision: got %+v, want rejected %s", v.Decision, orient.RejectNamespace)
		}
		if _, err := ps.Approve(ctx, "shift-1", human); ora.ErrorCode(err) != ora.ECONFLICT {
			t.Errorf("Approve a rejected proposal: got %v, want ECONFLICT", err)
		}
	})

	shift.ID = "shift-2"
	v, err = ps.Propose(ctx, shift, agent)
	if err != nil || v.Status != ora.ProposalPending {
		t.Fatalf("Propose: got %s, %v; want pending", v.Status, err)
	}
	again, err := ps.Propose(ctx, shift, agent)
	if err != nil || again.Status != ora.ProposalPending {
		t.Errorf("Propose again, same content: got %s, %v; want the stored pending view", again.Status, err)
	}
	other := shift
	other.EffectiveWaves = 5
	if _, err := ps.Propose(ctx, other, agent); ora.ErrorCode(err) != ora.ECONFLICT {
		t.Errorf("Propose the same id with other content: got %v, want ECONFLICT", err)
	}
	v, err = ps.Approve(ctx, "shift-2", human)
	if err != nil || v.Status != ora.ProposalApproved || v.Version != 2 {
		t.Fatalf("Approve: got %s v%d, %v; want approved v2", v.Status, v.Version, err)
	}
	if v2, err := ps.Approve(ctx, "shift-2", human); err != nil || v2.Version != 2 {
		t.Errorf("Approve twice: got v%d, %v; want the same approval", v2.Version, err)
	}
	if _, err := ps.Reject(ctx, "shift-2", "changed my mind", human); ora.ErrorCode(err) != ora.ECONFLICT {
		t.Errorf("Reject an approved proposal: got %v, want ECONFLICT", err)
	}
	vs, _ := ps.Versions(ctx, "default")
	if len(vs) != 2 {
		t.Errorf("versions after one approval (twice): got %d, want 2", len(vs))
	}
	es, err := l.Entries(ctx, orient.ProposalKey("shift-2"))
	if err != nil {
		t.Fatal(err)
	}
	audits := map[string]int{}
	for _, e := range es {
		if e.Kind == ora.KindOrientationAudit {
			audits[e.Qualifier]++
		}
	}
	if audits[ora.AuditProfileProposed] != 1 || audits[ora.AuditProfileApproved] != 1 {
		t.Errorf("audit entries: got %v, want one proposed and one approved", audits)
	}

	t.Run("a proposal on a stale base is rejected", func(t *testing.T) {
		p := proposal("shift-3", base, func(p *ora.ProfileProposal) { p.Change.MaxSourceShare = ptr(0.3) })
		v, err := ps.Propose(ctx, p, agent)
		if err != nil || v.Decision == nil || v.Decision.RejectionCode != orient.RejectStaleBase {
			t.Errorf("Propose on v1 while v2 runs: got %+v, %v; want rejected %s", v.Decision, err, orient.RejectStaleBase)
		}
	})
}

func TestApproveRecoversFromACrash(t *testing.T) {
	ctx := context.Background()
	l := openLedger(t)
	ps := orient.NewProfiles(l)
	base, _ := ps.Current(ctx, "default")
	p := proposal("crash-1", base, func(p *ora.ProfileProposal) { p.Change.MaxSourceShare = ptr(0.4) })
	if _, err := ps.Propose(ctx, p, orient.Principal{Subject: "agent", Namespace: "main"}); err != nil {
		t.Fatal(err)
	}
	// The process died after writing the decision, before the new version.
	d, _ := ora.NewEntry(orient.ProposalKey("crash-1"), ora.KindProposalDecision, "", ora.ProposalDecision{ProposalID: "crash-1", Status: ora.ProposalApproved, DecidedBy: "alice", DecidedAt: time.Now().UTC()})
	if _, err := l.Append(ctx, d); err != nil {
		t.Fatal(err)
	}
	v, err := ps.Approve(ctx, "crash-1", orient.Principal{Subject: "alice", Namespace: "main"})
	if err != nil || v.Version != 2 {
		t.Fatalf("Approve after a crash: got v%d, %v; want the version applied (v2)", v.Version, err)
	}
	cur, _ := ps.Current(ctx, "default")
	if cur.ProposalID != "crash-1" || cur.HorizonWaves != 2 {
		t.Errorf("current: got proposal %q horizon %d", cur.ProposalID, cur.HorizonWaves)
	}
}

// wave runs Plan, every Fetch and Compile for a new signal and returns its packet.
func wave(t *testing.T, l ora.Ledger, id string, opts ...func(*orient.Options)) (orient.WavePlan, ora.OrientationPacket) {
	t.Helper()
	ctx := context.Background()
	sig := testSignal(id)
	storeSignal(t, l, sig)
	wp, err := orient.NewPlanner(l, opts...).PlanWave(ctx, id)
	if err != nil {
		t.Fatalf("plan %s: %v", id, err)
	}
	f := orient.NewFetcher(l, opts...)
	for _, j := range wp.Jobs {
		if _, err := f.Fetch(ctx, id, j); err != nil {
			t.Fatalf("fetch %s/%s: %v", id, j.ID, err)
		}
	}
	p, err := orient.NewCompiler(l, opts...).Compile(ctx, id)
	if err != nil {
		t.Fatalf("compile %s: %v", id, err)
	}
	return wp, p
}

func factsFrom(p ora.OrientationPacket, source string) int {
	n := 0
	for _, b := range p.Bands {
		for _, f := range b.Facts {
			if f.SourceType == source {
				n++
			}
		}
	}
	return n
}

func objectFolder(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "weather"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		path := filepath.Join(dir, "weather", fmt.Sprintf("report-%03d.json", i))
		if err := os.WriteFile(path, fmt.Appendf(nil, `{"station":%d,"risk":"storm"}`, i), 0o644); err != nil {
			t.Fatal(err)
		}
		at := t0.Add(-time.Duration(i+1) * time.Minute)
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestAttentionShiftForNWaves is seed 002's B2 exit: a proposal shifting
// attention toward the objects family for the next N waves is approved, the
// next N packets show the shift, and wave N+1 is back on the previous
// profile's content.
func TestAttentionShiftForNWaves(t *testing.T) {
	ctx := context.Background()
	l := openLedger(t)
	dir := objectFolder(t, 5)
	opts := func(o *orient.Options) {
		o.Sources = map[string]orient.Source{orient.FamilyObjects: orient.Objects{Reader: orient.Folder{Dir: dir}}}
	}
	const n = 3
	_, before := wave(t, l, "w0", opts)
	if got := factsFrom(before, orient.FamilyObjects); got != 0 {
		t.Fatalf("before the proposal: %d object facts, want 0", got)
	}
	ps := orient.NewProfiles(l, opts)
	base, _ := ps.Current(ctx, "default")
	p := proposal("weather-first", base, func(p *ora.ProfileProposal) {
		p.EffectiveWaves = n
		p.Change.Rules = append(append([]ora.AttentionRule{}, base.Rules...), objectsRule("weather/", 2))
	})
	if v, err := ps.Propose(ctx, p, orient.Principal{Subject: "agent", Namespace: "main"}); err != nil || v.Status != ora.ProposalPending {
		t.Fatalf("Propose: %s, %v", v.Status, err)
	}
	if _, err := ps.Approve(ctx, "weather-first", orient.Principal{Subject: "alice", Namespace: "main"}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		wp, pkt := wave(t, l, fmt.Sprintf("w%d", i), opts)
		if wp.Pin.ProfileVersion != 2 || pkt.ProfileVersion != 2 {
			t.Errorf("wave %d: pinned v%d, packet v%d; want v2", i, wp.Pin.ProfileVersion, pkt.ProfileVersion)
		}
		if got := factsFrom(pkt, orient.FamilyObjects); got != 5 {
			t.Errorf("wave %d: %d object facts, want 5", i, got)
		}
	}
	wp, after := wave(t, l, fmt.Sprintf("w%d", n+1), opts)
	if wp.Pin.ProfileVersion != 3 || factsFrom(after, orient.FamilyObjects) != 0 {
		t.Errorf("wave N+1: pinned v%d with %d object facts; want v3 (the revert) with 0", wp.Pin.ProfileVersion, factsFrom(after, orient.FamilyObjects))
	}
	v3, _ := ps.Version(ctx, "default", 3)
	if len(v3.Rules) != len(base.Rules) || v3.HorizonWaves != 0 || v3.UpdatedBy != "orientation.horizon.revert" {
		t.Errorf("v3: %d rules, horizon %d, by %s; want the base's rules, permanent, by the horizon revert", len(v3.Rules), v3.HorizonWaves, v3.UpdatedBy)
	}
	// A re-run of Plan for a wave of the horizon keeps its pin.
	if pin, _, err := ps.Pin(ctx, "w2", "default"); err != nil || pin.ProfileVersion != 2 {
		t.Errorf("re-pin w2: got v%d, %v; want v2", pin.ProfileVersion, err)
	}
	// Replay verification of a shifted wave reproduces its digest.
	v, err := orient.NewCompiler(l, opts).Verify(ctx, "w1")
	if err != nil || !v.Match {
		t.Errorf("Verify w1: got %+v, %v; want a match", v, err)
	}
}

func TestPinRecoversAClaimWithoutPin(t *testing.T) {
	ctx := context.Background()
	l := openLedger(t)
	ps := orient.NewProfiles(l)
	base, _ := ps.Current(ctx, "default")
	p := proposal("p", base, func(p *ora.ProfileProposal) { p.EffectiveWaves = 1; p.Change.MaxSourceShare = ptr(0.4) })
	if _, err := ps.Propose(ctx, p, orient.Principal{Subject: "a", Namespace: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.Approve(ctx, "p", orient.Principal{Subject: "b", Namespace: "main"}); err != nil {
		t.Fatal(err)
	}
	storeSignal(t, l, testSignal("w1"))
	// The wave claimed the horizon's one slot, then crashed before its pin.
	c, _ := ora.NewEntry(orient.ProfileKey("default"), ora.KindOrientationPin, "v000002/slot/000000", ora.OrientationPin{WaveID: "w1", ProfileID: "default", ProfileVersion: 2})
	if _, err := l.Append(ctx, c); err != nil {
		t.Fatal(err)
	}
	pin, _, err := ps.Pin(ctx, "w1", "default")
	if err != nil || pin.ProfileVersion != 2 {
		t.Errorf("Pin after a crash: got v%d, %v; want v2 (its own claim)", pin.ProfileVersion, err)
	}
}

func TestVerifyDetectsADifferentReplay(t *testing.T) {
	ctx := context.Background()
	l := openLedger(t)
	seedWorld(t, l)
	wave(t, l, "w1")
	// A fact that arrives after the packet changes what a replay compiles.
	appendEntry(t, l, "w1", ora.KindObservedFact, "late/00000", ora.Fact{ID: "late/00000", WaveID: "w1", SourceType: "recent-actions",
		Provenance: map[string]string{}, Normalized: json.RawMessage(`{"late":true}`), Utility: 1, EstimatedTokens: 10, CreatedAt: t0}, t0)
	v, err := orient.NewCompiler(l).Verify(ctx, "w1")
	if err != nil || v.Match {
		t.Errorf("Verify: got %+v, %v; want a mismatch", v, err)
	}
	es, _ := l.Entries(ctx, "w1")
	n := 0
	for _, e := range es {
		if e.Kind == ora.KindOrientationAudit {
			var r ora.AuditRecord
			_ = json.Unmarshal(e.Body, &r)
			if r.Action == ora.AuditPacketReplayVerified && r.Result == "mismatch" {
				n++
			}
		}
	}
	if n != 1 {
		t.Errorf("replay_verified audit entries with result mismatch: got %d, want 1", n)
	}
}

func TestOrientationLogLinesCarryTheTenFields(t *testing.T) {
	var buf strings.Builder
	l := openLedger(t)
	opts := func(o *orient.Options) { o.Logger = slog.New(slog.NewJSONHandler(&buf, nil)) }
	wave(t, l, "w1", opts)
	ps := orient.NewProfiles(l, opts)
	base, _ := ps.Current(context.Background(), "default")
	if _, err := ps.Propose(orient.WithTraceID(context.Background(), "trace-1"), proposal("p", base, func(p *ora.ProfileProposal) { p.Change.MaxSourceShare = ptr(0.4) }), orient.Principal{Subject: "a", Namespace: "main"}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) < 3 {
		t.Fatalf("got %d log lines, want plan, compile and propose at least:\n%s", len(lines), buf.String())
	}
	fields := []string{"trace_id", "wave_id", "packet_id", "profile_id", "profile_version", "actor", "action", "result", "latency_ms", "error_code"}
	for _, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		for _, f := range fields {
			if _, ok := m[f]; !ok {
				t.Errorf("log line %s lacks %s", line, f)
			}
		}
	}
	if !strings.Contains(buf.String(), `"trace_id":"trace-1"`) {
		t.Errorf("the trace id of the context is not logged:\n%s", buf.String())
	}
}

// A proposal whose rules name a source family this home has not configured
// is refused before anything is written (approved, it would fail every wave
// of its horizon at Plan); the same rules pass where the family exists.
func TestProposalNamesOnlyConfiguredFamilies(t *testing.T) {
	ctx := context.Background()
	agent := orient.Principal{Subject: "agent-1", Namespace: "main"}
	withObjects := func(p *ora.ProfileProposal, base ora.Profile) {
		rules := slices.Clone(base.Rules)
		r := rules[0]
		r.ID, r.SourceType = "watch-objects", orient.FamilyObjects
		p.Change.Rules = append(rules, r)
	}
	tests := []struct {
		name    string
		opts    []func(*orient.Options)
		wantErr string
	}{
		{"ledger only", nil, `change.rules[`},
		{"objects configured", []func(*orient.Options){orient.WithObjects(nil)}, ""},
		{"http without an allowed prefix", []func(*orient.Options){func(o *orient.Options) { o.Sources = map[string]orient.Source{orient.FamilyHTTP: orient.HTTP{}} }}, `"objects" is not configured here (configured: ledger)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := openLedger(t)
			ps := orient.NewProfiles(l, tt.opts...)
			base, err := ps.Current(ctx, "default")
			if err != nil {
				t.Fatal(err)
			}
			p := proposal("objects-1", base, func(p *ora.ProfileProposal) { withObjects(p, base) })
			_, err = ps.Propose(ctx, p, agent)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Propose: %v, want it recorded", err)
				}
				return
			}
			if ora.ErrorCode(err) != ora.EINVALID || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), `source family "objects"`) {
				t.Fatalf("Propose: %v, want EINVALID naming the family (%s)", err, tt.wantErr)
			}
			if _, err := ps.Proposal(ctx, "objects-1"); ora.ErrorCode(err) != ora.ENOTFOUND {
				t.Errorf("the refused proposal was recorded: %v", err)
			}
		})
	}
}
