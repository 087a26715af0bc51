package act

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// The action types the standard registry knows.
const (
	TypeNotify          = "notify"
	TypeHTTPRequest     = "http.request"
	TypeObjectPut       = "object.put"
	TypeCommitmentOpen  = "commitment.open"
	TypeCommitmentClose = "commitment.close"
	TypeMCPCall         = "mcp.call"
)

// Receipt is what an action reports it did: the proof the technical validator
// checks against the world.
type Receipt struct {
	Type       string    `json:"type"`
	Target     string    `json:"target,omitempty"`      // URL, object key, commitment id or topic
	ID         string    `json:"id,omitempty"`          // message id, object version, commitment id
	StatusCode int       `json:"status_code,omitempty"` // http.request: the answer's status
	Digest     string    `json:"digest,omitempty"`      // sha256 of the bytes sent or stored
	Error      string    `json:"error,omitempty"`       // set when the action failed
	Unknown    bool      `json:"unknown,omitempty"`     // the outcome cannot be known (Error says why)
	At         time.Time `json:"at"`
	// function.invoke: the function's output (Digest is its sha256),
	// inline up to InlineFunctionOutput bytes, else in the body store at
	// OutputRef; OutputTruncated says ora read only MaxFunctionOutput bytes
	// of it, or kept only its start.
	Output          string `json:"output,omitempty"`
	OutputRef       string `json:"output_ref,omitempty"`
	OutputBytes     int    `json:"output_bytes,omitempty"`
	OutputTruncated bool   `json:"output_truncated,omitempty"`
	// OutputDigest is the sha256 of the target's whole answer when Output
	// holds only part of it (mcp.call: the tool's result).
	OutputDigest string `json:"output_digest,omitempty"`
}

// Action runs one kind of operation. Implementations must be safe for
// concurrent use.
type Action interface {
	// Run performs the action with its parameters and returns its receipt.
	// Errors: EINVALID (bad parameters), ETRANSIENT (worth retrying: nothing
	// happened), any other error means the action failed.
	Run(ctx context.Context, params json.RawMessage) (Receipt, error)
}

// Checker is implemented by actions whose parameters name things a scope can
// forbid. Check runs before any side effect of a decision.
type Checker interface {
	// Check validates params against the action's allow-lists and returns the
	// targets (paths, keys, URLs) the action would touch. Errors: EINVALID for
	// malformed parameters, EFORBIDDEN when an allow-list refuses a target.
	Check(params json.RawMessage) ([]string, error)
}

// Registry maps action types to actions. The zero value is not usable; call
// NewRegistry.
type Registry struct {
	mu      sync.RWMutex
	actions map[string]Action
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{actions: map[string]Action{}} }

// Register adds (or replaces) the action run for typ.
func (r *Registry) Register(typ string, a Action) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.actions[typ] = a
}

// Lookup returns the action registered for typ.
func (r *Registry) Lookup(typ string) (Action, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.actions[typ]
	return a, ok
}

// Types returns the registered types, sorted.
func (r *Registry) Types() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.actions))
	for t := range r.actions {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Invocation identifies the action being run; the service puts it in the
// context Run receives.
type Invocation struct {
	SignalID   string
	DecisionID string
	Index      int
	// Key is the idempotency key of the action: "<decision id>/<index>".
	Key string
}

type invocationKey struct{}

// WithInvocation returns ctx carrying inv.
func WithInvocation(ctx context.Context, inv Invocation) context.Context {
	return context.WithValue(ctx, invocationKey{}, inv)
}

// InvocationFrom returns the invocation ctx carries.
func InvocationFrom(ctx context.Context) (Invocation, bool) {
	inv, ok := ctx.Value(invocationKey{}).(Invocation)
	return inv, ok
}

// decodeParams unmarshals params into v, naming the action in the error.
func decodeParams(typ string, params json.RawMessage, v any) error {
	if len(params) == 0 {
		params = []byte("{}")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return ora.Invalid(typ+".parameters", "%v", err)
	}
	return nil
}

// Standard returns a registry holding the standard actions: notify (the given
// one: SNSNotify on AWS, LogNotify locally), http.request (cfg.HTTP, client may
// be nil), object.put (store, under cfg.Object.AllowedPrefixes),
// commitment.open / commitment.close (commitments) and none.
func Standard(cfg Config, notify Action, store ObjectStore, commitments Commitments, client *http.Client) *Registry {
	r := NewRegistry()
	r.Register(TypeNotify, notify)
	r.Register(TypeHTTPRequest, NewHTTPRequest(cfg.HTTP, client))
	r.Register(TypeObjectPut, NewObjectPut(store, cfg.Object.AllowedPrefixes))
	r.Register(TypeCommitmentOpen, NewCommitmentOpen(commitments))
	r.Register(TypeCommitmentClose, NewCommitmentClose(commitments))
	r.Register(TypeNone, NewNone())
	return r
}
