package telemetry

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"reflect"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Invoker is a task handler as bytes in, bytes out: aws-lambda-go's
// lambda.Handler, and the local engine's handlers.
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// TaskOptions tune Task.
type TaskOptions struct {
	// AuthorType labels the reason stage's decisions (rules, model).
	AuthorType string
	// Classify maps a failure's error name to its incident class (app,
	// motor, mixed) for the operate stage. Default: the error name.
	Classify func(errorName string) string
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Trace, when set, opens a trace span (an X-Ray subsegment) for the
	// stage with the correlation keys as annotations; the SDK calls made
	// with the returned context nest under it. end closes it with the
	// stage's error.
	Trace func(ctx context.Context, stage string, annotations map[string]string) (_ context.Context, end func(error))
}

// Task wraps the task handler h of stage (the function's name: plan,
// reason, act, ...). Each call gets the Lambda invocation's fields and the
// payload's correlation keys in its context, logs one line with the stage's
// outcome, latency_ms and error_code, and records the stage's metrics
// (StageDuration, StageFailures and those of stageMetrics). fn is a handler
// lambda.NewHandler accepts, or an Invoker.
func Task(stage string, fn any, log *slog.Logger, m Metrics, opts ...func(*TaskOptions)) Invoker {
	o := TaskOptions{Now: time.Now}
	for _, f := range opts {
		f(&o)
	}
	inner, ok := fn.(Invoker)
	if !ok {
		inner = perCall{fn}
	}
	return task{stage: stage, inner: inner, log: log, m: m, o: o}
}

// perCall builds aws-lambda-go's handler per call: its output buffer is
// reused between calls, which concurrent local invocations must not share.
type perCall struct{ fn any }

func (p perCall) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return lambda.NewHandler(p.fn).Invoke(ctx, payload)
}

type task struct {
	stage string
	inner Invoker
	log   *slog.Logger
	m     Metrics
	o     TaskOptions
}

var warm atomic.Bool

// invocation reads the Lambda runtime's facts about this call; outside Lambda
// it is empty except for cold_start.
func invocation(ctx context.Context, stage string) Invocation {
	inv := Invocation{FunctionName: lambdacontext.FunctionName, ColdStart: !warm.Swap(true)}
	if inv.FunctionName == "" {
		inv.FunctionName = stage
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		inv.RequestID = lc.AwsRequestID
	}
	if t, ok := ctx.Value("x-amzn-trace-id").(string); ok { // the string key aws-lambda-go sets
		inv.TraceID = t
	} else {
		inv.TraceID = os.Getenv("_X_AMZN_TRACE_ID")
	}
	return inv
}

func (t task) Invoke(ctx context.Context, payload []byte) (out []byte, err error) {
	in := decodeObject(payload)
	inv := invocation(ctx, t.stage)
	ctx = WithInvocation(ctx, inv)
	ctx = WithFields(ctx, correlation(in)...)
	if batch, ok := in["BatchInput"].(map[string]any); ok {
		// A Distributed Map's batch carries the wave's keys in its BatchInput.
		ctx = WithFields(ctx, correlation(batch)...)
	}
	if Field(ctx, KeyWaveID) == "" {
		// A wave is named for its signal (the execution name is the signal id).
		ctx = WithFields(ctx, KeyWaveID, Field(ctx, KeySignalID))
	}
	ctx = WithFields(ctx, KeyTraceID, TraceIDOf(inv.TraceID, Field(ctx, KeyWaveID)))
	if t.o.Trace != nil {
		ann := map[string]string{}
		for _, k := range CorrelationKeys {
			if v := Field(ctx, k); v != "" {
				ann[k] = v
			}
		}
		var end func(error)
		ctx, end = t.o.Trace(ctx, t.stage, ann)
		defer func() { end(err) }()
	}
	start := t.o.Now()
	out, err = t.inner.Invoke(ctx, payload)
	elapsed := t.o.Now().Sub(start)
	res := decodeObject(out)
	ctx = WithFields(ctx, correlation(res)...)
	if err != nil {
		code := ErrorCode(err)
		t.m.Observe(StageDuration, elapsed.Seconds(), "stage", t.stage, "outcome", "error")
		t.m.Add(StageFailures, 1, "stage", t.stage, "error_code", code)
		t.log.ErrorContext(ctx, "stage failed", "stage", t.stage, "outcome", "error",
			"latency_ms", elapsed.Milliseconds(), "error_code", code, "error", err.Error())
		return out, err
	}
	t.m.Observe(StageDuration, elapsed.Seconds(), "stage", t.stage, "outcome", "ok")
	if f := stageMetrics[metricsKey(t.stage)]; f != nil {
		f(t.m, in, res, t.o)
	}
	t.log.InfoContext(ctx, "stage ok", "stage", t.stage, "outcome", "ok",
		"latency_ms", elapsed.Milliseconds(), "error_code", "")
	return out, nil
}

// ErrorCode is the name Step Functions' Retry and Catch see for err: the Go
// type name of the top-level error value (aws-lambda-go's errorType).
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

func metricsKey(stage string) string {
	switch stage {
	case "validate-technical", "validate-safety", "validate-intent", "witness":
		return "validate"
	}
	return stage
}

// stageMetrics records what a stage's successful result says, by stage: a
// table over the JSON the state machine sees, so the Lambdas and `ora dev`
// count the same things.
var stageMetrics = map[string]func(m Metrics, in, out map[string]any, o TaskOptions){
	"plan": func(m Metrics, _, out map[string]any, _ TaskOptions) {
		// Plan is every wave's first task, and a failed call is not counted.
		m.Add(WavesStarted, 1)
		if n, ok := out["job_count"].(float64); ok {
			m.Add(OrientationJobs, n)
		}
	},
	"fetch": func(m Metrics, _, out map[string]any, _ TaskOptions) {
		if n, ok := out["facts"].(float64); ok {
			m.Add(OrientationFacts, n)
		}
	},
	"compile": func(m Metrics, _, out map[string]any, _ TaskOptions) {
		used, _ := out["token_used"].(float64)
		m.Observe(PacketTokens, used)
		if budget, _ := out["token_budget"].(float64); budget > 0 {
			m.Observe(OrientationBudgetUse, used/budget)
		}
	},
	"reason": func(m Metrics, _, out map[string]any, o TaskOptions) {
		if _, waiting := out["batch_wait"]; waiting {
			return // no decision yet: the wave waits for its reason batch
		}
		band := str(out, "band", "unknown")
		author := o.AuthorType
		if author == "" {
			author = str(out, "author_type", "unknown")
		}
		m.Add(Decisions, 1, "band", band, "author_type", author)
		if c, ok := out["confidence"].(float64); ok {
			m.Observe(DecisionConfidence, c, "band", band)
		}
		for _, dir := range []string{"input", "output"} {
			if n, ok := out[dir+"_tokens"].(float64); ok && n > 0 {
				m.Add(ModelTokens, n, "direction", dir)
			}
		}
		if c, ok := out["cost_usd"].(float64); ok && c > 0 {
			m.Add(ModelCost, c)
		}
		if why := str(out, "crystallization_reason", ""); why != "" {
			stages, _ := out["chain_length"].(float64)
			m.Add(ModelChains, 1, "crystallization_reason", why, "stages", strconv.Itoa(int(stages)))
		}
	},
	"act": func(m Metrics, in, out map[string]any, _ TaskOptions) {
		m.Add(Actions, 1, "type", str(in, "action_type", "any"), "outcome", str(out, "outcome", "unknown"))
	},
	"validate": func(m Metrics, _, out map[string]any, _ TaskOptions) {
		m.Add(ValidatorVerdicts, 1, "validator", str(out, "validator", "unknown"), "verdict", str(out, "verdict", "unknown"))
	},
	"escalate": func(m Metrics, _, _ map[string]any, _ TaskOptions) {
		m.Add(Escalations, 1)
	},
	"record": func(m Metrics, _, out map[string]any, _ TaskOptions) {
		m.Add(Waves, 1, "outcome", str(out, "final", "unknown"))
	},
	"operate": func(m Metrics, in, _ map[string]any, o TaskOptions) {
		name := "unknown"
		if f, ok := in["failure"].(map[string]any); ok {
			name = str(f, "Error", name)
		}
		class := name
		if o.Classify != nil {
			class = o.Classify(name)
		}
		m.Add(Incidents, 1, "class", class)
		m.Add(Waves, 1, "outcome", "failed")
	},
}

func str(m map[string]any, k, def string) string {
	if s, ok := m[k].(string); ok && s != "" {
		return s
	}
	return def
}

// nestedKeys are the objects whose members the wrapper reads (a Distributed
// Map batch's BatchInput, operate's failure); other objects and arrays are
// skipped.
var nestedKeys = map[string]bool{"BatchInput": true, "failure": true, "batch_wait": true}

// decodeObject decodes the top level of a task's JSON object: its scalars,
// and the objects of nestedKeys, which is all the correlation keys and
// stageMetrics read. Facts, packets and other nested values are not built
// into maps only to be dropped (they were a few percent of a wave's CPU).
func decodeObject(b []byte) map[string]any {
	if len(b) == 0 || b[0] != '{' {
		return nil
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(b, &raw) != nil {
		return nil
	}
	m := make(map[string]any, len(raw))
	for k, v := range raw {
		if len(v) == 0 || (v[0] == '{' || v[0] == '[') && !nestedKeys[k] {
			continue
		}
		var x any
		if json.Unmarshal(v, &x) == nil {
			m[k] = x
		}
	}
	return m
}

// correlation returns the correlation keys found at the top level of m.
func correlation(m map[string]any) []string {
	var kv []string
	for _, k := range CorrelationKeys {
		if s, ok := m[k].(string); ok && s != "" {
			kv = append(kv, k, s)
		}
	}
	return kv
}
