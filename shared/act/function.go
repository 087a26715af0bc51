package act

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ora-runtime/ora/shared/ora"
)

// TypeFunctionInvoke is the action that runs one of the user's configured
// functions.
const TypeFunctionInvoke = "function.invoke"

// Bounds of a function's run and output.
const (
	// DefaultFunctionTimeout bounds a function without timeout_seconds.
	DefaultFunctionTimeout = 30 * time.Second
	// MaxFunctionOutput is the most of a function's output ora reads; the
	// rest is dropped and the receipt says the output was truncated.
	MaxFunctionOutput = 1 << 20
	// InlineFunctionOutput is the most of a function's output an evidence
	// entry holds itself; a longer output is kept in the body store under
	// its content address (Receipt.OutputRef), when one is configured.
	InlineFunctionOutput = 4 << 10
	// maxFunctionError is the most of an error output (stderr, a 4xx
	// body, a FunctionError payload) the receipt's error quotes.
	maxFunctionError = 2 << 10
)

// FunctionConfig is one entry of the configuration's `functions:` map: what
// the function is for and where it runs. Exactly one target is set, and the
// home's wiring decides which kinds it accepts: ARN on AWS, Command or URL in
// ora dev.
type FunctionConfig struct {
	// Description tells a model what the function does.
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// ARN is a Lambda function's ARN, or an alias's or version's (AWS).
	ARN string `yaml:"arn,omitempty" json:"arn,omitempty"`
	// Command is a local program and its arguments, run without a shell;
	// each item may hold {{ path }} templates read from the invocation
	// event (e.g. {{ payload.issue }}, {{ decision_id }}).
	Command []string `yaml:"command,omitempty" json:"command,omitempty"`
	// URL receives the invocation event as a POST.
	URL string `yaml:"url,omitempty" json:"url,omitempty"`
	// Env names the variables of ora's own environment a command receives,
	// beside DefaultCommandEnv and the event's ids.
	Env []string `yaml:"env,omitempty" json:"env,omitempty"`
	// TimeoutSeconds bounds one run: 0 means DefaultFunctionTimeout, more
	// than MaxActionTimeout means MaxActionTimeout.
	TimeoutSeconds int `yaml:"timeout_seconds,omitempty" json:"timeout_seconds,omitempty"`
	// PayloadSchema is the JSON Schema of the payload, when the function
	// declares one: a payload that breaks it is refused before any action
	// of the decision runs, and the catalogue shows it to a model.
	PayloadSchema map[string]any `yaml:"payload_schema,omitempty" json:"payload_schema,omitempty"`
}

// UnmarshalJSON reads either the object form or, as the CDK context
// `ora:functions` allows, a bare string: the Lambda ARN.
func (c *FunctionConfig) UnmarshalJSON(b []byte) error {
	var arn string
	if json.Unmarshal(b, &arn) == nil {
		*c = FunctionConfig{ARN: arn}
		return nil
	}
	type plain FunctionConfig
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*c = FunctionConfig(p)
	return nil
}

// Timeout is the longest one run takes.
func (c FunctionConfig) Timeout() time.Duration {
	if c.TimeoutSeconds <= 0 {
		return DefaultFunctionTimeout
	}
	return min(time.Duration(c.TimeoutSeconds)*time.Second, MaxActionTimeout)
}

// FunctionParams are the parameters of the function.invoke action.
type FunctionParams struct {
	Function string          `json:"function"`
	Payload  json.RawMessage `json:"payload,omitempty"`
}

// FunctionEvent is what a function receives: on stdin (a command), as the
// POST body (a URL) or as the Lambda event. IdempotencyKey is the same for
// every run of the same action (a retry after a crash runs it again under the
// same key): a function that changes something must do it once per key.
type FunctionEvent struct {
	DecisionID     string          `json:"decision_id"`
	WaveID         string          `json:"wave_id"`
	ActionIndex    int             `json:"action_index"`
	IdempotencyKey string          `json:"idempotency_key"`
	Function       string          `json:"function"`
	Payload        json.RawMessage `json:"payload"`
}

// FunctionResult is what a target answers for a run that succeeded.
type FunctionResult struct {
	// Output is what the function returned (stdout, the response body, the
	// Lambda payload), at most MaxFunctionOutput bytes of it.
	Output []byte
	// Truncated says the output was longer than MaxFunctionOutput.
	Truncated bool
	// ID names the run where the target gives one (the Lambda version
	// that ran, the HTTP status).
	ID string
}

// FunctionTarget runs a function where it lives (a Lambda function, a local
// command, a URL). Implementations must be safe for concurrent use.
type FunctionTarget interface {
	// Invoke runs the function once with the event (body is its JSON).
	// Errors: *FunctionError (the function ran and reported failure),
	// *UnknownOutcomeError (it may have run: no answer came), ETRANSIENT
	// (nothing ran; worth retrying), any other error: it failed before
	// running.
	Invoke(ctx context.Context, ev FunctionEvent, body []byte) (FunctionResult, error)
	// Describe names the target in evidence: an ARN, a URL, a program.
	Describe() string
}

// FunctionError is a function that ran and reported failure: a non-zero
// exit, a 4xx answer, a Lambda FunctionError.
type FunctionError struct {
	Function string
	Message  string
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("function %s failed: %s", e.Function, e.Message)
}

// Function is a configured function and the target the home's wiring chose
// for it.
type Function struct {
	Config FunctionConfig
	Target FunctionTarget
}

type function struct {
	Function
	name   string
	schema *jsonschema.Schema
}

// FunctionInvoke runs the user's configured functions.
type FunctionInvoke struct {
	funcs  map[string]function
	names  []string
	bodies ora.BodyStore
	now    func() time.Time
}

// NewFunctionInvoke returns the function.invoke action over funcs (by
// name). bodies keeps outputs longer than InlineFunctionOutput by reference;
// nil keeps their start inline, marked truncated. Errors: EINVALID (a
// function without a target, a payload schema that does not compile).
func NewFunctionInvoke(funcs map[string]Function, bodies ora.BodyStore) (*FunctionInvoke, error) {
	f := &FunctionInvoke{funcs: map[string]function{}, bodies: bodies, now: time.Now}
	for name, fn := range funcs {
		field := "functions." + name
		if name == "" {
			return nil, ora.Invalid("functions", "a function needs a name")
		}
		if fn.Target == nil {
			return nil, ora.Invalid(field, "no target")
		}
		c := function{Function: fn, name: name}
		if fn.Config.PayloadSchema != nil {
			s, err := compilePayloadSchema(fn.Config.PayloadSchema)
			if err != nil {
				return nil, ora.Invalid(field+".payload_schema", "%v", err)
			}
			c.schema = s
		}
		f.funcs[name] = c
		f.names = append(f.names, name)
	}
	sort.Strings(f.names)
	return f, nil
}

func compilePayloadSchema(schema map[string]any) (*jsonschema.Schema, error) {
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("ora:payload.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("ora:payload.json")
}

func (f *FunctionInvoke) parse(params json.RawMessage) (FunctionParams, function, error) {
	var p FunctionParams
	if err := decodeParams(TypeFunctionInvoke, params, &p); err != nil {
		return p, function{}, err
	}
	fn, ok := f.funcs[p.Function]
	if !ok {
		return p, function{}, ora.Errorf(ora.EFORBIDDEN, "function.invoke: %q is not a configured function (%s)", p.Function, strings.Join(f.names, ", "))
	}
	if len(bytes.TrimSpace(p.Payload)) == 0 || bytes.Equal(bytes.TrimSpace(p.Payload), []byte("null")) {
		p.Payload = json.RawMessage("{}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(p.Payload, &obj); err != nil {
		return p, function{}, ora.Invalid(TypeFunctionInvoke+".parameters.payload", "must be a JSON object")
	}
	if fn.schema != nil {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(p.Payload))
		if err != nil {
			return p, function{}, ora.Invalid(TypeFunctionInvoke+".parameters.payload", "%v", err)
		}
		if err := fn.schema.Validate(v); err != nil {
			return p, function{}, ora.Invalid(TypeFunctionInvoke+".parameters.payload", "breaks function %s's payload schema: %s", p.Function, oneLine(err))
		}
	}
	return p, fn, nil
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// Check validates the parameters: a configured function and a payload
// object that fits the function's schema. The target is "function/NAME", so
// a scope's forbidden_paths can forbid a function. Errors: EINVALID,
// EFORBIDDEN.
func (f *FunctionInvoke) Check(params json.RawMessage) ([]string, error) {
	p, _, err := f.parse(params)
	if err != nil {
		return nil, err
	}
	return []string{"function/" + p.Function}, nil
}

// Timeout is the longest timeout of the configured functions: the action's
// idempotency lock outlasts it.
func (f *FunctionInvoke) Timeout() time.Duration {
	var t time.Duration
	for _, fn := range f.funcs {
		t = max(t, fn.Config.Timeout())
	}
	return t
}

// Run invokes the function with the event built from the invocation in ctx
// and the payload. Errors: EINVALID, EFORBIDDEN, *FunctionError,
// *UnknownOutcomeError, ETRANSIENT, a failure to start.
func (f *FunctionInvoke) Run(ctx context.Context, params json.RawMessage) (Receipt, error) {
	p, fn, err := f.parse(params)
	if err != nil {
		return Receipt{}, err
	}
	inv, _ := InvocationFrom(ctx)
	ev := FunctionEvent{
		DecisionID: inv.DecisionID, WaveID: inv.SignalID, ActionIndex: inv.Index,
		IdempotencyKey: inv.Key, Function: p.Function, Payload: p.Payload,
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return Receipt{}, ora.Errorf(ora.EINTERNAL, "function.invoke: encode the event: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, fn.Config.Timeout())
	defer cancel()
	rcpt := Receipt{Type: TypeFunctionInvoke, Target: "function/" + p.Function}
	res, err := fn.Target.Invoke(ctx, ev, body)
	rcpt.At = f.now().UTC()
	if err != nil {
		var fe *FunctionError
		if errors.As(err, &fe) && fe.Function == "" {
			fe.Function = p.Function
		}
		return rcpt, fmt.Errorf("function.invoke %s (%s): %w", p.Function, fn.Target.Describe(), err)
	}
	rcpt.ID = res.ID
	rcpt.Digest = ora.Digest(res.Output)
	rcpt.OutputBytes = len(res.Output)
	rcpt.OutputTruncated = res.Truncated
	switch {
	case len(res.Output) <= InlineFunctionOutput:
		rcpt.Output = string(res.Output)
	case f.bodies != nil:
		key := ora.BodyKey(rcpt.Digest)
		if err := f.bodies.PutBody(ctx, key, res.Output); err != nil {
			// The function ran: its output is lost, not its outcome.
			rcpt.Output, rcpt.OutputTruncated = string(res.Output[:InlineFunctionOutput]), true
			break
		}
		rcpt.OutputRef = key
	default:
		rcpt.Output, rcpt.OutputTruncated = string(res.Output[:InlineFunctionOutput]), true
	}
	return rcpt, nil
}

// Describe gives the action's catalogue entry: the parameters' schema (one
// branch per function when any declares a payload schema) and the
// configured functions as its bounds.
func (f *FunctionInvoke) Describe() Description {
	withSchema := slices.ContainsFunc(f.names, func(n string) bool { return f.funcs[n].Config.PayloadSchema != nil })
	var params json.RawMessage
	if !withSchema {
		params = paramsSchema(f.names, nil, "The payload the function receives in its event.")
	} else {
		branches := make([]json.RawMessage, len(f.names))
		for i, n := range f.names {
			branches[i] = paramsSchema([]string{n}, f.funcs[n].Config.PayloadSchema, f.funcs[n].Config.Description)
		}
		params, _ = json.Marshal(struct {
			AnyOf []json.RawMessage `json:"anyOf"`
		}{branches})
	}
	bounds := []string{"functions: " + strings.Join(f.names, ", ")}
	for _, n := range f.names {
		c := f.funcs[n].Config
		line := fmt.Sprintf("%s: at most %s", n, c.Timeout())
		if c.Description != "" {
			line = n + ": " + c.Description + fmt.Sprintf(" (at most %s)", c.Timeout())
		}
		bounds = append(bounds, line)
	}
	return Description{
		Type:       TypeFunctionInvoke,
		Summary:    "Runs one of the user's configured functions with a JSON payload; its output is the evidence.",
		Parameters: params,
		Bounds:     bounds,
		SideEffect: true,
	}
}

// paramsSchema writes the parameters' JSON Schema for the named functions,
// keys in the order a model fills them.
func paramsSchema(names []string, payload map[string]any, payloadDescription string) json.RawMessage {
	enum, _ := json.Marshal(names)
	pl := []byte(`{"type":"object"}`)
	if payload != nil {
		pl, _ = json.Marshal(payload)
	}
	desc, _ := json.Marshal(payloadDescription)
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"type":"object","properties":{"function":{"type":"string","enum":%s,"description":"The configured function to run."},"payload":`, enum)
	if payloadDescription != "" && payload == nil {
		fmt.Fprintf(&b, `{"type":"object","description":%s}`, desc)
	} else {
		b.Write(pl)
	}
	b.WriteString(`},"required":["function","payload"],"additionalProperties":false}`)
	return b.Bytes()
}

// limitedBuffer keeps the first max bytes written to it and counts the rest.
type limitedBuffer struct {
	max       int
	buf       bytes.Buffer
	truncated bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	room := max(l.max-l.buf.Len(), 0)
	if len(p) > room {
		l.truncated = true
		l.buf.Write(p[:room])
		return len(p), nil
	}
	l.buf.Write(p)
	return len(p), nil
}

// tail returns at most the last n bytes of b, as one trimmed string.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}
