package act

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// TypeNone is the action that records a decision to do nothing: the signal
// needs no response, or the reasoner refused what a model proposed. It has
// no side effect; its receipt carries the reason.
const TypeNone = "none"

// NoneParams are the parameters of the none action.
type NoneParams struct {
	Reason string `json:"reason"`
}

// None is the none action.
type None struct{ now func() time.Time }

// NewNone returns the none action.
func NewNone() *None { return &None{now: time.Now} }

// Run records the reason and does nothing else. Errors: EINVALID (no reason).
func (n *None) Run(_ context.Context, params json.RawMessage) (Receipt, error) {
	p, err := decodeNone(params)
	if err != nil {
		return Receipt{}, err
	}
	return Receipt{Type: TypeNone, Digest: ora.Digest([]byte(p.Reason)), At: n.now().UTC()}, nil
}

// validate is none's own decoding, run before any action of the decision:
// a reason is required.
func (*None) validate(params json.RawMessage) error {
	_, err := decodeNone(params)
	return err
}

func decodeNone(params json.RawMessage) (NoneParams, error) {
	var p NoneParams
	if err := decodeParams(TypeNone, params, &p); err != nil {
		return p, err
	}
	if strings.TrimSpace(p.Reason) == "" {
		return p, ora.Invalid(TypeNone+".parameters.reason", "required")
	}
	return p, nil
}

// The parameter schemas of the standard actions, in the subset Bedrock's
// strict tool use accepts (every property required, no free-form maps: a
// body is a string, sent as it is) and in the order a model should fill
// them.
const (
	noneSchema = `{"type":"object","additionalProperties":false,"required":["reason"],"properties":{
"reason":{"type":"string","description":"why nothing needs to be done"}}}`
	notifySchema = `{"type":"object","additionalProperties":false,"required":["subject","message"],"properties":{
"subject":{"type":"string","description":"a short subject line (empty for none)"},
"message":{"type":"string","description":"the message a human reads"}}}`
	httpSchema = `{"type":"object","additionalProperties":false,"required":["method","connection","path","url","body"],"properties":{
"method":{"type":"string","enum":["GET","POST","PUT","PATCH","DELETE"]},
"connection":{"type":"string","description":"a configured connection (it adds the credentials), or empty to send to url"},
"path":{"type":"string","description":"with a connection: the path under its base URL, e.g. /repos/o/r/issues/7/labels; else empty"},
"url":{"type":"string","description":"without a connection: an absolute http(s) URL on an allowed host; else empty"},
"body":{"type":"string","description":"the request body, sent as it is (JSON text for a JSON API; empty for none)"}}}`
	objectSchema = `{"type":"object","additionalProperties":false,"required":["key","content_type","body"],"properties":{
"key":{"type":"string","description":"the object key, under an allowed prefix"},
"content_type":{"type":"string","description":"the media type, e.g. text/plain or application/json"},
"body":{"type":"string","description":"the object's content, stored as it is"}}}`
	commitmentOpenSchema = `{"type":"object","additionalProperties":false,"required":["title","id"],"properties":{
"title":{"type":"string","description":"what ora commits to follow up"},
"id":{"type":"string","description":"a stable id for the commitment (empty: ora derives one from the decision)"}}}`
	commitmentCloseSchema = `{"type":"object","additionalProperties":false,"required":["id"],"properties":{
"id":{"type":"string","description":"the id of an open commitment"}}}`
)

// Describe describes the none action.
func (*None) Describe() Description { return describeNone() }

func describeNone() Description {
	return Description{Type: TypeNone, Summary: "Record the decision and do nothing: the signal needs no response (say why).", Parameters: json.RawMessage(noneSchema)}
}

// Describe describes notify on SNS.
func (n *SNSNotify) Describe() Description { return describeNotify(n.topicARN) }

// Describe describes notify to the log.
func (*LogNotify) Describe() Description { return describeNotify("") }

func describeNotify(topic string) Description {
	where := "messages go to the runtime's log (and the ledger)"
	if topic != "" {
		where = "messages go to the SNS topic " + topic
	}
	return Description{Type: TypeNotify, Summary: "Send a message to the operators.", Parameters: json.RawMessage(notifySchema), Bounds: []string{where}, SideEffect: true}
}

// Describe describes http.request with its allowed hosts.
func (h *HTTPRequest) Describe() Description { return describeHTTP(h.cfg, h.Connections()) }

func describeHTTP(cfg HTTPConfig, connections []string) Description {
	hosts := "no host is allowed for url: every request by url is refused"
	if len(cfg.AllowedHosts) > 0 {
		hosts = "allowed hosts for url: " + strings.Join(cfg.AllowedHosts, ", ")
	}
	conns := "no connection is configured"
	if len(connections) > 0 {
		conns = "connections: " + strings.Join(connections, ", ")
	}
	return Description{Type: TypeHTTPRequest, Summary: "Send an HTTP request (signed with X-Ora-Signature and an idempotency key), through a connection or to an allowed host.", Parameters: json.RawMessage(httpSchema),
		Bounds:     []string{conns, hosts, "redirects are not followed; a non-2xx answer fails the action", fmt.Sprintf("timeout %s", cfg.Timeout())},
		SideEffect: true}
}

// Describe describes object.put with its allowed prefixes.
func (o *ObjectPut) Describe() Description { return describeObject(o.prefixes) }

func describeObject(prefixes []string) Description {
	b := "no prefix is allowed: every write is refused"
	if len(prefixes) > 0 {
		b = "keys must start with one of: " + strings.Join(prefixes, ", ")
	}
	return Description{Type: TypeObjectPut, Summary: "Write an object (a file) to the object store.", Parameters: json.RawMessage(objectSchema), Bounds: []string{b}, SideEffect: true}
}

// Describe describes commitment.open.
func (*CommitmentOpen) Describe() Description { return describeCommitmentOpen() }

func describeCommitmentOpen() Description {
	return Description{Type: TypeCommitmentOpen, Summary: "Open a commitment in the ledger: something ora must follow up.", Parameters: json.RawMessage(commitmentOpenSchema),
		Bounds: []string{"never for signals from a table source (a commitment is itself a table change)"}, SideEffect: true}
}

// Describe describes commitment.close.
func (*CommitmentClose) Describe() Description { return describeCommitmentClose() }

func describeCommitmentClose() Description {
	return Description{Type: TypeCommitmentClose, Summary: "Close an open commitment.", Parameters: json.RawMessage(commitmentCloseSchema),
		Bounds: []string{"only commitments that are open; never for signals from a table source"}, SideEffect: true}
}

// StandardCatalogue returns the descriptions of the standard actions under
// cfg (the ones Standard registers, none included), sorted by type: what a
// reasoner that has no registry at hand (the reason Lambda) shows a model.
func StandardCatalogue(cfg Config, connections ...string) []Description {
	return []Description{
		describeCommitmentClose(),
		describeCommitmentOpen(),
		describeHTTP(cfg.HTTP, connections),
		describeNone(),
		describeNotify(cfg.Notify.TopicARN),
		describeObject(cfg.Object.AllowedPrefixes),
	}
}

// CatalogueFromEnv returns StandardCatalogue of the configuration
// ORA_ACT_CONFIG, ORA_TOPIC_ARN, ORA_BUCKET and ORA_CONNECTIONS (only the
// connections' names are read) describe, and function.invoke when
// ORA_FUNCTIONS names functions: what the reason Lambda shows a model of what
// the act Lambda can run (descriptions need no secret). Errors: EINVALID
// (ORA_ACT_CONFIG, ORA_CONNECTIONS or ORA_FUNCTIONS is not JSON).
func CatalogueFromEnv(getenv func(string) string) ([]Description, error) {
	var c Config
	if raw := getenv(EnvConfig); raw != "" {
		if err := json.Unmarshal([]byte(raw), &c); err != nil {
			return nil, ora.Invalid(EnvConfig, "not a JSON act config: %v", err)
		}
	}
	c.Notify.TopicARN = getenv(EnvTopicARN)
	c.Object.Bucket = getenv(EnvBucket)
	var conns []struct {
		Name string `json:"name"`
	}
	if raw := getenv("ORA_CONNECTIONS"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &conns); err != nil {
			return nil, ora.Invalid("ORA_CONNECTIONS", "not a JSON array of connections: %v", err)
		}
	}
	names := make([]string, 0, len(conns))
	for _, cn := range conns {
		names = append(names, cn.Name)
	}
	sort.Strings(names)
	cat := StandardCatalogue(c, names...)
	funcs, err := FunctionsFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	if d, ok := DescribeFunctions(funcs); ok {
		cat = append(cat, d)
	}
	return cat, nil
}

// DescribeFunctions is function.invoke's catalogue entry for the configured
// funcs, as the actor that runs them describes itself (no target is needed
// to describe one): what a reasoner shows a model of the functions. ok is
// false when no function is configured: function.invoke is then left out.
func DescribeFunctions(funcs map[string]FunctionConfig) (d Description, ok bool) {
	if len(funcs) == 0 {
		return Description{}, false
	}
	f := &FunctionInvoke{funcs: map[string]function{}}
	for name, c := range funcs {
		f.funcs[name] = function{Function: Function{Config: c}, name: name}
		f.names = append(f.names, name)
	}
	sort.Strings(f.names)
	return f.Describe(), true
}
