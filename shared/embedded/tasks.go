package embedded

import (
	"context"
	"fmt"

	acth "github.com/ora-runtime/ora/functions/act/handler"
	escalateh "github.com/ora-runtime/ora/functions/escalate/handler"
	flagh "github.com/ora-runtime/ora/functions/flag-review/handler"
	operateh "github.com/ora-runtime/ora/functions/operate/handler"
	recordh "github.com/ora-runtime/ora/functions/record/handler"
	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/idempotency"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/review"
	"github.com/ora-runtime/ora/shared/stepfn"
	"github.com/ora-runtime/ora/shared/validate"
)

// actHandlers builds the handlers from Act onwards. Locally, notify goes to
// the log (its evidence to the ledger), object.put to a folder, and every
// commitment change becomes a table-change signal, as DynamoDB Streams makes
// one on AWS; function.invoke runs the configured commands and URLs.
func (r *Runtime) actHandlers(models func(*validate.Options)) (map[string]any, error) {
	commitments := commitmentFeed{Ledger: r.ledger, observer: r.observer, r: r}
	notify := act.NewLogNotify(r.logger)
	objects := act.Folder{Root: r.cfg.Actions.Object.Root}
	registry := act.Standard(r.cfg.Actions, notify, objects, commitments, nil)
	registry.Register(act.TypeHTTPRequest, act.NewHTTPRequest(r.cfg.Actions.HTTP, nil, r.connections))
	if len(r.cfg.Functions) > 0 {
		local := func(c map[string]act.FunctionConfig) (map[string]act.Function, error) {
			return act.LocalFunctions(c, r.cfg.DataDir, r.cfg.Actions.HTTP.SigningSecret, nil)
		}
		if err := act.RegisterFunctions(registry, r.cfg.Functions, local, r.bodies()); err != nil {
			return nil, fmt.Errorf("embedded: %w", err)
		}
	}
	if r.mcp != nil { // made by openMCP
		registry.Register(act.TypeMCPCall, act.NewMCPCall(r.mcp))
	}
	once := act.Idempotent(idempotency.New(r.idem, func(o *idempotency.Options) { o.KeyPrefix = "act" }))
	validators := validate.New(r.ledger, func(o *validate.Options) {
		o.Objects, o.Commitments = objects, r.ledger
		o.Motor = r.motors // the promoted motor's validator settings
		o.Renormalize = func(s ora.NormalizedSignal) (ora.NormalizedSignal, error) {
			return observe.Normalize(s.Source.Type, s.Raw)
		}
		models(o)
	})
	reviews := r.reviews()
	actor := act.New(commitments, registry, once, func(o *act.Options) { o.Log, o.MaxParallel = r.logger, r.cfg.Actions.MaxParallel })
	r.ops = r.operator()
	return map[string]any{
		"flag-review":        flagh.Handler{Reviewer: reviews}.Handle,
		"escalate":           escalateh.Handler{Escalator: reviews, Secrets: r.secrets}.Handle,
		"act":                acth.Handler{Actor: actor}.Handle,
		"validate-technical": validate.Handler{Runner: validators, Validator: ora.ValidatorTechnical}.Handle,
		"validate-safety":    validate.Handler{Runner: validators, Validator: ora.ValidatorSafety}.Handle,
		"validate-intent":    validate.Handler{Runner: validators, Validator: ora.ValidatorIntent}.Handle,
		"witness":            validate.Handler{Runner: validators, Validator: ora.ValidatorWitness}.Handle,
		"record":             recordh.Handler{Recorder: reviews}.Handle,
		"operate":            operateh.Handler{Operator: r.ops, Secrets: r.secrets}.Handle,
	}, nil
}

func (r *Runtime) reviews() *review.Service {
	return review.New(r.ledger, func(o *review.Options) {
		o.Notifier = act.NewLogNotify(r.logger)
		o.Settler = settler{r.engine}
		o.Regret = orient.NewProfiles(r.ledger, r.orientOptions()).RecordRegret
	})
}

// verdicts settles escalated decisions for the HTTP API.
func (r *Runtime) verdicts() httpapi.Verdicts { return r.reviews() }

var _ httpapi.Verdicts = (*review.Service)(nil)

// settler hands a human's verdict to the waiting Escalate task, translating
// the engine's errors into the domain's: a task that is no longer waiting (it
// timed out, or was settled) is a conflict.
type settler struct{ e *stepfn.Engine }

func (s settler) SendTaskSuccess(ctx context.Context, token string, output []byte) error {
	err := s.e.SendTaskSuccess(ctx, token, output)
	switch stepfn.ErrorCode(err) {
	case "":
		return nil
	case stepfn.CodeTaskDoesNotExist, stepfn.CodeTaskTimedOut, stepfn.CodeInvalidToken:
		return ora.Conflict(nil, "the escalation is no longer waiting: %v", err)
	}
	return fmt.Errorf("settle escalation: %w", err)
}

// commitmentFeed is the ledger, plus a table-change signal for every
// commitment it opens or closes: locally what DynamoDB Streams does on AWS.
type commitmentFeed struct {
	ora.Ledger
	observer *observe.Observer
	r        *Runtime
}

func (c commitmentFeed) OpenCommitment(ctx context.Context, cm ora.Commitment) (ora.Commitment, error) {
	got, err := c.Ledger.OpenCommitment(ctx, cm)
	if err == nil {
		c.changed(ctx, "insert", got)
	}
	return got, err
}

func (c commitmentFeed) CloseCommitment(ctx context.Context, id, by string) (ora.Commitment, error) {
	got, err := c.Ledger.CloseCommitment(ctx, id, by)
	if err == nil {
		c.changed(ctx, "modify", got)
	}
	return got, err
}

// EntriesOfKinds reads through the ledger's own EntriesOfKinds (SQLite's
// leaves the rest of the wave unread), else filters Entries.
func (c commitmentFeed) EntriesOfKinds(ctx context.Context, signalID string, kinds ...ora.EntryKind) ([]ora.Entry, error) {
	if kr, ok := c.Ledger.(ora.KindReader); ok {
		return kr.EntriesOfKinds(ctx, signalID, kinds...)
	}
	out, err := ora.EntriesOfKinds(ctx, c.Ledger, signalID, kinds...)
	if ora.ErrorCode(err) == ora.ENOTFOUND {
		return nil, nil // a KindReader's empty result is not an error
	}
	return out, err
}

// changed emits the signal. A failure is logged, not returned: the
// commitment itself is written, and the action that wrote it succeeded.
func (c commitmentFeed) changed(ctx context.Context, event string, cm ora.Commitment) {
	if _, err := c.observer.CommitmentChanged(context.WithoutCancel(ctx), event, cm); err != nil {
		c.r.logger.Error("table-change signal lost", "commitment", cm.ID, "event", event, "err", err)
	}
}
