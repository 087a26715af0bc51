package stepfn

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"reflect"
	"sync"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/handlertrace"
	"github.com/google/uuid"
)

// LambdaHandler returns a Handler that runs fn, a function of any signature
// aws-lambda-go's lambda.Start accepts, decoding and encoding exactly as the
// Lambda runtime does: the payload decoded with encoding/json into the
// function's event type, the result encoded without HTML escaping, and a
// returned error passed back as it is, so Retry and Catch see the same
// error name. It is safe for the concurrent invocations a Map or Parallel
// state makes (a handler from lambda.NewHandler(fn) is not: it hands back
// bytes from an output buffer it reuses for its next call).
//
// The function's signature is checked once, here, rather than on every
// call as lambda.NewHandler does. An event or result of type
// json.RawMessage takes a direct path: the payload is handed over as it is
// (after checking it is JSON), and the result is compacted rather than
// encoded through reflection. What the fast path
// does not cover (a payload encoding/json refuses, a result that is an
// io.Reader, a signature aws-lambda-go rejects, a value already a Handler)
// goes through aws-lambda-go's own handler, built per call, so its errors
// are aws-lambda-go's.
func LambdaHandler(fn any) Handler {
	if h, ok := fn.(Handler); ok && !isAWSHandler(fn) {
		// aws-lambda-go passes a Handler's bytes through as they are.
		return h
	}
	if fh, ok := newFastHandler(fn); ok {
		return fh
	}
	return perCallHandler{fn}
}

// isAWSHandler reports whether fn is a handler lambda.NewHandler built,
// whose output buffer is reused across calls.
func isAWSHandler(fn any) bool {
	t := reflect.TypeOf(fn)
	return t.Kind() == reflect.Pointer && t.Elem().PkgPath() == "github.com/aws/aws-lambda-go/lambda"
}

// perCallHandler builds aws-lambda-go's handler on every call, so that no
// two calls share its output buffer.
type perCallHandler struct{ fn any }

func (h perCallHandler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return lambda.NewHandler(h.fn).Invoke(ctx, payload)
}

var (
	contextType = reflect.TypeFor[context.Context]()
	errorIface  = reflect.TypeFor[error]()
	readerType  = reflect.TypeFor[io.Reader]()
	rawType     = reflect.TypeFor[json.RawMessage]()
)

// fastHandler calls a handler function with its signature worked out once.
type fastHandler struct {
	fn           any
	call         reflect.Value
	takesContext bool
	exactContext bool           // the context parameter is a context.Context
	event        reflect.Type   // nil: the function takes no event
	rawEvent     bool           // the event is a json.RawMessage
	dec          *structDecoder // decodes the event when it is a struct it covers
	returnsValue bool           // the function returns a value before its error
	rawResult    bool           // that value is a json.RawMessage
	returnsError bool           // the last result is an error
}

// newFastHandler works out fn's signature by aws-lambda-go's rules; ok is
// false for any function they reject (its per-call handler reports why).
func newFastHandler(fn any) (fastHandler, bool) {
	if fn == nil {
		return fastHandler{}, false
	}
	t := reflect.TypeOf(fn)
	if t.Kind() != reflect.Func || t.IsVariadic() {
		return fastHandler{}, false
	}
	h := fastHandler{fn: fn, call: reflect.ValueOf(fn)}
	isContext := func(a reflect.Type) bool {
		return a.Kind() == reflect.Interface && contextType.Implements(a) && a.Implements(contextType)
	}
	switch t.NumIn() {
	case 0:
	case 1:
		a := t.In(0)
		switch {
		case a.Kind() == reflect.Interface && a.NumMethod() > 0:
			if !isContext(a) {
				return fastHandler{}, false
			}
			h.takesContext = true
		default:
			h.event = a
		}
	case 2:
		if !isContext(t.In(0)) {
			return fastHandler{}, false
		}
		h.takesContext, h.event = true, t.In(1)
	default:
		return fastHandler{}, false
	}
	switch t.NumOut() {
	case 0:
	case 1:
		if !t.Out(0).Implements(errorIface) {
			return fastHandler{}, false
		}
		h.returnsError = true
	case 2:
		if !t.Out(1).Implements(errorIface) {
			return fastHandler{}, false
		}
		h.returnsValue, h.returnsError = true, true
		out := t.Out(0)
		if out.Kind() == reflect.Interface || out.Implements(readerType) {
			// A result that may be an io.Reader is streamed by aws-lambda-go.
			return fastHandler{}, false
		}
		h.rawResult = out == rawType
	default:
		return fastHandler{}, false
	}
	h.rawEvent = h.event == rawType
	h.exactContext = h.takesContext && t.In(0) == contextType
	if h.event != nil {
		h.dec = newStructDecoder(h.event)
	}
	return h, true
}

// resultEncoder is a scratch buffer results are encoded into, with its
// encoder; the bytes returned are a copy, so a caller never shares them.
type resultEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// contextBoxes hold the context a handler is called with, as a
// context.Context variable.
var contextBoxes = sync.Pool{New: func() any { return new(context.Context) }}

var resultEncoders = sync.Pool{New: func() any {
	r := &resultEncoder{}
	r.enc = json.NewEncoder(&r.buf)
	r.enc.SetEscapeHTML(false)
	return r
}}

func (h fastHandler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	trace := handlertrace.FromContext(ctx)
	var args [2]reflect.Value
	n := 0
	if h.takesContext {
		n++ // args[0] is set just before the call
	}
	if h.event != nil {
		if h.rawEvent {
			raw := trimJSONSpace(payload)
			if !json.Valid(raw) {
				return perCallHandler{h.fn}.Invoke(ctx, payload)
			}
			ev := json.RawMessage(bytes.Clone(raw))
			if trace.RequestEvent != nil {
				trace.RequestEvent(ctx, ev)
			}
			args[n] = reflect.ValueOf(ev)
		} else {
			ev := reflect.New(h.event)
			if h.dec != nil && h.dec.decode(payload, ev.Elem()) {
				// Decoded as encoding/json would.
			} else if h.dec != nil {
				ev.Elem().SetZero() // what the decoder set before it gave up
				if err := json.Unmarshal(payload, ev.Interface()); err != nil {
					return perCallHandler{h.fn}.Invoke(ctx, payload)
				}
			} else if err := json.Unmarshal(payload, ev.Interface()); err != nil {
				// encoding/json's Decoder, which aws-lambda-go uses, reads
				// one value and names its own errors: let it.
				return perCallHandler{h.fn}.Invoke(ctx, payload)
			}
			if trace.RequestEvent != nil {
				trace.RequestEvent(ctx, ev.Elem().Interface())
			}
			args[n] = ev.Elem()
		}
		n++
	}
	var box *context.Context
	if h.takesContext {
		if h.exactContext {
			// A Value of the parameter's own type: reflect then passes it
			// as it is, where a *taskCtx Value would be checked against
			// context.Context's methods (twice) on every call.
			box = contextBoxes.Get().(*context.Context)
			*box = ctx
			args[0] = reflect.ValueOf(box).Elem()
		} else {
			args[0] = reflect.ValueOf(ctx)
		}
	}
	res := h.call.Call(args[:n])
	if box != nil {
		*box = nil
		contextBoxes.Put(box)
	}
	if h.returnsError {
		if err, _ := res[len(res)-1].Interface().(error); err != nil {
			return nil, err
		}
	}
	var val any
	if h.returnsValue {
		val = res[0].Interface()
		if trace.ResponseEvent != nil {
			trace.ResponseEvent(ctx, val)
		}
	}
	if h.rawResult {
		raw := val.(json.RawMessage)
		if raw == nil {
			return []byte("null"), nil
		}
		var out bytes.Buffer
		out.Grow(len(raw))
		if err := json.Compact(&out, raw); err == nil {
			return out.Bytes(), nil
		}
		// Invalid JSON: fall through for encoding/json's MarshalerError.
	}
	r := resultEncoders.Get().(*resultEncoder)
	defer func() {
		r.buf.Reset()
		resultEncoders.Put(r)
	}()
	if err := r.enc.Encode(val); err != nil {
		return nil, err
	}
	// encoding/json ends the value with a newline; aws-lambda-go strips it.
	return bytes.Clone(r.buf.Bytes()[:r.buf.Len()-1]), nil
}

// trimJSONSpace drops the JSON whitespace around b, as encoding/json's
// Decoder skips it before a value.
func trimJSONSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// lambdaInvokeResponse wraps a function's output as the response of the
// arn:aws:states:::lambda:invoke integration, as AWS returns it: the output is
// the Payload beside StatusCode, ExecutedVersion and the SDK's metadata.
func lambdaInvokeResponse(out []byte) ([]byte, *stateError) {
	v, serr := handlerOutput(out)
	if serr != nil {
		return nil, serr
	}
	return marshal(map[string]any{
		"ExecutedVersion": "$LATEST",
		"Payload":         v,
		"SdkHttpMetadata": map[string]any{
			"HttpHeaders":    map[string]any{"Content-Type": "application/json", "X-Amz-Executed-Version": "$LATEST"},
			"HttpStatusCode": int64(200),
		},
		"SdkResponseMetadata": map[string]any{"RequestId": uuid.NewString()},
		"StatusCode":          int64(200),
	}), nil
}
