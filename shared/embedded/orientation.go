package embedded

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/telemetry"
)

// OrientationConfig configures the orientation kernel's source families in
// ora dev. The objects family reads the local object store
// (actions.object.root, .ora/objects by default).
type OrientationConfig struct {
	// HTTPAllow lists the URL prefixes the http family may GET (the
	// operator's list; a profile's limits.http_allow narrows it).
	HTTPAllow []string `yaml:"http_allow,omitempty"`
	// Admin changes the guard's admin settings (the band floors, the
	// largest budget, the critical source families, the longest horizon,
	// the main namespace); what it leaves out keeps the default. PUT
	// /api/orientation/admin (scope orientation.admin) changes them later.
	Admin orient.AdminSettings `yaml:"admin,omitempty"`
	// ProposalTTL is how long a proposal waits for a decision before it
	// expires (default 168h).
	ProposalTTL Duration `yaml:"proposal_ttl,omitempty"`
	// SensitiveProvenance names fact provenance fields whose values are kept
	// in facts and packets as references (kind and digest), never as they
	// are; URLs with credentials, credential headers and every registered
	// secret are kept so anyway.
	SensitiveProvenance []string `yaml:"sensitive_provenance,omitempty"`
}

// admin returns the guard's admin settings: the defaults for the budget
// with the config's changes. Errors: EINVALID naming the key.
func (c OrientationConfig) admin(budget int) (orient.Admin, error) {
	if budget == 0 {
		budget = ora.DefaultTokenBudget
	}
	a, err := c.Admin.Apply(orient.DefaultAdmin(budget))
	var e *ora.Error
	if errors.As(err, &e) && e.Field != "" {
		return orient.Admin{}, ora.Invalid("orientation.admin."+e.Field, "%s", e.Message)
	}
	return a, err
}

// orientOptions are the options every orientation part of the runtime
// shares: the budget, the source families, the logger.
func (r *Runtime) orientOptions() func(*orient.Options) {
	return func(o *orient.Options) {
		o.TokenBudget = r.cfg.TokenBudget
		if a, err := r.cfg.Orientation.admin(r.cfg.TokenBudget); err == nil { // complete checked it
			o.Admin = &a
		}
		o.ProposalTTL = time.Duration(r.cfg.Orientation.ProposalTTL)
		var objects orient.ObjectReader = orient.Folder{Dir: r.cfg.Actions.Object.Root}
		if r.o.objects != nil {
			objects = r.o.objects
		}
		o.Sources = map[string]orient.Source{
			orient.FamilyObjects: orient.Objects{Reader: objects},
			orient.FamilyHTTP:    orient.HTTP{Allow: r.cfg.Orientation.HTTPAllow},
		}
		o.Logger = r.logger
		o.Secrets, o.SensitiveProvenance = r.secrets, r.cfg.Orientation.SensitiveProvenance
		o.Jobs = r.jobs()
		o.Metrics = r.o.OrientationMetrics
		if o.Metrics == nil {
			o.Metrics = telemetry.WithPrefix(r.metrics)
		}
	}
}

// JobsBucket is the bucket name ora dev's Plan writes each wave's jobs
// under, in the jobs folder (DataDir/jobs/ora-jobs/waves/SIGNAL/jobs.json).
const JobsBucket = "ora-jobs"

// JobsRetention is how long ora dev keeps a wave's jobs file: the local
// counterpart of the jobs bucket's lifecycle rule on AWS.
const JobsRetention = 7 * 24 * time.Hour

// jobs is the local job store: Plan writes to it, the engine's ItemReader
// reads from it.
func (r *Runtime) jobs() orient.JobFolder {
	return orient.JobFolder{Dir: filepath.Join(r.cfg.DataDir, "jobs"), Bucket: JobsBucket}
}

// orientation returns the service behind the /api/orientation routes.
func (r *Runtime) orientation() httpapi.Orientation {
	return orient.NewService(r.ledger, r.orientOptions())
}

// VerifyPacket replays a wave's orientation packet against the configured
// ledger (seed 002 §13.6) and records the orientation.packet.replay_verified
// audit entry; `ora orientation verify` calls it. Errors: ENOTFOUND, EINVALID,
// ETRANSIENT.
func VerifyPacket(ctx context.Context, cfg Config, waveID string) (orient.Verification, error) {
	if err := cfg.complete(); err != nil {
		return orient.Verification{}, err
	}
	r := &Runtime{cfg: cfg, logger: slog.New(slog.DiscardHandler)}
	if err := r.openStores(ctx); err != nil {
		return orient.Verification{}, err
	}
	defer func() {
		for _, c := range r.closers {
			_ = c()
		}
	}()
	return orient.NewService(r.ledger, r.orientOptions()).Verify(ctx, waveID)
}
