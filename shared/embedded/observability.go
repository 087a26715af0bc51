package embedded

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/ora-runtime/ora/shared/console"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/telemetry"
	"github.com/ora-runtime/ora/statemachines"
)

// routes adds GET /metrics (Prometheus text) and the console (/console) to
// the API. Off loopback it
// needs a token with orientation.read, as the API's read routes do.
func (r *Runtime) routes(api http.Handler) http.Handler {
	r.metrics.GaugeFunc(telemetry.EscalationsPending, func() float64 {
		p, err := console.Pending(context.Background(), r.ledger, time.Now())
		if err != nil {
			r.logger.Warn("metrics: pending approvals", "err", err)
		}
		return float64(len(p))
	})
	r.metrics.GaugeFunc(telemetry.EscalationOldestAge, func() float64 {
		p, _ := console.Pending(context.Background(), r.ledger, time.Now())
		if len(p) == 0 {
			return 0
		}
		return time.Since(p[0].Since).Seconds()
	})
	mux := http.NewServeMux()
	mux.Handle("/", api)
	mux.HandleFunc("POST /events", r.postEvents)
	mux.Handle("GET /metrics", r.readAuth(httpapi.Redacting(r.secrets, r.metrics)))
	con := r.console()
	mux.Handle("/console", con)
	mux.Handle("/console/", con)
	var h http.Handler = httpapi.SameOrigin(mux)
	if loopback(r.cfg.Listen) {
		// The read routes and the console are open here: serve only the
		// loopback names (DNS rebinding).
		h = httpapi.LoopbackHosts(h)
	}
	return httpapi.NoDotSegments(h)
}

// console is the local console over the same interfaces as the HTTP API.
func (r *Runtime) console() http.Handler {
	return (&console.Server{
		Ledger:   r.ledger,
		Waves:    waves{r},
		Statuses: waves{r},
		// On loopback, behind the Host check, the console settles as the
		// published development approver when its token field is empty.
		DevApprover: r.devApprover(),
		Verdicts:    r.verdicts(),
		Authorize:   httpapi.StaticTokens(r.cfg.Tokens),
		ReadAuth:    !loopback(r.cfg.Listen),
		Definition:  statemachines.Wave,
		Children:    statemachines.Children,
		Executions:  waves{r},
		Objects:     orient.Folder{Dir: r.cfg.Actions.Object.Root},
		Metrics:     r.metrics,
		Logger:      r.logger,
		Secrets:     r.secrets,
		// The operator's pages call what the API's routes call.
		Operator:    r.ops,
		Motor:       r.motors,
		Learned:     motor.Learner{Patterns: r.ops, Registry: r.motors},
		Orientation: r.orientation(),
		Namespace:   httpapi.TokenNamespaces(r.cfg.Tokens),
		Replay: func(ctx context.Context, b motor.Bundle) (motor.Report, error) {
			return motor.ReplayWith(ctx, b, r.golden, r.replayBuild)
		},
	}).Handler()
}

// devApprover is the published development token when ora dev listens on a
// loopback address and holds it with ora.approve; "" otherwise.
func (r *Runtime) devApprover() string {
	if !loopback(r.cfg.Listen) {
		return ""
	}
	dev := DefaultConfig().Tokens[0]
	for _, t := range r.cfg.Tokens {
		if t.Token == dev.Token && slices.Contains(t.Scopes, httpapi.ScopeApprove) {
			return t.Token
		}
	}
	return ""
}

// readAuth guards h with the API's read rule: open on loopback, otherwise a
// bearer token with orientation.read.
func (r *Runtime) readAuth(h http.Handler) http.Handler {
	if loopback(r.cfg.Listen) {
		return h
	}
	authorize := httpapi.StaticTokens(r.cfg.Tokens)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, err := authorize(req, httpapi.ScopeRead); err != nil {
			status := httpapi.Status(ora.ErrorCode(err))
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="ora"`)
			}
			http.Error(w, ora.ErrorMessage(err), status)
			return
		}
		h.ServeHTTP(w, req)
	})
}

// SecretValues lists the configuration's secret values (webhook secrets,
// bearer tokens, the HTTP action's signing secret, connection secrets): the
// log never shows them.
func (c Config) SecretValues() []string {
	var out []string
	for _, s := range c.Sources {
		out = append(out, s.Secret)
	}
	for _, t := range c.Tokens {
		out = append(out, t.Token)
	}
	for _, cn := range c.Connections {
		out = append(out, cn.Auth.Secret)
	}
	return append(out, c.Actions.HTTP.SigningSecret)
}

// Secrets returns the registry of the configuration's sensitive values,
// each named for where it is configured; the runtime adds the tokens OAuth
// 2.0 servers mint as they appear. Every writer consults it: the ledger, the
// API, the console, the logs and the model requests.
func (c Config) Secrets() *ora.Secrets {
	s := ora.NewSecrets()
	for _, src := range c.Sources {
		s.Add("source:"+src.Name, src.Secret)
	}
	for i, t := range c.Tokens {
		s.Add(fmt.Sprintf("tokens[%d]", i), t.Token)
	}
	for _, cn := range c.Connections {
		s.Add("connection:"+cn.Name, cn.Auth.Secret)
	}
	s.Add("actions.http.signing_secret", c.Actions.HTTP.SigningSecret)
	if c.Events.Secret != "" {
		s.Add("events", c.Events.Secret)
	}
	return s
}
