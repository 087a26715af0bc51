package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/bodystore"
	"github.com/ora-runtime/ora/shared/connect"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/sqlite"
	"github.com/ora-runtime/ora/shared/stepfn"
	"github.com/ora-runtime/ora/shared/telemetry/prom"
	"github.com/ora-runtime/ora/statemachines"
)

// The local engine's names for the wave's state machine and its functions.
const (
	region       = "local"
	account      = "000000000000"
	stateMachine = "ora-wave"
)

// store is what the runtime needs of a ledger adapter.
type store interface {
	ora.Ledger
	ora.Debouncer
	observe.Coalescer
}

// Options tune a Runtime.
type Options struct {
	// Logger receives the runtime's structured logs. Default slog.Default().
	Logger *slog.Logger
	// Clock drives the engine's waits and timeouts. Default the real clock.
	Clock stepfn.Clock
	// WrapDynamoDB, when set, wraps the DynamoDB client of a dynamodb store
	// (make cost counts calls and capacity through it).
	WrapDynamoDB func(dynamo.Client) dynamo.Client
	// WrapBodies, when set, wraps the ledger's body store (make cost
	// counts its requests as S3 requests through it).
	WrapBodies func(ora.BodyStore) ora.BodyStore
	// DynamoDBLedger, when set, tunes a dynamodb store's ledger (make cost
	// turns its body cache off, as each Lambda function has its own).
	DynamoDBLedger func(*dynamo.Options)

	// OrientationMetrics receives the orientation metrics of seed 002 §14.1.
	// Default: none.
	OrientationMetrics orient.Metrics

	// objects replaces the objects family's reader (tests).
	objects orient.ObjectReader

	// Metrics keeps the runtime's metrics, served at GET /metrics. Default a
	// new registry.
	Metrics *prom.Registry

	// Secrets is the registry of sensitive values every writer consults
	// (pass the logger's). Default: cfg.Secrets().
	Secrets *ora.Secrets
}

// Runtime is a running `ora dev`: ledger, engine, handlers, API, triggers.
type Runtime struct {
	cfg      Config
	o        Options
	logger   *slog.Logger
	metrics  *prom.Registry
	ledger   store
	idem     ora.IdempotencyStore
	patterns reason.PatternCache
	spend    reason.SpendMeter
	engine   *stepfn.Engine
	children *childEngine // the Express children, in memory
	smArn    string
	observer *observe.Observer
	api      http.Handler
	faults   *faults
	motors   *motor.Registry
	golden   []motor.GoldenWave // the promotion gate's golden waves
	// replayBuild is the reasoner the gate replays them through (nil: rules).
	replayBuild motor.ReplayBuild
	liveRec     *motor.LiveRecorder // reasoner.record; nil when off
	ops         *operate.Service
	closers     []func() error
	wg          sync.WaitGroup
	// stopRetention stops the sweeper (retention.go) and waits for it.
	stopRetention func()
	// ledgerDB (SQLite ledgers only) and engineDB are checked by /healthz
	// and, after an unclean shutdown, at start (storage.go).
	ledgerDB, engineDB *sqlite.DB
	marked             bool // the running marker is ours to remove at Close
	wrapDB             func(dynamo.Client) dynamo.Client
	wrapBodies         func(ora.BodyStore) ora.BodyStore
	secrets            *ora.Secrets
	// connections are http.request's named APIs.
	connections *connect.Set
	mcp         *mcp.Client // the MCP servers' client (openMCP), nil without servers
}

// New builds the runtime from cfg: opens the stores, loads the state machine
// into the engine, registers every task handler, and resumes the waves a
// previous run left RUNNING. Call Serve to accept requests, Close when done.
func New(ctx context.Context, cfg Config, opts ...func(*Options)) (_ *Runtime, err error) {
	o := Options{Logger: slog.Default()}
	for _, f := range opts {
		f(&o)
	}
	if o.Metrics == nil {
		o.Metrics = prom.New()
	}
	if o.Secrets == nil {
		o.Secrets = cfg.Secrets()
	}
	r := &Runtime{cfg: cfg, logger: o.Logger, wrapDB: o.WrapDynamoDB, wrapBodies: o.WrapBodies, faults: newFaults(cfg.Faults), o: o, metrics: o.Metrics, secrets: o.Secrets}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded: data dir: %w", err)
	}
	if err := checkDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	if err := checkStoresAgree(cfg); err != nil {
		return nil, err
	}
	// The marker stays when New fails: the next start checks the files.
	unclean, err := markRunning(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if err := r.openStores(ctx); err != nil {
		return nil, err
	}
	// Connections read their secrets from the config; OAuth 2.0 tokens join
	// the registry as they are minted.
	if r.connections, err = connect.New(cfg.Connections, connect.Literal{}, func(o *connect.Options) { o.Secrets = r.secrets }); err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}

	// The engine keeps its executions in a SQLite file of its own, so waves
	// survive a restart whichever store the ledger uses.
	edb, err := sqlite.Open(ctx, filepath.Join(cfg.DataDir, "engine.db"))
	if err != nil {
		return nil, fmt.Errorf("embedded: engine store: %w", err)
	}
	r.closers = append(r.closers, edb.Close)
	r.engineDB = edb
	if unclean {
		if err := quickCheck(ctx, r.ledgerDB, r.engineDB); err != nil {
			return nil, err
		}
	}
	r.engine = stepfn.NewEngine(func(eo *stepfn.Options) {
		eo.Store = sqlite.NewExecutionStore(edb)
		eo.Objects = r.jobs() // the Fetch Map's ItemReader reads the jobs Plan wrote
		eo.Logger = r.logger
		eo.Region, eo.Account = region, account
		if o.Clock != nil {
			eo.Clock = o.Clock
		}
	})

	r.observer, err = observe.New(r.ledger, waveStarter{r}, cfg.Sources, func(oo *observe.Options) {
		oo.MaxBody = cfg.BodyLimit
		oo.EscalationTimeout = time.Duration(cfg.EscalationTimeout)
		oo.Debouncer = r.ledger
		if cfg.Coalesce.Window > 0 {
			oo.Coalescer = r.ledger
			oo.Coalesce = observe.CoalesceConfig{Window: time.Duration(cfg.Coalesce.Window), Sources: cfg.Coalesce.Sources}
		}
		oo.Logger = r.logger
		oo.Events = cfg.Events
		oo.Secrets = r.secrets
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: observer: %w", err)
	}
	// The Express children run on an engine of their own, in memory
	// (children.go); the parent starts them through .sync:2.
	childSubs := map[string]string{}
	for _, name := range functionNames {
		childSubs[statemachines.FunctionPlaceholder(name)] = FunctionArn(name)
	}
	var clock stepfn.Clock
	if o.Clock != nil {
		clock = o.Clock
	}
	if r.children, err = newChildEngine(clock, childSubs); err != nil {
		return nil, err
	}
	r.engine.RegisterIntegration(statemachines.StartExecutionSync("aws"), r.children)
	if err := r.registerHandlers(ctx); err != nil {
		return nil, err
	}
	subs := map[string]string{}
	for _, p := range statemachines.Placeholders(statemachines.Wave) {
		subs[p] = ""
	}
	for p, v := range statemachines.Integrations("aws") {
		subs[p] = v
	}
	for _, name := range functionNames {
		subs[statemachines.FunctionPlaceholder(name)] = FunctionArn(name)
	}
	for _, ch := range statemachines.Children {
		subs[ch.Placeholder] = r.children.arns[ch.Name]
	}
	for p, v := range subs {
		if v == "" {
			return nil, fmt.Errorf("embedded: the wave definition's ${%s} has no handler", p)
		}
	}
	r.smArn, err = r.engine.CreateStateMachine(stateMachine, statemachines.Substitute(statemachines.Wave, subs))
	if err != nil {
		return nil, fmt.Errorf("embedded: load statemachines/ora.asl.json: %w", err)
	}
	if err := r.engine.Resume(ctx); err != nil {
		return nil, fmt.Errorf("embedded: resume waves: %w", err)
	}
	// Expired facts, packets, jobs files, bodies and finished executions:
	// DynamoDB's TTL and the buckets' lifecycle rules on AWS.
	r.warnAutoVacuum(ctx)
	r.startRetention()
	// The outbox: a previous run may have recorded signals and died before
	// starting their waves; start them before taking new deliveries.
	now := time.Now()
	if _, err := r.observer.StartMissing(ctx, now.Add(-OutboxLookback), now.Add(time.Minute)); err != nil {
		return nil, fmt.Errorf("embedded: start the waves of recorded signals: %w", err)
	}
	api := (&httpapi.Server{
		Webhooks:  webhooks{r.observer},
		Entries:   r.ledger,
		Waves:     waves{r},
		Verdicts:  r.verdicts(),
		Operator:  r.ops,
		Motor:     r.motors,
		Recorded:  motor.Recorder{Ledger: r.ledger},
		Learned:   motor.Learner{Patterns: r.ops, Registry: r.motors},
		Authorize: httpapi.StaticTokens(cfg.Tokens),
		// On loopback the read routes are open, for curl and the CLI; on any
		// other address they need a token with orientation.read, as on AWS.
		ReadAuth:  !loopback(cfg.Listen),
		BodyLimit: cfg.BodyLimit,
		Logger:    r.logger,
		// The six /api/orientation routes always need their scopes.
		Orientation: r.orientation(),
		Namespace:   httpapi.TokenNamespaces(cfg.Tokens),
		Secrets:     r.secrets,
		Health:      r.health,
	}).Handler()
	r.api = r.routes(api)
	r.marked = true
	return r, nil
}

func (r *Runtime) openStores(ctx context.Context) error {
	switch r.cfg.Store.Kind {
	case "sqlite":
		db, err := sqlite.Open(ctx, r.cfg.Store.SQLitePath, func(o *sqlite.Options) {
			o.Bodies, o.Secrets, o.Retention = r.bodies(), r.secrets, r.cfg.Retention.ledger()
		})
		if err != nil {
			return fmt.Errorf("embedded: ledger: %w", err)
		}
		r.closers = append(r.closers, db.Close)
		r.ledgerDB = db
		r.ledger, r.idem = db, sqlite.NewIdempotencyStore(db)
		r.patterns, r.spend = db.Patterns(), db.Spend()
	case "dynamodb":
		d := r.cfg.Store.DynamoDB
		client, err := dynamoClient(ctx, d)
		if err != nil {
			return err
		}
		var db dynamo.Client = client
		if r.wrapDB != nil {
			db = r.wrapDB(client)
		}
		if d.CreateTables {
			for name, create := range map[string]func(context.Context, dynamo.Client, string) error{
				d.Table: dynamo.CreateLedgerTable, d.IdempotencyTable: dynamo.CreateIdempotencyTable,
			} {
				if err := create(ctx, db, name); err != nil && ora.ErrorCode(err) != ora.ECONFLICT {
					return fmt.Errorf("embedded: create table %s: %w", name, err)
				}
			}
		}
		ledger := dynamo.New(db, d.Table, func(o *dynamo.Options) {
			o.Bodies, o.Secrets, o.Retention = r.bodies(), r.secrets, r.cfg.Retention.ledger()
			if r.o.DynamoDBLedger != nil {
				r.o.DynamoDBLedger(o)
			}
		})
		r.ledger, r.idem = ledger, dynamo.NewIdempotencyStore(db, d.IdempotencyTable)
		r.patterns, r.spend = ledger.Patterns(), ledger.Spend()
	}
	return nil
}

// bodies is where the ledger keeps entry bodies over ora.MaxItemBytes: the
// local object folder (actions.object.root), under ora.BodyPrefix, as S3
// holds them on AWS.
func (r *Runtime) bodies() ora.BodyStore {
	var b ora.BodyStore = bodystore.Folder{Root: r.cfg.Actions.Object.Root}
	if r.wrapBodies != nil {
		b = r.wrapBodies(b)
	}
	return b
}

// Handler returns the HTTP API, GET /metrics and the console.
func (r *Runtime) Handler() http.Handler { return r.api }

// Serve accepts requests on the configured address and runs the schedules and
// the watched folder until ctx ends, then shuts down gracefully.
func (r *Runtime) Serve(ctx context.Context, ready func(addr string)) error {
	l, err := net.Listen("tcp", r.cfg.Listen)
	if err != nil {
		return fmt.Errorf("embedded: listen %s: %w", r.cfg.Listen, err)
	}
	limited := limit(l, r.cfg.Server.MaxConnections, r.cfg.Server.MaxConnectionsPerClient)
	l = limited
	srv := r.cfg.Server.httpServer(r.api)
	srv.ConnState = limited.connState
	if len(r.cfg.Schedules) > 0 {
		sched, err := observe.NewScheduler(r.observer, r.cfg.Schedules)
		if err != nil {
			l.Close()
			return fmt.Errorf("embedded: schedules: %w", err)
		}
		sched.Start()
		defer sched.Stop()
	}
	if err := os.MkdirAll(r.cfg.Watch.Dir, 0o755); err != nil {
		l.Close()
		return fmt.Errorf("embedded: watched folder: %w", err)
	}
	watcher, err := observe.NewWatcher(r.observer, r.cfg.Watch.Dir, time.Duration(r.cfg.Watch.Interval))
	if err != nil {
		l.Close()
		return fmt.Errorf("embedded: watched folder: %w", err)
	}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if err := watcher.Run(wctx); err != nil && !errors.Is(err, context.Canceled) {
			r.logger.Error("watched folder stopped", "dir", r.cfg.Watch.Dir, "err", err)
		}
	}()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.sweep(wctx)
	}()
	if err := r.startSources(wctx); err != nil {
		l.Close()
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	if ready != nil {
		ready(l.Addr().String())
	}
	select {
	case err := <-errc:
		return fmt.Errorf("embedded: serve: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// The outbox sweeps of `ora dev`: at start over OutboxLookback, then every
// OutboxInterval from where the last complete sweep got to, at most
// OutboxWindow back (a wave start that failed while the process ran, with
// nobody redelivering).
const (
	OutboxLookback = 7 * 24 * time.Hour
	OutboxInterval = 30 * time.Second
	OutboxWindow   = 15 * time.Minute
)

// sweep starts the waves of recent signals that have none, every
// OutboxInterval until ctx ends.
func (r *Runtime) sweep(ctx context.Context) {
	t := time.NewTicker(OutboxInterval)
	defer t.Stop()
	sweeper := &observe.OutboxSweeper{Observer: r.observer, Lookback: OutboxWindow}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := sweeper.Sweep(ctx, time.Now()); err != nil && ctx.Err() == nil {
			r.logger.Error("outbox sweep failed", "error", err)
		}
	}
}

// Close stops the background work and closes the stores.
func (r *Runtime) Close() error {
	if r.stopRetention != nil {
		r.stopRetention()
		r.stopRetention = nil
	}
	r.wg.Wait()
	if r.liveRec != nil {
		r.liveRec.Wait()
	}
	var errs []error
	if r.engine != nil {
		// Stop the running waves as a process exit would: their state is in
		// the engine's store, and the next runtime resumes them.
		errs = append(errs, r.engine.Close())
	}
	if r.children != nil {
		errs = append(errs, r.children.e.Close())
	}
	for i := len(r.closers) - 1; i >= 0; i-- {
		errs = append(errs, r.closers[i]())
	}
	r.closers = nil
	if r.marked {
		// A clean shutdown: the next start need not check the files.
		r.marked = false
		if err := os.Remove(filepath.Join(r.cfg.DataDir, RunningMarker)); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// loopback reports whether addr (host:port) listens on the loopback interface only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// FunctionArn is the Lambda ARN the local engine dispatches to a handler.
func FunctionArn(name string) string {
	return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", region, account, name)
}

// waveStarter starts waves on the local engine; the execution name is the
// signal id, so a second start of the same wave is the same execution.
type waveStarter struct{ r *Runtime }

func (w waveStarter) StartWave(ctx context.Context, signalID string, input []byte) error {
	_, err := w.r.engine.StartExecution(ctx, w.r.smArn, signalID, input)
	if stepfn.ErrorCode(err) == stepfn.CodeExecutionAlreadyExists {
		return nil
	}
	if err != nil {
		return fmt.Errorf("start wave %s: %w", signalID, err)
	}
	return nil
}

// WaveExists reports whether the wave named signalID exists in the engine.
func (w waveStarter) WaveExists(ctx context.Context, signalID string) (bool, error) {
	arn := fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", region, account, stateMachine, signalID)
	_, err := w.r.engine.DescribeExecution(ctx, arn)
	switch {
	case err == nil:
		return true, nil
	case stepfn.ErrorCode(err) == stepfn.CodeExecutionDoesNotExist:
		return w.ran(ctx, signalID)
	}
	return false, fmt.Errorf("wave %s: %w", signalID, err)
}

// ran reports whether the wave of signalID wrote anything beyond its signal:
// a wave whose execution the retention swept still has its pin, decision
// and verdict, and must not be started again.
func (w waveStarter) ran(ctx context.Context, signalID string) (bool, error) {
	es, err := w.r.ledger.Entries(ctx, signalID)
	if err != nil && ora.ErrorCode(err) != ora.ENOTFOUND {
		return false, fmt.Errorf("wave %s: %w", signalID, err)
	}
	for _, e := range es {
		if e.Kind != ora.KindSignalReceived {
			return true, nil
		}
	}
	return false, nil
}

// webhooks adapts the observer to the HTTP API.
type webhooks struct{ o *observe.Observer }

func (w webhooks) Webhook(ctx context.Context, source string, h http.Header, body []byte) (httpapi.WebhookReceipt, error) {
	rec, err := w.o.Webhook(ctx, source, h, body)
	return httpapi.WebhookReceipt(rec), err
}

// executionArn is the ARN of wave id's execution in the local engine.
func (r *Runtime) executionArn(id string) string {
	return fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", region, account, stateMachine, id)
}

// waves reads waves from the local engine.
type waves struct{ r *Runtime }

// WaveStatus returns the wave's status alone, without its history (the
// console's list). Errors: ENOTFOUND, and the engine's.
func (w waves) WaveStatus(ctx context.Context, id string) (string, error) {
	ex, err := w.r.engine.DescribeExecution(ctx, w.r.executionArn(id))
	if stepfn.ErrorCode(err) == stepfn.CodeExecutionDoesNotExist || stepfn.ErrorCode(err) == stepfn.CodeInvalidArn {
		return "", ora.Errorf(ora.ENOTFOUND, "no wave %q", id)
	}
	if err != nil {
		return "", fmt.Errorf("wave %s: %w", id, err)
	}
	return ex.Status, nil
}

func (w waves) Wave(ctx context.Context, id string) (httpapi.Wave, error) {
	arn := w.r.executionArn(id)
	ex, err := w.r.engine.DescribeExecution(ctx, arn)
	if stepfn.ErrorCode(err) == stepfn.CodeExecutionDoesNotExist || stepfn.ErrorCode(err) == stepfn.CodeInvalidArn {
		return httpapi.Wave{}, ora.Errorf(ora.ENOTFOUND, "no wave %q", id)
	}
	if err != nil {
		return httpapi.Wave{}, fmt.Errorf("wave %s: %w", id, err)
	}
	hist, err := w.r.engine.GetExecutionHistory(ctx, arn)
	if err != nil {
		return httpapi.Wave{}, fmt.Errorf("wave %s: history: %w", id, err)
	}
	b, err := json.Marshal(hist)
	if err != nil {
		return httpapi.Wave{}, fmt.Errorf("wave %s: history: %w", id, err)
	}
	op, err := w.r.ops.WaveState(ctx, id, ex.Status)
	if err != nil {
		return httpapi.Wave{}, fmt.Errorf("wave %s: %w", id, err)
	}
	return httpapi.Wave{WaveID: id, Status: ex.Status, Output: ex.Output, Error: ex.Error, Cause: ex.Cause, History: b, Operator: &op}, nil
}
