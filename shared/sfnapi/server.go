// Package sfnapi serves the AWS Step Functions API (the AWS JSON 1.0
// protocol: POST /, X-Amz-Target: AWSStepFunctions.<Action>, Content-Type
// application/x-amz-json-1.0) over the local engine, so the AWS CLI, the AWS
// SDKs and tests written for Step Functions Local run against ora unchanged.
//
// It speaks only the engine's exported interface (package stepfn): state
// machines created through the API live in the primary engine, whose Task
// states the caller resolves (a tasks file through stepfn.Options.Tasks,
// Lambda functions through registered handlers such as FunctionURL); other
// engines (ora's own wave) can be attached, so their state machines and
// executions are listed, described and driven here too, but not changed.
//
// Requests from a loopback address need no signature; from any other address
// they must carry a SigV4 Authorization header (its signature is not checked:
// the endpoint is a development tool, not an access boundary).
package sfnapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/ora-runtime/ora/shared/stepfn"
)

// targetPrefix is the service's prefix in X-Amz-Target.
const targetPrefix = "AWSStepFunctions."

// maxBody bounds a request body: a definition is at most 1 MB, an input 256 KB.
const maxBody = 2 << 20

// Options configure a Server.
type Options struct {
	// Logger receives internal errors (a client sees only "internal error").
	// Default: discarded.
	Logger *slog.Logger
	// Attached are engines whose state machines the API lists and runs but
	// does not create, update or delete (ora's own state machines).
	Attached []*stepfn.Engine
	// RoleArn is the role state machines report when created without one.
	// Default arn:aws:iam::123456789012:role/stepfn-local.
	RoleArn string
}

// Server is an http.Handler serving the Step Functions API.
type Server struct {
	primary *stepfn.Engine
	engines []*stepfn.Engine // primary first
	log     *slog.Logger
	roleArn string

	mu   sync.Mutex
	meta map[string]machineMeta // by state machine ARN, those created here
}

// machineMeta is what the API keeps of a state machine beyond the engine's
// record.
type machineMeta struct {
	typ     string // STANDARD or EXPRESS
	roleArn string
}

// New returns a Server creating state machines in primary.
func New(primary *stepfn.Engine, opts ...func(*Options)) *Server {
	o := Options{RoleArn: "arn:aws:iam::123456789012:role/stepfn-local"}
	for _, f := range opts {
		f(&o)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Server{primary: primary, engines: append([]*stepfn.Engine{primary}, o.Attached...),
		log: o.Logger, roleArn: o.RoleArn, meta: map[string]machineMeta{}}
}

// action answers one API action: it decodes its request from body and
// returns the response document.
type action func(s *Server, r *http.Request, body []byte) (any, error)

// actions are the API actions served, by name.
var actions = map[string]action{
	"CreateStateMachine":             (*Server).createStateMachine,
	"UpdateStateMachine":             (*Server).updateStateMachine,
	"DescribeStateMachine":           (*Server).describeStateMachine,
	"ListStateMachines":              (*Server).listStateMachines,
	"DeleteStateMachine":             (*Server).deleteStateMachine,
	"StartExecution":                 (*Server).startExecution,
	"StartSyncExecution":             (*Server).startSyncExecution,
	"DescribeExecution":              (*Server).describeExecution,
	"ListExecutions":                 (*Server).listExecutions,
	"GetExecutionHistory":            (*Server).getExecutionHistory,
	"StopExecution":                  (*Server).stopExecution,
	"RedriveExecution":               (*Server).redriveExecution,
	"SendTaskSuccess":                (*Server).sendTaskSuccess,
	"SendTaskFailure":                (*Server).sendTaskFailure,
	"SendTaskHeartbeat":              (*Server).sendTaskHeartbeat,
	"TestState":                      (*Server).testState,
	"ValidateStateMachineDefinition": (*Server).validateDefinition,
}

// Actions returns the names of the API actions the Server answers.
func Actions() []string {
	out := make([]string, 0, len(actions))
	for name := range actions {
		out = append(out, name)
	}
	return out
}

// ServeHTTP answers one API call.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, &apiError{status: http.StatusMethodNotAllowed, code: "UnknownOperationException", msg: "the Step Functions API takes POST requests"})
		return
	}
	if !loopback(r.RemoteAddr) && !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		writeError(w, &apiError{status: http.StatusForbidden, code: "MissingAuthenticationTokenException", msg: "requests from outside this machine must be signed (SigV4)"})
		return
	}
	name, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), targetPrefix)
	act := actions[name]
	if !ok || act == nil {
		writeError(w, &apiError{status: http.StatusBadRequest, code: "UnknownOperationException", msg: fmt.Sprintf("the action %q is not supported", r.Header.Get("X-Amz-Target"))})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, validation("the request body could not be read: %v", err))
		return
	}
	out, err := act(s, r, body)
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = s.translate(name, err)
		}
		writeError(w, ae)
		return
	}
	b, err := json.Marshal(out)
	if err != nil {
		s.log.Error("sfnapi: encode response", "action", name, "err", err)
		writeError(w, internal())
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_, _ = w.Write(b)
}

// loopback reports whether a request's remote address is this machine.
func loopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// decode reads a request document, refusing one that is not a JSON object.
func decode(body []byte, v any) error {
	if len(body) == 0 {
		body = []byte("{}")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return validation("the request is not a valid JSON document: %v", err)
	}
	return nil
}
