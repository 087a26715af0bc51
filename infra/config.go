package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/connect"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// Schedule is one EventBridge Scheduler schedule that triggers observe-schedule.
type Schedule struct {
	Name       string `json:"name"`
	Expression string `json:"expression"` // rate(...), cron(...) or at(...)
	Timezone   string `json:"timezone,omitempty"`
}

// Config is the stack's configuration, read from CDK context (`ora:*` keys).
type Config struct {
	// Root is the repository root, holding functions/, build/ and statemachines/.
	Root string
	// DeletionProtection guards the ledger and idempotency tables.
	DeletionProtection bool
	// LogRetentionDays for every function's and the state machine's log group.
	LogRetentionDays int
	// Reasoner selects the reason function's reasoner: rules or bedrock.
	Reasoner string
	// BedrockModelIDs are the only models the reason function may invoke.
	BedrockModelIDs []string
	// GuardrailID and GuardrailVersion name a Bedrock guardrail (both or
	// neither): applied to every Converse call and by the safety validator.
	GuardrailID      string
	GuardrailVersion string
	// EscalationTimeoutSeconds is how long a low-confidence decision waits for
	// a human before it counts as rejected.
	EscalationTimeoutSeconds int
	// CoalesceWindowMs (ora:coalesceWindowMs) is the observers' coalescing
	// window in milliseconds (ORA_COALESCE_WINDOW_MS); 0, the default, is
	// off. At most 10000: the first signal's observer waits it out.
	CoalesceWindowMs int
	// Retention (ora:retention) is how long the records that serve a wave
	// only while it runs are kept: the ledger's TTL for facts and packets
	// (ORA_RETENTION on every function) and the jobs bucket's lifecycle.
	Retention Retention
	// CoalesceSources (ora:coalesceSources) maps a source name to its entity
	// key: "off" (the source is never coalesced) or a dotted path into the
	// payload ("order.id"), as ora dev's coalesce.sources; the observers read
	// it as ORA_COALESCE_SOURCES. It needs ora:coalesceWindowMs.
	CoalesceSources map[string]string
	// BatchWindowMs (ora:batchWindowMs) is the reason function's batch
	// window in milliseconds (ORA_BATCH_WINDOW_MS), with the Bedrock
	// reasoner: waves of one source family reaching Reason within it are
	// reasoned in one model call. 0, the default, is off; 1000 is the usual
	// window; at most 10000.
	BatchWindowMs int
	// Schedules become EventBridge Scheduler schedules.
	Schedules []Schedule
	// Actions bounds the act function (ORA_ACT_CONFIG): http allow-listed
	// hosts and timeout, object prefixes. Its signing key is a generated
	// secret; its bucket and topic are the stack's.
	Actions act.Config
	// Connections are the APIs http.request reaches by name (context
	// ora:connections: a JSON array of {name, url, auth} without secrets).
	// Each gets a Secrets Manager secret of its own, which only the act
	// function may read; put the credential in it after the deploy.
	Connections []connect.Config
	// Functions are the functions function.invoke may run (context
	// ora:functions): name -> Lambda ARN (a function's, an alias's or a
	// version's), or name -> {arn, description, timeout_seconds,
	// payload_schema}. The act function may invoke exactly these ARNs.
	Functions map[string]act.FunctionConfig
	// JWTIssuer and JWTAudience select an external identity provider; when
	// empty, the stack creates a Cognito user pool.
	JWTIssuer   string
	JWTAudience string
	// API selects how the API is deployed (context ora:api): APIHTTP, an
	// API Gateway HTTP API with a JWT authorizer (Cognito unless JWTIssuer is
	// set); or APIREST, an API Gateway REST API with a Lambda TOKEN
	// authorizer and no Cognito, for LocalStack's free plan
	// (localstack/README.md). Both serve the same routes with the same scopes.
	API string
	// AppVersion is the semantic version the user gives their app context
	// (ora:appVersion, default 0.0.0); see AppVersionOf.
	AppVersion string
	// Orientation configures what a wave orients from on AWS, as `ora dev`'s
	// orientation settings do locally (context ora:orientation).
	Orientation Orientation
	// EscalationSubscriptions receive every escalation (a decision that
	// waits for a human); AlarmSubscriptions every alarm. Without one, both
	// reach no one.
	EscalationSubscriptions []Subscription
	AlarmSubscriptions      []Subscription
	// Golden (context ora:golden) is where the deployment keeps its own
	// golden set (decision waves, incidents under incidents/): the motor's
	// promotion gate replays it instead of the set ora ships.
	Golden Golden
	// GoldenRecordRate (context ora:goldenRecordRate, 0 to 1; needs
	// ora:golden) is the share of real waves the reason function records
	// for the promotion gate (ORA_GOLDEN_RECORD_RATE), with the Bedrock
	// reasoner: it may then write and read only the golden prefix's
	// recordings/. 0, the default, is off.
	GoldenRecordRate float64
	// MCPServers (context ora:mcpServers) are the MCP servers the reason
	// and act functions reach (ORA_MCP_SERVERS): streamable HTTP only.
	MCPServers []mcp.ServerConfig
	// APIThrottles (context ora:apiThrottles) limit the API's stage: the
	// webhook route on its own, so reads and approvals never take the
	// webhooks' share (a 429 to a provider can lose its delivery).
	APIThrottles APIThrottles
	// WarmThroughput (context ora:warmThroughput) pre-warms the on-demand
	// ledger table and its indexes; zero leaves DynamoDB's default for a
	// new table (4,000 writes and 12,000 reads a second).
	WarmThroughput WarmThroughput
	// InlineFetchMaxJobs (context ora:inlineFetchMaxJobs) is the largest
	// fan-out a wave runs as an inline Map in an Express child; a larger one
	// runs as a Distributed Map Run. 0 runs every fan-out distributed.
	InlineFetchMaxJobs int
}

// Throttle is an API Gateway rate limit: requests a second, and the burst
// above it.
type Throttle struct {
	Rate  float64 `json:"rate"`
	Burst float64 `json:"burst"`
}

// APIThrottles are the API's limits: the webhook route's and every other
// route's (reads, approvals, operations).
type APIThrottles struct {
	Webhooks Throttle `json:"webhooks"`
	Reads    Throttle `json:"reads"`
}

// WarmThroughput is the ledger table's warm throughput, in units a second
// (DynamoDB's WarmThroughput).
type WarmThroughput struct {
	ReadUnitsPerSecond  int `json:"read_units_per_second,omitempty"`
	WriteUnitsPerSecond int `json:"write_units_per_second,omitempty"`
}

// Orientation is the orientation kernel's configuration on AWS: without it
// waves orient from the ledger only.
type Orientation struct {
	// ObjectsBucket is an existing bucket the objects source family reads
	// (by name); plan and fetch may read it, nothing may write it.
	ObjectsBucket string `json:"objects_bucket,omitempty"`
	// HTTPAllow lists the URL prefixes the http source family may GET.
	HTTPAllow []string `json:"http_allow,omitempty"`
	// TokenBudget is the default profile's total token budget (0: the
	// default, 150,000); the bands' floors must fit in it.
	TokenBudget int `json:"token_budget,omitempty"`
	// Admin changes the guard's admin settings (band floors, largest budget,
	// critical families, longest horizon, main namespace), as ora dev's
	// orientation.admin does.
	Admin *orient.AdminSettings `json:"admin,omitempty"`
	// ProposalTTL is how long a proposal waits for a decision ("168h").
	ProposalTTL string `json:"proposal_ttl,omitempty"`
}

// Golden locates a golden set in an existing bucket the api function may
// read (under Prefix only).
type Golden struct {
	Bucket string `json:"bucket,omitempty"`
	Prefix string `json:"prefix,omitempty"`
}

// env returns the orientation settings as the functions read them
// (orient.EnvOptions, orient.ObjectsFromEnv); only the ones set.
func (o Orientation) env() map[string]string {
	out := map[string]string{}
	if o.ObjectsBucket != "" {
		out["ORA_OBJECTS_BUCKET"] = o.ObjectsBucket
	}
	if len(o.HTTPAllow) > 0 {
		out["ORA_OBSERVE_HTTP_ALLOW"] = strings.Join(o.HTTPAllow, ",")
	}
	if o.TokenBudget > 0 {
		out["ORA_TOKEN_BUDGET"] = strconv.Itoa(o.TokenBudget)
	}
	if o.Admin != nil {
		b, _ := json.Marshal(o.Admin) // maps of strings and numbers: cannot fail
		out["ORA_ORIENTATION_ADMIN"] = string(b)
	}
	if o.ProposalTTL != "" {
		out["ORA_PROPOSAL_TTL"] = o.ProposalTTL
	}
	return out
}

// AppVersionOf is the app context's version every decision and operator
// record carries on AWS (ORA_APP_VERSION): AppVersion with the digest of the
// app context the stack fixes — the schedules (sources), the actions'
// bounds, the escalation timeout and the token issuer (scopes) — as build
// metadata (ora.AppVersion). Webhook sources live in a secret the stack
// does not read; changing them is versioned by changing ora:appVersion.
func (c Config) AppVersionOf() (string, error) {
	return ora.AppVersion(c.AppVersion, struct {
		Schedules         []Schedule       `json:"schedules"`
		Actions           act.Config       `json:"actions"`
		EscalationSeconds int              `json:"escalation_timeout_seconds"`
		JWTIssuer         string           `json:"jwt_issuer"`
		JWTAudience       string           `json:"jwt_audience"`
		Connections       []connect.Config `json:"connections,omitempty"`
		// The functions function.invoke runs (none: the digest is as before).
		Functions map[string]act.FunctionConfig `json:"functions,omitempty"`
		// The servers ora may call (omitted when none, so the digest of a
		// context without them is unchanged).
		MCPServers []mcp.ServerConfig `json:"mcp_servers,omitempty"`
	}{c.Schedules, c.Actions, c.EscalationTimeoutSeconds, c.JWTIssuer, c.JWTAudience, c.Connections, c.Functions, c.MCPServers})
}

// The API profiles (context ora:api).
const (
	APIHTTP = "http"
	APIREST = "rest"
)

// DefaultConfig returns the configuration cdk.json ships.
func DefaultConfig() Config {
	return Config{
		Root:                     "..",
		DeletionProtection:       true,
		LogRetentionDays:         30,
		Reasoner:                 "rules",
		BedrockModelIDs:          []string{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "us.anthropic.claude-haiku-4-5-20251001-v1:0"},
		EscalationTimeoutSeconds: 86400,
		Schedules:                []Schedule{{Name: "hourly-check", Expression: "rate(1 hour)"}},
		Actions:                  act.Config{Object: act.ObjectConfig{AllowedPrefixes: []string{"actions/"}}},
		API:                      APIHTTP,
		// 100 waves a second with room for a provider's burst; reads are a
		// person's or a dashboard's.
		APIThrottles:       APIThrottles{Webhooks: Throttle{Rate: 500, Burst: 1000}, Reads: Throttle{Rate: 50, Burst: 100}},
		InlineFetchMaxJobs: 40,
		Retention:          DefaultRetention(),
	}
}

// ConfigFromContext reads the `ora:*` context keys over DefaultConfig. A
// malformed value panics with the key's name: synth cannot go on without it.
func ConfigFromContext(app awscdk.App) Config {
	c := DefaultConfig()
	node := app.Node()
	get := func(key string, into any) {
		v := node.TryGetContext(jsii.String(key))
		if v == nil {
			return
		}
		// Context from the command line (-c key=value) arrives as a string.
		if s, ok := v.(string); ok {
			if err := json.Unmarshal([]byte(s), into); err == nil {
				return
			}
			if p, ok := into.(*string); ok {
				*p = s
				return
			}
			panic(fmt.Sprintf("context %s: %q is not valid", key, s))
		}
		b, _ := json.Marshal(v)
		if err := json.Unmarshal(b, into); err != nil {
			panic(fmt.Sprintf("context %s: %v", key, err))
		}
	}
	get("ora:root", &c.Root)
	get("ora:deletionProtection", &c.DeletionProtection)
	get("ora:logRetentionDays", &c.LogRetentionDays)
	get("ora:reasoner", &c.Reasoner)
	get("ora:bedrockModelIds", &c.BedrockModelIDs)
	get("ora:guardrailId", &c.GuardrailID)
	get("ora:guardrailVersion", &c.GuardrailVersion)
	get("ora:escalationTimeoutSeconds", &c.EscalationTimeoutSeconds)
	get("ora:coalesceWindowMs", &c.CoalesceWindowMs)
	if c.CoalesceWindowMs < 0 || c.CoalesceWindowMs > 10000 {
		panic(fmt.Sprintf("context ora:coalesceWindowMs: %d is not between 0 and 10000", c.CoalesceWindowMs))
	}
	get("ora:retention", &c.Retention)
	if err := c.Retention.validate(); err != nil {
		panic(fmt.Sprintf("context ora:retention: %v", err))
	}
	get("ora:coalesceSources", &c.CoalesceSources)
	if err := checkCoalesceSources(c.CoalesceSources, c.CoalesceWindowMs); err != nil {
		panic(fmt.Sprintf("context ora:coalesceSources: %v", err))
	}
	get("ora:batchWindowMs", &c.BatchWindowMs)
	if c.BatchWindowMs < 0 || c.BatchWindowMs > 10000 {
		panic(fmt.Sprintf("context ora:batchWindowMs: %d is not between 0 and 10000", c.BatchWindowMs))
	}
	get("ora:schedules", &c.Schedules)
	get("ora:actions", &c.Actions)
	get("ora:connections", &c.Connections)
	for _, cn := range c.Connections {
		if err := cn.Validate(false); err != nil {
			panic(fmt.Sprintf("context ora:connections: %v", err))
		}
		if cn.Auth.Secret != "" || cn.SecretARN != "" {
			panic(fmt.Sprintf("context ora:connections: %s: leave secret and secret_arn out: the stack makes the connection's secret", cn.Name))
		}
	}
	get("ora:functions", &c.Functions)
	get("ora:jwtIssuer", &c.JWTIssuer)
	get("ora:jwtAudience", &c.JWTAudience)
	get("ora:api", &c.API)
	get("ora:appVersion", &c.AppVersion)
	get("ora:orientation", &c.Orientation)
	if _, err := orient.EnvOptions(func(k string) string { return c.Orientation.env()[k] }); err != nil {
		panic(fmt.Sprintf("context ora:orientation: %v", err))
	}
	get("ora:golden", &c.Golden)
	if c.Golden.Prefix != "" && c.Golden.Bucket == "" {
		panic("context ora:golden: prefix without a bucket")
	}
	get("ora:goldenRecordRate", &c.GoldenRecordRate)
	if r := c.GoldenRecordRate; r < 0 || r > 1 || (r > 0 && c.Golden.Bucket == "") {
		panic(fmt.Sprintf("context ora:goldenRecordRate: %v must be 0 to 1, and above 0 only with ora:golden's bucket", r))
	}
	get("ora:escalationSubscriptions", &c.EscalationSubscriptions)
	get("ora:alarmSubscriptions", &c.AlarmSubscriptions)
	for key, subs := range map[string][]Subscription{"ora:escalationSubscriptions": c.EscalationSubscriptions, "ora:alarmSubscriptions": c.AlarmSubscriptions} {
		if err := validateSubscriptions(key, subs); err != nil {
			panic(err.Error())
		}
	}
	get("ora:apiThrottles", &c.APIThrottles)
	for name, th := range map[string]Throttle{"webhooks": c.APIThrottles.Webhooks, "reads": c.APIThrottles.Reads} {
		if th.Rate <= 0 || th.Burst < 1 {
			panic(fmt.Sprintf("context ora:apiThrottles: %s needs a positive rate and a burst of at least 1", name))
		}
	}
	get("ora:warmThroughput", &c.WarmThroughput)
	if w := c.WarmThroughput; w.ReadUnitsPerSecond < 0 || w.WriteUnitsPerSecond < 0 {
		panic("context ora:warmThroughput: units a second cannot be negative")
	}
	get("ora:inlineFetchMaxJobs", &c.InlineFetchMaxJobs)
	if c.InlineFetchMaxJobs < 0 || c.InlineFetchMaxJobs > 40 {
		panic(fmt.Sprintf("context ora:inlineFetchMaxJobs: %d is not 0 to 40 (an inline Map runs at most 40 iterations at once)", c.InlineFetchMaxJobs))
	}
	get("ora:mcpServers", &c.MCPServers)
	if err := mcp.Validate(c.MCPServers, false); err != nil {
		panic(fmt.Sprintf("context ora:mcpServers: %v", err))
	}
	if c.Reasoner != "rules" && c.Reasoner != "bedrock" {
		panic(fmt.Sprintf("context ora:reasoner: %q is not rules or bedrock", c.Reasoner))
	}
	if (c.GuardrailID == "") != (c.GuardrailVersion == "") {
		panic("context ora:guardrailId and ora:guardrailVersion go together: set both or neither")
	}
	if c.API != APIHTTP && c.API != APIREST {
		panic(fmt.Sprintf("context ora:api: %q is not %s or %s", c.API, APIHTTP, APIREST))
	}
	if c.API == APIREST && c.JWTIssuer != "" {
		panic("context ora:jwtIssuer applies to the http API profile; ora:api=rest verifies its own HS256 tokens")
	}
	if (c.JWTIssuer == "") != (c.JWTAudience == "") {
		panic("context ora:jwtIssuer and ora:jwtAudience go together: set both or neither")
	}
	if err := act.ValidateFunctions(c.Functions); err != nil {
		panic(fmt.Sprintf("context ora:functions: %v", err))
	}
	for name, f := range c.Functions {
		if len(f.Command) > 0 {
			panic(fmt.Sprintf("context ora:functions: %s is a command, which runs in ora dev only: give the Lambda function's arn", name))
		}
	}
	if _, err := c.AppVersionOf(); err != nil {
		panic(fmt.Sprintf("context ora:appVersion: %v", err))
	}
	return c
}

// FunctionARNs are the configured functions' Lambda ARNs, sorted: the
// resources of the act function's lambda:InvokeFunction statement.
func (c Config) FunctionARNs() []string {
	var arns []string
	for _, f := range c.Functions {
		if f.ARN != "" {
			arns = append(arns, f.ARN)
		}
	}
	slices.Sort(arns)
	return slices.Compact(arns)
}

// Retention is the context key ora:retention, in days: {"factsDays": 30,
// "packetsDays": 30, "jobsDays": 7} (the defaults). A zero factsDays or
// packetsDays keeps those entries.
type Retention struct {
	FactsDays   int `json:"factsDays"`
	PacketsDays int `json:"packetsDays"`
	JobsDays    int `json:"jobsDays"`
}

// DefaultRetention is ora.DefaultRetention's 30 days for facts and packets
// and a week for a wave's jobs.
func DefaultRetention() Retention {
	return Retention{FactsDays: 30, PacketsDays: 30, JobsDays: 7}
}

// validate checks the days against the ledger's rules (ora.Retention.Validate).
func (r Retention) validate() error {
	if r.JobsDays < 1 || r.JobsDays > 3650 || r.FactsDays < 0 || r.FactsDays > 3650 || r.PacketsDays < 0 || r.PacketsDays > 3650 {
		return fmt.Errorf("factsDays and packetsDays must be between 0 (kept) and 3650, jobsDays between 1 and 3650: %+v", r)
	}
	return r.ledger().Validate()
}

// ledger is the ledger's retention by kind.
func (r Retention) ledger() ora.Retention {
	out := ora.Retention{}
	if r.FactsDays > 0 {
		out[ora.KindObservedFact] = time.Duration(r.FactsDays) * 24 * time.Hour
	}
	if r.PacketsDays > 0 {
		out[ora.KindOrientationPacket] = time.Duration(r.PacketsDays) * 24 * time.Hour
	}
	return out
}

// checkCoalesceSources requires each entry of ora:coalesceSources to name a
// source and give "off" or a dotted payload path, and a window to apply them
// in.
func checkCoalesceSources(sources map[string]string, windowMs int) error {
	if len(sources) == 0 {
		return nil
	}
	if windowMs == 0 {
		return fmt.Errorf("coalescing is off: set ora:coalesceWindowMs too")
	}
	for name, key := range sources {
		if name == "" {
			return fmt.Errorf("an entry names no source")
		}
		if key == "" || slices.Contains(strings.Split(key, "."), "") {
			return fmt.Errorf("source %s: %q is neither \"off\" nor a dotted payload path (order.id)", name, key)
		}
	}
	return nil
}
