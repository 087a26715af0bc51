// Command reason is the Lambda behind the state machine's Reason task. It
// decides with the current motor version (shared/motor: the promoted version
// in the ledger, read at most every motor.DefaultCacheTTL, so POST
// /motor/versions/{v}/promote and /motor/rollback change what the next wave
// runs): its rules file with the rules reasoner (shared/rules) or, when
// ORA_REASONER is bedrock, its model profile laid over the Bedrock observer
// chain's configuration (shared/reason). It records the decision once, with
// the motor and app versions it ran under.
//
// Environment: ORA_LEDGER_TABLE; ORA_RULES_FILE (optional: the base motor
// version's rules file, default the embedded rules/ora.rules.yaml);
// ORA_APP_VERSION (the app context's version, see ora.AppVersion);
// ORA_REASONER (rules | bedrock); ORA_BEDROCK_MODEL_IDS and
// ORA_BEDROCK_CONFIG (see reason.ConfigFromEnv); ORA_ACT_CONFIG and
// ORA_TOPIC_ARN (act.CatalogueFromEnv: the actions shown to the model);
// ORA_TOKEN_BUDGET
// (orient.EnvOptions: the budget the orientation guard holds a
// reasoner-emitted proposal to); ORA_MCP_SERVERS (mcp.EnvServers: the MCP
// servers whose read-only tools the model may call); ORA_BATCH_WINDOW_MS
// (handler.BatchWindowFromEnv: batching, with a Bedrock reasoner only);
// ORA_GOLDEN_RECORD_RATE with ORA_GOLDEN_BUCKET and ORA_GOLDEN_PREFIX
// (motor.LiveRecorderFromEnv: a share of the waves recorded for the
// promotion gate under the golden prefix's recordings/).
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/ora-runtime/ora/functions/reason/handler"
	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/telemetry"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
)

func main() {
	table := os.Getenv("ORA_LEDGER_TABLE")
	base, err := motor.BaseFromEnv(os.Getenv)
	cfg, cfgErr := config.LoadDefaultConfig(context.Background())
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	if table == "" || err != nil || cfgErr != nil {
		log.Fatalf("reason: ORA_LEDGER_TABLE %q, rules: %v, AWS config: %v", table, err, cfgErr)
	}
	// The registry every writer consults (awslambda's: the logger, EMF
	// dimensions, X-Ray, and here the ledger and the model's requests). The
	// function reads no secret of its own (connections' secrets stay with
	// act); what a wave's handlers register in this process is redacted.
	secrets := awslambda.Secrets
	ledger := dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.MustFromEnv(cfg), func(o *dynamo.Options) { o.Secrets = secrets })
	motors := motor.NewRegistry(ledger, base, nil, func(o *motor.Options) { o.CacheTTL = motor.DefaultCacheTTL })
	var build motor.BuildFunc // nil: the rules reasoner over each version's rules file
	var batching handler.Batching
	author := "rules"
	if os.Getenv("ORA_REASONER") == "bedrock" {
		author = "model"
		bc, err := reason.ConfigFromEnv(os.Getenv)
		if err == nil {
			_, err = bc.WithProfile(nil, base.Version)
		}
		if err != nil {
			log.Fatalf("reason: bedrock: %v", err)
		}
		// Batching (ORA_BATCH_WINDOW_MS; off when unset): signals of one
		// source family within the window are reasoned in one model call.
		if batching.Window, err = handler.BatchWindowFromEnv(os.Getenv); err != nil {
			log.Fatalf("reason: %v", err)
		}
		batching.Store, batching.MaxSize, batching.Key = ledger, bc.Batch.MaxSize, bc.Batch.BatchKey
		runtime := bedrockruntime.NewFromConfig(cfg)
		client := bedrock.New(runtime).Redacting(secrets)
		// The model is shown the actions the act function can run (its
		// ORA_ACT_CONFIG); the guardrail, when set, screens every payload.
		catalogue, err := act.CatalogueFromEnv(os.Getenv)
		if err != nil {
			log.Fatalf("reason: %v", err)
		}
		var guard reason.InputGuard
		if bc.Guardrail.Enabled() {
			if guard, err = bedrock.NewGuard(runtime, bc.Guardrail); err != nil {
				log.Fatalf("reason: guardrail: %v", err)
			}
		}
		// The MCP servers' read-only tools, and mcp.call in the catalogue
		// when a server lets the act function call a tool (reason.Offer).
		servers, err := mcpClient()
		if err != nil {
			log.Fatalf("reason: %v", err)
		}
		// A share of the waves is replayed once as the gate replays it and
		// its Converse calls kept under the golden prefix (off when unset).
		// The MCP tools the model calls in that decision are called through
		// servers and their results kept beside the recordings.
		live, err := motor.LiveRecorderFromEnv(os.Getenv, s3.NewFromConfig(cfg), servers, secrets, func(rec *bedrock.Recorder) reason.Converser {
			return bedrock.New(bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) { rec.Next, o.HTTPClient = o.HTTPClient, rec }))
		})
		if err != nil {
			log.Fatalf("reason: %v", err)
		}
		if live != nil {
			live.Log, live.Metrics = awslambda.Log, awslambda.Metrics
		}
		build = live.Wrap(func(b motor.Bundle) (ora.Reasoner, error) {
			c, err := bc.WithProfile(b.Model, b.Version)
			if err != nil {
				return nil, err
			}
			// The version's rules may name a program per rule; the catalogue
			// and the MCP tools are offered as the promotion gate replays
			// them (motor.ModelOptions).
			version, err := motor.ModelOptions(b, catalogue, servers)
			if err != nil {
				return nil, err
			}
			return reason.NewReasoner(client, c, version, func(o *reason.Options) {
				o.Patterns, o.Spend, o.Stages, o.Ledger = ledger.Patterns(), ledger.Spend(), ledger.Patterns(), ledger
				o.Guard = guard
				// reality_green from the operator's state: diagnostic mode when not.
				o.Kernel = reason.NewKernel(reason.CacheIncidents(operate.New(ledger), ledger, nil), ledger, c.Reality, nil)
			})
		})
	}
	env, err := orient.EnvOptions(os.Getenv)
	if err != nil {
		log.Fatalf("reason: %v", err)
	}
	// Orientation proposals the reasoner emits go through the guard.
	proposals := orient.NewProfiles(ledger, env, orient.ObjectsFromEnv(os.Getenv, s3.NewFromConfig(cfg)), func(o *orient.Options) { o.Metrics = telemetry.WithPrefix(awslambda.Metrics) })
	// A decision whose parameters the actions would refuse goes to a human.
	h := handler.Handler{Ledger: ledger, Reasoner: motor.NewReasoner(motors, build), Proposals: proposals, AppVersion: os.Getenv(motor.EnvAppVersion),
		Parameters: act.StandardParameters(), Batching: batching}
	awslambda.Start("reason", h.Handle, func(o *telemetry.TaskOptions) { o.AuthorType = author })
}

// mcpClient returns the client of the MCP servers ORA_MCP_SERVERS lists
// (streamable HTTP only), or nil without servers.
func mcpClient() (*mcp.Client, error) {
	servers, err := mcp.ServersFromEnv(os.Getenv)
	if err != nil || len(servers) == 0 {
		return nil, err
	}
	return mcp.New(servers, false)
}
