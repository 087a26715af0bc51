package orient

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// AdminSettings is the guard's admin configuration as a deployer writes it:
// `orientation.admin` in ora dev's config, the `admin` key of the
// ora:orientation CDK context, or the body of PUT /api/orientation/admin.
// A field left out keeps the value it changes (the default's, or the
// current one's through the API).
type AdminSettings struct {
	// MinBands are the floors (tokens) no profile version may go below, by band.
	MinBands map[ora.Band]int `json:"min_bands,omitempty" yaml:"min_bands,omitempty"`
	// MaxTokenBudget is the largest total budget a proposal may ask for.
	MaxTokenBudget int `json:"max_token_budget,omitempty" yaml:"max_token_budget,omitempty"`
	// CriticalSources are the source families whose enabled rules must keep
	// at least this summed priority weight.
	CriticalSources map[string]float64 `json:"critical_sources,omitempty" yaml:"critical_sources,omitempty"`
	// MaxHorizonWaves is the longest horizon a proposal may ask for.
	MaxHorizonWaves int `json:"max_horizon_waves,omitempty" yaml:"max_horizon_waves,omitempty"`
	// MainNamespace is the namespace whose proposals may change anything.
	MainNamespace string `json:"main_namespace,omitempty" yaml:"main_namespace,omitempty"`
}

// Settings returns a's settings, every field set.
func (a Admin) Settings() AdminSettings { return AdminSettings(a) }

// Apply returns base with the settings' fields that are set, checked:
// known bands, floors that are not negative and fit in the budget, critical
// weights that are not negative, a positive horizon. Errors: EINVALID
// naming the field.
func (s AdminSettings) Apply(base Admin) (Admin, error) {
	out := base
	if s.MinBands != nil {
		out.MinBands = map[ora.Band]int{}
		for b, n := range base.MinBands {
			out.MinBands[b] = n
		}
		for b, n := range s.MinBands {
			if !slices.Contains(ora.AllBands, b) {
				return Admin{}, ora.Invalid("min_bands."+string(b), "is not a band (bands: %s)", bandNames())
			}
			if n < 0 {
				return Admin{}, ora.Invalid("min_bands."+string(b), "%d is negative", n)
			}
			out.MinBands[b] = n
		}
	}
	if s.MaxTokenBudget < 0 {
		return Admin{}, ora.Invalid("max_token_budget", "%d is negative", s.MaxTokenBudget)
	}
	if s.MaxTokenBudget > 0 {
		out.MaxTokenBudget = s.MaxTokenBudget
	}
	if s.CriticalSources != nil {
		out.CriticalSources = map[string]float64{}
		for f, w := range s.CriticalSources {
			if strings.TrimSpace(f) == "" {
				return Admin{}, ora.Invalid("critical_sources", "a family name is empty")
			}
			if w < 0 {
				return Admin{}, ora.Invalid("critical_sources."+f, "%v is negative", w)
			}
			out.CriticalSources[f] = w
		}
	}
	if s.MaxHorizonWaves < 0 {
		return Admin{}, ora.Invalid("max_horizon_waves", "%d is negative", s.MaxHorizonWaves)
	}
	if s.MaxHorizonWaves > 0 {
		out.MaxHorizonWaves = s.MaxHorizonWaves
	}
	if s.MainNamespace != "" {
		out.MainNamespace = s.MainNamespace
	}
	sum := 0
	for _, n := range out.MinBands {
		sum += n
	}
	if sum > out.MaxTokenBudget {
		return Admin{}, ora.Invalid("min_bands", "the floors add up to %d tokens, more than max_token_budget %d", sum, out.MaxTokenBudget)
	}
	return out, nil
}

func bandNames() string {
	names := make([]string, len(ora.AllBands))
	for i, b := range ora.AllBands {
		names[i] = string(b)
	}
	return strings.Join(names, ", ")
}

// AdminKey is the pseudo signal id the admin settings' versions live under.
const AdminKey = "orientation-admin:guard"

// AdminView is the guard's admin configuration in effect: the deployment's
// configuration (Version 0) or the latest version set through the API.
type AdminView struct {
	Version   int           `json:"version"`
	Source    string        `json:"source"` // config | api
	Settings  AdminSettings `json:"settings"`
	UpdatedBy string        `json:"updated_by,omitempty"`
	UpdatedAt time.Time     `json:"updated_at,omitzero"`
}

// The admin view's sources.
const (
	AdminFromConfig = "config"
	AdminFromAPI    = "api"
)

// Admin returns the admin configuration the guard enforces now: the latest
// version written by SetAdmin, else the configured one. Errors: ETRANSIENT.
func (s *Profiles) Admin(ctx context.Context) (AdminView, error) {
	v := AdminView{Source: AdminFromConfig, Settings: s.o.Admin.Settings()}
	es, err := s.store.Entries(ctx, AdminKey)
	if err != nil && ora.ErrorCode(err) != ora.ENOTFOUND {
		return AdminView{}, fmt.Errorf("orient: admin settings: %w", err)
	}
	for _, e := range es {
		if e.Kind != ora.KindOrientationAdmin {
			continue
		}
		var w AdminView
		if err := json.Unmarshal(e.Body, &w); err != nil {
			return AdminView{}, ora.Errorf(ora.EINTERNAL, "orient: stored admin settings %s do not decode: %v", e.Qualifier, err)
		}
		if w.Version > v.Version {
			v = w
		}
	}
	return v, nil
}

// admin is the Admin the guard enforces now (see Admin).
func (s *Profiles) admin(ctx context.Context) (Admin, error) {
	v, err := s.Admin(ctx)
	if err != nil {
		return Admin{}, err
	}
	return v.Settings.Apply(*s.o.Admin)
}

// SetAdmin writes the next version of the admin configuration: the current
// one with change's fields applied, checked before anything is written.
// Two writers racing for one version: the second gets ECONFLICT and reads
// again. Errors: EINVALID naming the field, ECONFLICT, ETRANSIENT.
func (s *Profiles) SetAdmin(ctx context.Context, change AdminSettings, by Principal) (AdminView, error) {
	start := time.Now()
	cur, err := s.Admin(ctx)
	if err != nil {
		return AdminView{}, err
	}
	base, err := cur.Settings.Apply(*s.o.Admin)
	if err != nil {
		return AdminView{}, err
	}
	next, err := change.Apply(base)
	if err != nil {
		return AdminView{}, err
	}
	v := AdminView{Version: cur.Version + 1, Source: AdminFromAPI, Settings: next.Settings(), UpdatedBy: by.Subject, UpdatedAt: s.o.Now().UTC()}
	e, err := ora.NewEntry(AdminKey, ora.KindOrientationAdmin, versionQualifier(v.Version), v)
	if err != nil {
		return AdminView{}, err
	}
	if _, err := s.store.Append(ctx, e); err != nil {
		if ora.ErrorCode(err) == ora.ECONFLICT {
			return AdminView{}, ora.Errorf(ora.ECONFLICT, "orient: admin settings version %d was written meanwhile: read them again", v.Version)
		}
		return AdminView{}, fmt.Errorf("orient: set admin settings: %w", err)
	}
	if err := s.audit(ctx, AdminKey, AuditAdminChanged+"/"+versionQualifier(v.Version), ora.AuditRecord{Action: AuditAdminChanged, Actor: by.Subject, Subject: AdminKey, Result: fmt.Sprintf("version %d", v.Version)}); err != nil {
		return AdminView{}, err
	}
	s.o.log(ctx, "admin", logFields{Actor: by.Subject, Result: "changed", Start: start})
	return v, nil
}

// AuditAdminChanged is the audit action of a change to the admin settings.
const AuditAdminChanged = "orientation.admin.changed"
