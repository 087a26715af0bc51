package embedded

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/connect"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
)

// Duration is a time.Duration written as "24h" or "500ms" in YAML.
type Duration time.Duration

// UnmarshalYAML reads a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration like 24h or 500ms", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Config is `ora dev`'s configuration file, documented key by key in docs/configuration.md.
type Config struct {
	Listen            string                 `yaml:"listen"`
	DataDir           string                 `yaml:"data_dir"`
	Store             StoreConfig            `yaml:"store"`
	Sources           []observe.SourceConfig `yaml:"sources"`
	Tokens            []httpapi.Token        `yaml:"tokens"`
	RulesFile         string                 `yaml:"rules_file,omitempty"`
	Reasoner          ReasonerConfig         `yaml:"reasoner"`
	Actions           act.Config             `yaml:"actions"`
	Schedules         []observe.Job          `yaml:"schedules,omitempty"`
	Watch             WatchConfig            `yaml:"watch"`
	EscalationTimeout Duration               `yaml:"escalation_timeout"`
	BodyLimit         int64                  `yaml:"body_limit"`
	TokenBudget       int                    `yaml:"token_budget"`
	Server            ServerConfig           `yaml:"server"`
	Orientation       OrientationConfig      `yaml:"orientation,omitempty"`
	// Faults injects failures at named states (chaos drills, tests).
	Faults []FaultConfig `yaml:"faults,omitempty"`
	// Operate tunes the operator: what it does with a failure.
	Operate OperateConfig `yaml:"operate"`
	// Connections are the APIs http.request reaches by name, each with its
	// base URL and credential (docs/connections.md).
	Connections []connect.Config `yaml:"connections,omitempty"`
	// AppVersion is the semantic version the user gives their app context
	// (default 0.0.0); decisions record it with the context's digest (see
	// AppVersionOf).
	AppVersion string `yaml:"app_version,omitempty"`
	// Functions are the user's code function.invoke runs, by name: a local
	// command or a URL (an arn runs on AWS only).
	Functions map[string]act.FunctionConfig `yaml:"functions,omitempty"`
	// MCPServers are the MCP servers whose tools the Bedrock reasoner may
	// offer (read-only ones named in tools_allowed) and the mcp.call action
	// may call (those in each server's act_tools): stdio commands or
	// streamable HTTP URLs.
	MCPServers []mcp.ServerConfig `yaml:"mcp_servers,omitempty"`
	// Events is the source POST /events verifies AWS events as (an hmac
	// source; its name defaults to "events"); unset, /events answers 404.
	Events observe.SourceConfig `yaml:"events,omitempty"`
	// Tables are the user's DynamoDB tables whose streams become table
	// signals (docs/sources.md).
	Tables []observe.TableConfig `yaml:"tables,omitempty"`
	// Retention says how long facts, packets, jobs files and finished
	// executions are kept, and how the sweeper removes them.
	Retention RetentionConfig `yaml:"retention"`
	// Coalesce merges a burst of signals about one entity (an issue, a
	// thread, an object) into one wave (docs/signals.md); off unless its
	// window is set.
	Coalesce CoalesceConfig `yaml:"coalesce,omitempty"`
}

// CoalesceConfig is `coalesce:`: the window (500ms is the usual value; unset
// or 0: off) and, by source name, "off" or the payload path of the source's
// entity key (a generic hmac source is coalesced only with one).
type CoalesceConfig struct {
	Window  Duration          `yaml:"window"`
	Sources map[string]string `yaml:"sources,omitempty"`
}

// OperateConfig tunes the operator (seed 003).
type OperateConfig struct {
	// AutoResumeTransient resumes a wave paused by a transient failure by
	// itself, after a backoff, up to MaxAutoResumes times per stage; false
	// pauses it for `ora resume` like any other failure.
	AutoResumeTransient bool `yaml:"auto_resume_transient"`
	// MaxAutoResumes bounds the automatic resumptions of one stage of a wave.
	MaxAutoResumes int `yaml:"max_auto_resumes"`
	// PauseTimeout is how long a paused wave waits for a resume before it
	// ends FAILED.
	PauseTimeout Duration `yaml:"pause_timeout"`
	// GoldenDir is the golden set motor promotions must pass (a directory of
	// exported waves); empty: the set that ships with ora.
	GoldenDir string `yaml:"golden_dir,omitempty"`
}

// StoreConfig selects the ledger's store.
type StoreConfig struct {
	Kind       string       `yaml:"kind"` // sqlite | dynamodb
	SQLitePath string       `yaml:"sqlite_path,omitempty"`
	DynamoDB   DynamoConfig `yaml:"dynamodb,omitempty"`
}

// DynamoConfig points the ledger at DynamoDB (DynamoDB Local or AWS).
type DynamoConfig struct {
	Endpoint         string `yaml:"endpoint,omitempty"`
	Region           string `yaml:"region,omitempty"`
	Table            string `yaml:"table,omitempty"`
	IdempotencyTable string `yaml:"idempotency_table,omitempty"`
	CreateTables     bool   `yaml:"create_tables,omitempty"`
}

// ReasonerConfig selects the reasoner: the rules file, or Amazon Bedrock.
type ReasonerConfig struct {
	Kind    string        `yaml:"kind"` // rules | bedrock
	Bedrock reason.Config `yaml:"bedrock,omitempty"`
	// BedrockEndpoint overrides the Bedrock runtime endpoint (a proxy, or a fake in tests).
	BedrockEndpoint string `yaml:"bedrock_endpoint,omitempty"`
	Region          string `yaml:"region,omitempty"`
	// Record records the golden set's model calls from real waves (with
	// kind bedrock): see RecordConfig.
	Record RecordConfig `yaml:"record,omitempty"`
}

// RecordConfig is reasoner.record: a share of real waves is decided once
// more as the promotion gate replays it, and each Converse call is kept in
// the golden set's recordings folder (Config.RecordingsDir), as `ora motor
// record` keeps it. Off unless rate is above 0.
type RecordConfig struct {
	// Rate is the share of waves recorded, 0 (off) to 1 (every wave).
	Rate float64 `yaml:"rate,omitempty"`
	// Timeout bounds one wave's recording (default 20s).
	Timeout Duration `yaml:"timeout,omitempty"`
	// MaxBytes bounds one recorded exchange (default 1 MiB).
	MaxBytes int `yaml:"max_bytes,omitempty"`
}

// WatchConfig is the watched folder: files created, modified or deleted there
// become object signals.
type WatchConfig struct {
	Dir      string   `yaml:"dir"`
	Interval Duration `yaml:"interval"`
	// Folders are more watched folders, each named (signals carry the name
	// as source.bucket) and filtered by path prefixes and suffixes.
	Folders []observe.FolderConfig `yaml:"folders,omitempty"`
}

// DefaultConfig is what `make run` starts with: SQLite under .ora, a demo
// hmac source and a GitHub source with development secrets, an approver token.
func DefaultConfig() Config {
	return Config{
		Listen:  "127.0.0.1:8080",
		DataDir: ".ora",
		Store:   StoreConfig{Kind: "sqlite"},
		Sources: []observe.SourceConfig{
			{Name: "demo", Type: observe.TypeHMAC, Secret: "dev-demo-secret", Header: "X-Ora-Signature", Hash: "sha256"},
			{Name: "github", Type: observe.TypeGitHub, Secret: "dev-github-secret"},
		},
		Tokens: []httpapi.Token{
			// Published in the README: it approves and reads, nothing more.
			// Operating waves and the motor, and orientation proposals,
			// need a token of your own in a config file.
			{Token: "dev-approver-token", Subject: "developer", Scopes: []string{httpapi.ScopeApprove, httpapi.ScopeRead, httpapi.ScopeOperatorRead}},
		},
		Reasoner: ReasonerConfig{Kind: "rules", Bedrock: reason.DefaultConfig()},
		Actions: act.Config{
			HTTP:   act.HTTPConfig{AllowedHosts: []string{"127.0.0.1", "localhost"}, SigningSecret: "dev-signing-secret"},
			Object: act.ObjectConfig{AllowedPrefixes: []string{"actions/"}},
		},
		Watch:             WatchConfig{Interval: Duration(time.Second)},
		Events:            observe.SourceConfig{Name: observe.DefaultEventsSourceName, Type: observe.TypeHMAC, Secret: "dev-events-secret", Header: "X-Ora-Signature"},
		EscalationTimeout: Duration(24 * time.Hour),
		BodyLimit:         httpapi.DefaultBodyLimit,
		TokenBudget:       ora.DefaultTokenBudget,
		Server:            DefaultServerConfig(),
		Operate:           OperateConfig{AutoResumeTransient: true, MaxAutoResumes: 3, PauseTimeout: Duration(7 * 24 * time.Hour)},
		Retention:         DefaultRetention(),
	}
}

// LoadConfig reads a YAML config over DefaultConfig without its credentials;
// "" returns the defaults, credentials included (they are for `make run`
// alone). A config file therefore has the sources, tokens and http.request
// hosts and signing secret it names, and none it does not. Unknown keys are
// errors, so a typo never passes silently.
func LoadConfig(path string) (Config, error) {
	c := DefaultConfig()
	if path != "" {
		c.Sources, c.Tokens, c.Actions.HTTP, c.Events = nil, nil, act.HTTPConfig{}, observe.SourceConfig{}
		b, err := os.ReadFile(path)
		if err != nil {
			return Config{}, fmt.Errorf("config: %w", err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return Config{}, fmt.Errorf("config %s: %w", path, err)
		}
		w := keyWalk{lines: map[int]string{}}
		w.walk(&doc, reflect.TypeFor[Config](), "")
		if len(w.unknown) > 0 {
			return Config{}, fmt.Errorf("config %s: %s", path, strings.Join(w.unknown, "; "))
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
			return Config{}, fmt.Errorf("config %s: %w", path, w.explainTypeError(err))
		}
		if err := c.complete(); err != nil {
			return c, fmt.Errorf("config %s: %s", path, w.explainInvalid(err))
		}
		return c, nil
	}
	return c, c.complete()
}

// complete fills derived defaults and validates; errors name the key.
func (c *Config) complete() error {
	if c.Listen == "" {
		return ora.Invalid("listen", "required, e.g. 127.0.0.1:8080")
	}
	if c.DataDir == "" {
		return ora.Invalid("data_dir", "required")
	}
	switch c.Store.Kind {
	case "sqlite":
		if c.Store.SQLitePath == "" {
			c.Store.SQLitePath = filepath.Join(c.DataDir, "ledger.db")
		}
	case "dynamodb":
		d := &c.Store.DynamoDB
		if d.Table == "" {
			return ora.Invalid("store.dynamodb.table", "required")
		}
		if d.IdempotencyTable == "" {
			return ora.Invalid("store.dynamodb.idempotency_table", "required")
		}
		if d.Region == "" {
			d.Region = "us-east-1"
		}
	default:
		return ora.Invalid("store.kind", "%q is not sqlite or dynamodb", c.Store.Kind)
	}
	if len(c.Sources) == 0 {
		return ora.Invalid("sources", "at least one webhook source is required")
	}
	for i := range c.Sources {
		if err := c.Sources[i].Validate(); err != nil {
			var e *ora.Error
			if errors.As(err, &e) && strings.HasPrefix(e.Field, "source.") {
				return ora.Invalid(fmt.Sprintf("sources[%d].%s", i, strings.TrimPrefix(e.Field, "source.")), "%s", e.Message)
			}
			return fmt.Errorf("sources[%d]: %w", i, err)
		}
	}
	if c.Events != (observe.SourceConfig{}) {
		ev, err := observe.EventConfig(c.Events)
		if err != nil {
			return fmt.Errorf("events: %w", err)
		}
		c.Events = ev
	}
	if err := c.completeSources(); err != nil {
		return err
	}
	for i, t := range c.Tokens {
		if len(t.Token) < 8 {
			return ora.Invalid(fmt.Sprintf("tokens[%d].token", i), "must be at least 8 characters")
		}
	}
	if err := c.completeConnections(os.Getenv); err != nil {
		return err
	}
	if (len(c.Actions.HTTP.AllowedHosts) > 0 || len(c.Connections) > 0) && c.Actions.HTTP.SigningSecret == "" {
		return ora.Invalid("actions.http.signing_secret", "required when actions.http.allowed_hosts or connections are set")
	}
	if c.Actions.MaxParallel < 0 {
		return ora.Invalid("actions.max_parallel", "must not be negative")
	}
	if err := act.ValidateFunctions(c.Functions); err != nil {
		return err
	}
	if _, err := c.Orientation.admin(c.TokenBudget); err != nil {
		return err
	}
	if c.Orientation.ProposalTTL < 0 {
		return ora.Invalid("orientation.proposal_ttl", "must not be negative")
	}
	if !loopback(c.Listen) {
		if key, ok := c.defaultSecret(); ok {
			return ora.Invalid(key, "holds the built-in development value, published in the README: set your own before listening on %s (not a loopback address)", c.Listen)
		}
	}
	switch c.Reasoner.Kind {
	case "rules":
	case "bedrock":
		if err := c.Reasoner.Bedrock.Validate(); err != nil {
			return fmt.Errorf("reasoner.bedrock: %w", err)
		}
	default:
		return ora.Invalid("reasoner.kind", "%q is not rules or bedrock", c.Reasoner.Kind)
	}
	if r := c.Reasoner.Record; r.Rate < 0 || r.Rate > 1 || r.Timeout < 0 || r.MaxBytes < 0 || (r.Rate > 0 && c.Reasoner.Kind != "bedrock") {
		return ora.Invalid("reasoner.record", "rate %v must be 0 to 1 (above 0 only with reasoner.kind bedrock), timeout and max_bytes not negative", r.Rate)
	}
	for i, s := range c.Schedules {
		if s.Name == "" || s.Expression == "" {
			return ora.Invalid(fmt.Sprintf("schedules[%d]", i), "name and expression are required")
		}
	}
	if c.Watch.Dir == "" {
		c.Watch.Dir = filepath.Join(c.DataDir, "inbox")
	}
	if c.Watch.Interval <= 0 {
		c.Watch.Interval = Duration(time.Second)
	}
	if c.Actions.Object.Root == "" {
		c.Actions.Object.Root = filepath.Join(c.DataDir, "objects")
	}
	if time.Duration(c.EscalationTimeout) < time.Second {
		return ora.Invalid("escalation_timeout", "must be at least 1s")
	}
	if c.BodyLimit <= 0 {
		return ora.Invalid("body_limit", "must be positive")
	}
	if c.TokenBudget <= 0 {
		return ora.Invalid("token_budget", "must be positive")
	}
	if err := c.Server.validate(); err != nil {
		return err
	}
	if err := validateFaults(c.Faults); err != nil {
		return err
	}
	if _, err := c.AppVersionOf(); err != nil {
		return err
	}
	if err := mcp.Validate(c.MCPServers, true); err != nil {
		return err
	}
	if err := c.Retention.validate(); err != nil {
		return err
	}
	if c.Operate.MaxAutoResumes < 0 {
		return ora.Invalid("operate.max_auto_resumes", "must not be negative")
	}
	if time.Duration(c.Operate.PauseTimeout) < time.Second {
		return ora.Invalid("operate.pause_timeout", "must be at least 1s")
	}
	if c.Coalesce.Window < 0 {
		return ora.Invalid("coalesce.window", "must not be negative")
	}
	return nil
}

// defaultSecret returns the key of the first credential that still holds a
// value of DefaultConfig.
func (c Config) defaultSecret() (string, bool) {
	d := DefaultConfig()
	published := map[string]bool{d.Actions.HTTP.SigningSecret: true}
	for _, s := range d.Sources {
		published[s.Secret] = true
	}
	for _, t := range d.Tokens {
		published[t.Token] = true
	}
	for i, t := range c.Tokens {
		if published[t.Token] {
			return fmt.Sprintf("tokens[%d].token", i), true
		}
	}
	for i, s := range c.Sources {
		if s.Secret != "" && published[s.Secret] {
			return fmt.Sprintf("sources[%d].secret", i), true
		}
	}
	if c.Events.Secret != "" && c.Events.Secret == d.Events.Secret {
		return "events.secret", true
	}
	if c.Actions.HTTP.SigningSecret != "" && published[c.Actions.HTTP.SigningSecret] {
		return "actions.http.signing_secret", true
	}
	return "", false
}

// Source returns the configured webhook source named name.
func (c Config) Source(name string) (observe.SourceConfig, bool) {
	for _, s := range c.Sources {
		if s.Name == name {
			return s, true
		}
	}
	return observe.SourceConfig{}, false
}

// completeConnections expands each connection's secret reference ("${NAME}",
// "file:PATH") and validates it; names must be unique.
func (c *Config) completeConnections(getenv func(string) string) error {
	seen := map[string]bool{}
	for i := range c.Connections {
		cn := &c.Connections[i]
		if cn.Auth.Secret != "" {
			v, err := connect.ResolveSecret(cn.Auth.Secret, getenv)
			if err != nil {
				return fmt.Errorf("connections[%d](%s).auth.secret: %w", i, cn.Name, err)
			}
			cn.Auth.Secret = v
		}
		if err := cn.Validate(true); err != nil {
			return fmt.Errorf("connections[%d]: %w", i, err)
		}
		if seen[cn.Name] {
			return ora.Invalid(fmt.Sprintf("connections[%d].name", i), "%q is configured twice", cn.Name)
		}
		seen[cn.Name] = true
	}
	return nil
}
