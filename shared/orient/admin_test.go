package orient_test

import (
	"context"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

func TestAdminSettingsApply(t *testing.T) {
	base := orient.DefaultAdmin(ora.DefaultTokenBudget)
	tests := []struct {
		name   string
		change orient.AdminSettings
		field  string // "" when valid
		check  func(orient.Admin) bool
	}{
		{"nothing changes nothing", orient.AdminSettings{}, "", func(a orient.Admin) bool { return a.MinBands[ora.BandIdentity] == 12000 && a.MaxHorizonWaves == 100 }},
		{"a floor raised, the others kept", orient.AdminSettings{MinBands: map[ora.Band]int{ora.BandSituational: 30000}}, "",
			func(a orient.Admin) bool {
				return a.MinBands[ora.BandSituational] == 30000 && a.MinBands[ora.BandIdentity] == 12000
			}},
		{"budget, horizon and namespace", orient.AdminSettings{MaxTokenBudget: 200000, MaxHorizonWaves: 10, MainNamespace: "ops"}, "",
			func(a orient.Admin) bool {
				return a.MaxTokenBudget == 200000 && a.MaxHorizonWaves == 10 && a.MainNamespace == "ops"
			}},
		{"critical families replaced", orient.AdminSettings{CriticalSources: map[string]float64{"objects": 0.5}}, "",
			func(a orient.Admin) bool { return len(a.CriticalSources) == 1 && a.CriticalSources["objects"] == 0.5 }},
		{"an unknown band", orient.AdminSettings{MinBands: map[ora.Band]int{"mood": 1}}, "min_bands.mood", nil},
		{"a negative floor", orient.AdminSettings{MinBands: map[ora.Band]int{ora.BandReserve: -1}}, "min_bands.reserve", nil},
		{"floors over the budget", orient.AdminSettings{MaxTokenBudget: 50000}, "min_bands", nil},
		{"a negative budget", orient.AdminSettings{MaxTokenBudget: -5}, "max_token_budget", nil},
		{"a negative weight", orient.AdminSettings{CriticalSources: map[string]float64{"ledger": -1}}, "critical_sources.ledger", nil},
		{"an empty family", orient.AdminSettings{CriticalSources: map[string]float64{" ": 1}}, "critical_sources", nil},
		{"a negative horizon", orient.AdminSettings{MaxHorizonWaves: -1}, "max_horizon_waves", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := tt.change.Apply(base)
			if got := ora.ErrorField(err); got != tt.field || (tt.field != "" && ora.ErrorCode(err) != ora.EINVALID) {
				t.Fatalf("Apply: %v (field %q), want field %q", err, got, tt.field)
			}
			if tt.check != nil && !tt.check(a) {
				t.Errorf("Apply: got %+v", a)
			}
		})
	}
	if base.MinBands[ora.BandSituational] != 20000 {
		t.Errorf("Apply changed its base: %v", base.MinBands)
	}
}

// The guard enforces the admin settings in effect: the configured ones,
// then each version written through SetAdmin; a bad change writes nothing.
func TestSetAdminMovesTheGuard(t *testing.T) {
	ctx := context.Background()
	l := openLedger(t)
	configured := orient.DefaultAdmin(ora.DefaultTokenBudget)
	configured.MaxHorizonWaves = 50
	ps := orient.NewProfiles(l, func(o *orient.Options) { o.Admin = &configured })
	v, err := ps.Admin(ctx)
	if err != nil || v.Source != orient.AdminFromConfig || v.Version != 0 || v.Settings.MaxHorizonWaves != 50 {
		t.Fatalf("Admin: %+v, %v; want the configured settings, version 0", v, err)
	}
	base, err := ps.Current(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	admin := orient.Principal{Subject: "root", Namespace: "main"}
	agent := orient.Principal{Subject: "agent", Namespace: "main"}
	long := proposal("long-1", base, func(p *ora.ProfileProposal) { p.EffectiveWaves = 40; p.Change.MaxSourceShare = ptr(0.4) })
	if pv, err := ps.Propose(ctx, long, agent); err != nil || pv.Status != ora.ProposalPending {
		t.Fatalf("40 waves under a 50-wave maximum: %s, %v; want pending", pv.Status, err)
	}
	if _, err := ps.SetAdmin(ctx, orient.AdminSettings{MaxTokenBudget: 1}, admin); ora.ErrorField(err) != "min_bands" {
		t.Fatalf("SetAdmin with floors over the budget: %v, want EINVALID min_bands", err)
	}
	if v, _ := ps.Admin(ctx); v.Version != 0 {
		t.Fatalf("a refused change wrote version %d", v.Version)
	}
	v, err = ps.SetAdmin(ctx, orient.AdminSettings{MaxHorizonWaves: 20}, admin)
	if err != nil || v.Version != 1 || v.Source != orient.AdminFromAPI || v.UpdatedBy != "root" || v.Settings.MaxHorizonWaves != 20 || v.Settings.MinBands[ora.BandIdentity] != 12000 {
		t.Fatalf("SetAdmin: %+v, %v", v, err)
	}
	long.ID = "long-2"
	pv, err := ps.Propose(ctx, long, agent)
	if err != nil || pv.Status != ora.ProposalRejected || pv.Decision.RejectionCode != orient.RejectHorizon {
		t.Fatalf("40 waves under a 20-wave maximum: %+v, %v; want rejected %s", pv.Decision, err, orient.RejectHorizon)
	}
	if v, _ := ps.SetAdmin(ctx, orient.AdminSettings{MainNamespace: "ops"}, admin); v.Version != 2 || v.Settings.MaxHorizonWaves != 20 {
		t.Errorf("a second change keeps the first: %+v", v)
	}
}

// A proposal nobody decides within its time to live expires: terminally,
// audited, counted, and no longer approvable.
func TestProposalExpires(t *testing.T) {
	ctx := context.Background()
	l := openLedger(t)
	now := time.Now()
	m := &countingMetrics{adds: map[string]float64{}}
	ps := orient.NewProfiles(l, func(o *orient.Options) {
		o.ProposalTTL = time.Hour
		o.Now = func() time.Time { return now }
		o.Metrics = m
	})
	base, err := ps.Current(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	p := proposal("late-1", base, func(p *ora.ProfileProposal) { p.Change.MaxSourceShare = ptr(0.4) })
	if v, err := ps.Propose(ctx, p, orient.Principal{Subject: "agent", Namespace: "main"}); err != nil || v.Status != ora.ProposalPending {
		t.Fatalf("Propose: %s, %v", v.Status, err)
	}
	now = now.Add(59 * time.Minute)
	if v, _ := ps.Proposal(ctx, "late-1"); v.Status != ora.ProposalPending {
		t.Fatalf("within its time to live: %s, want pending", v.Status)
	}
	now = now.Add(2 * time.Minute)
	v, err := ps.Proposal(ctx, "late-1")
	if err != nil || v.Status != ora.ProposalExpired || v.Decision.RejectionCode != orient.RejectExpired || v.Decision.DecidedBy != "orientation.expiry" {
		t.Fatalf("past its time to live: %+v, %v; want expired", v.Decision, err)
	}
	if _, err := ps.Approve(ctx, "late-1", orient.Principal{Subject: "alice", Namespace: "main"}); ora.ErrorCode(err) != ora.ECONFLICT {
		t.Errorf("Approve an expired proposal: %v, want ECONFLICT", err)
	}
	es, _ := l.Entries(ctx, orient.ProposalKey("late-1"))
	audits := 0
	for _, e := range es {
		if e.Kind == ora.KindOrientationAudit && e.Qualifier == ora.AuditProfileExpired {
			audits++
		}
	}
	if audits != 1 || m.adds[orient.MetricProposals+"[status expired]"] != 1 {
		t.Errorf("audits %d, metrics %v; want one expired audit and profile_proposal_total{status=expired} 1", audits, m.adds)
	}
}

// The admin settings and the proposals' time to live reach AWS's functions
// through their environment (the ora:orientation context), checked there.
func TestEnvOptionsAdmin(t *testing.T) {
	tests := []struct {
		name       string
		env        map[string]string
		field      string
		wantWaves  int
		wantTTL    time.Duration
		wantBudget int
	}{
		{"unset keeps the defaults", nil, "", 100, orient.DefaultProposalTTL, ora.DefaultTokenBudget},
		{"a horizon and a time to live", map[string]string{"ORA_ORIENTATION_ADMIN": `{"max_horizon_waves":20}`, "ORA_PROPOSAL_TTL": "72h"}, "", 20, 72 * time.Hour, ora.DefaultTokenBudget},
		{"the budget follows ORA_TOKEN_BUDGET", map[string]string{"ORA_TOKEN_BUDGET": "200000", "ORA_ORIENTATION_ADMIN": `{}`}, "", 100, orient.DefaultProposalTTL, 200000},
		{"an unknown setting", map[string]string{"ORA_ORIENTATION_ADMIN": `{"grant_admin":true}`}, "ORA_ORIENTATION_ADMIN", 0, 0, 0},
		{"floors over the budget", map[string]string{"ORA_ORIENTATION_ADMIN": `{"max_token_budget":1000}`}, "ORA_ORIENTATION_ADMIN", 0, 0, 0},
		{"not JSON", map[string]string{"ORA_ORIENTATION_ADMIN": `max_horizon_waves=20`}, "ORA_ORIENTATION_ADMIN", 0, 0, 0},
		{"not a duration", map[string]string{"ORA_PROPOSAL_TTL": "a week"}, "ORA_PROPOSAL_TTL", 0, 0, 0},
		{"a negative duration", map[string]string{"ORA_PROPOSAL_TTL": "-1h"}, "ORA_PROPOSAL_TTL", 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opt, err := orient.EnvOptions(func(k string) string { return tt.env[k] })
			if ora.ErrorField(err) != tt.field {
				t.Fatalf("EnvOptions: %v, want field %q", err, tt.field)
			}
			if tt.field != "" {
				return
			}
			var o orient.Options
			opt(&o)
			waves, ttl, budget := 100, orient.DefaultProposalTTL, ora.DefaultTokenBudget
			if o.Admin != nil {
				waves, budget = o.Admin.MaxHorizonWaves, o.Admin.MaxTokenBudget
			}
			if o.ProposalTTL != 0 {
				ttl = o.ProposalTTL
			}
			if waves != tt.wantWaves || ttl != tt.wantTTL || budget != tt.wantBudget {
				t.Errorf("got horizon %d, ttl %s, budget %d; want %d, %s, %d", waves, ttl, budget, tt.wantWaves, tt.wantTTL, tt.wantBudget)
			}
		})
	}
}
