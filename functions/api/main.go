// Command api is the Lambda behind the HTTP API's GET /signals/{id}, GET
// /waves/{id}, POST /decisions/{id}/approve|reject, the operator's and the
// motor's routes (/incidents, /waves/{id}/resume and /redrive, /motor/...) and the six
// /api/orientation routes, authorized by the JWT API Gateway verified. In the
// REST API profile (ora:api=rest) it is also the API's TOKEN authorizer,
// verifying bearer tokens signed with the key in ORA_API_TOKEN_SECRET_ARN
// (shared/apigw, shared/apitoken).
//
// Environment: ORA_LEDGER_TABLE, ORA_STATE_MACHINE_ARN, ORA_RESOURCE_SERVER
// (the scope prefix, default "ora"), ORA_RULES_FILE (optional: the base
// motor version's rules file, as the reason function's), ORA_APP_VERSION,
// ORA_BEDROCK_MODEL_IDS (the models the reason function may invoke: a
// proposed motor's model profile may name no other), ORA_JOBS_BUCKET (the
// jobs bucket: a resume at Fetch observations re-enters at Plan when the
// wave's jobs expired), ORA_API_TOKEN_SECRET_ARN (REST profile only),
// ORA_GOLDEN_BUCKET and ORA_GOLDEN_PREFIX (optional: the deployment's own
// golden set the motor's promotion gate replays) and the usual AWS
// configuration.
package main

import (
	"cmp"
	"context"
	"log"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	awssfn "github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/ora-runtime/ora/shared/apigw"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/review"
	"github.com/ora-runtime/ora/shared/sfn"
	"github.com/ora-runtime/ora/shared/telemetry"
	"github.com/ora-runtime/ora/shared/telemetry/awslambda"
)

func main() {
	table, machine := os.Getenv("ORA_LEDGER_TABLE"), os.Getenv("ORA_STATE_MACHINE_ARN")
	cfg, err := config.LoadDefaultConfig(context.Background())
	awslambda.Instrument(&cfg) // X-Ray subsegments for every SDK call
	if table == "" || machine == "" || err != nil {
		log.Fatalf("api: ORA_LEDGER_TABLE %q, ORA_STATE_MACHINE_ARN %q, AWS config: %v", table, machine, err)
	}
	// The registry every writer consults (awslambda's: the logger, EMF
	// dimensions, X-Ray, and here the ledger and every response): the task
	// tokens this function reads to settle waits, the REST profile's signing
	// key. It reads no other secret (connections' secrets stay with act).
	secrets := awslambda.Secrets
	ledger := dynamo.New(dynamodb.NewFromConfig(cfg), table, dynamo.MustFromEnv(cfg), func(o *dynamo.Options) { o.Secrets = secrets })
	states := awssfn.NewFromConfig(cfg)
	waves, err := sfn.NewWaves(states, machine)
	if err != nil {
		log.Fatalf("api: %v", err)
	}
	redriver, err := sfn.NewRedriver(states, machine)
	if err != nil {
		log.Fatalf("api: %v", err)
	}
	rev := review.New(ledger, func(o *review.Options) { o.Settler = registering{sfn.New(states, machine), secrets} })
	env, err := orient.EnvOptions(os.Getenv)
	if err != nil {
		log.Fatalf("api: %v", err)
	}
	// The operator and the motor: resume hands the paused wave's task token
	// back (SendTaskSuccess); promotions are gated by the deployment's golden
	// set (ORA_GOLDEN_BUCKET/PREFIX) or the one that ships with ora, over the
	// default rules as the base version.
	base, err := motor.BaseFromEnv(os.Getenv)
	if err != nil {
		log.Fatalf("api: %v", err)
	}
	golden, err := motor.GoldenFromEnv(context.Background(), os.Getenv, s3.NewFromConfig(cfg))
	if err != nil {
		log.Fatalf("api: golden set: %v", err)
	}
	// With the Bedrock reasoner the gate replays the set through it, answered
	// from the responses recorded beside the set (its recordings/ folder):
	// nothing reaches Bedrock, and a request nobody recorded fails its wave.
	// The MCP servers' tool lists come from beside the recordings too.
	var recordings bedrock.Recordings = bedrock.DirRecordings(os.TempDir())
	var mcpTools []byte
	if bucket := os.Getenv(motor.EnvGoldenBucket); bucket != "" {
		objects := motor.ObjectRecordings{Objects: orient.S3{Client: s3.NewFromConfig(cfg), Bucket: bucket},
			Prefix: os.Getenv(motor.EnvGoldenPrefix) + motor.RecordingsFolder}
		if mcpTools, err = objects.MCPTools(context.Background()); err != nil {
			log.Fatalf("api: gate: %v", err)
		}
		recordings = objects
	}
	// A model's MCP tool call is answered from the tool results recorded
	// beside them too.
	player := &bedrock.Replayer{Recordings: recordings}
	replayer := bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) { o.HTTPClient = player })
	build, err := motor.ReplayBuildFromEnv(os.Getenv, bedrock.New(replayer), mcpTools, player)
	if err != nil {
		log.Fatalf("api: gate: %v", err)
	}
	motors := motor.NewRegistry(ledger, base, motor.GoldenGate(golden, func(o *motor.GateOptions) { o.Build = build }),
		func(o *motor.Options) { o.Models = motor.ModelsFromEnv(os.Getenv) })
	ops := operate.New(ledger, func(o *operate.Options) {
		o.Resumer = registering{sfn.New(states, machine), secrets}
		o.Metrics = awslambda.Metrics
		o.Redriver = redriver // POST /waves/{id}/redrive: RedriveExecution
		o.AppVersion = os.Getenv(motor.EnvAppVersion)
		if bucket := os.Getenv("ORA_JOBS_BUCKET"); bucket != "" {
			o.JobsStaged = orient.S3Staged{Client: s3.NewFromConfig(cfg), Bucket: bucket}.Staged
		}
		o.Motor = func(ctx context.Context) (operate.Motor, error) {
			b, prev, since, err := motors.Current(ctx)
			return motor.OperatorMotor(b, prev, since), err
		}
		o.Promote = func(ctx context.Context, version, reason, by string) error { // a motor incident's resume
			_, err := motors.Promote(ctx, version, reason, by)
			return err
		}
	})
	h := New(ledger, waves, rev, cmp.Or(os.Getenv("ORA_RESOURCE_SERVER"), DefaultResourceServer), nil,
		func(s *httpapi.Server) {
			s.Secrets = secrets
			s.Learned = motor.Learner{Patterns: ops, Registry: motors}
			s.Operator, s.Motor, s.Recorded, s.Orientation = ops, motors, motor.Recorder{Ledger: ledger}, orient.NewService(ledger, env, orient.ObjectsFromEnv(os.Getenv, s3.NewFromConfig(cfg)), func(o *orient.Options) { o.Metrics = telemetry.WithPrefix(awslambda.Metrics) })
		})
	// Payload 2.0 from the HTTP API; payload 1.0 and the TOKEN authorizer's
	// calls from the REST API profile (ora:api=rest), whose bearer tokens
	// are HS256 JWTs signed with the key in ORA_API_TOKEN_SECRET_ARN.
	var auth *apigw.Authorizer
	if arn := os.Getenv("ORA_API_TOKEN_SECRET_ARN"); arn != "" {
		key := &apigw.SecretKey{Client: secretsmanager.NewFromConfig(cfg), ARN: arn, TTL: time.Minute}
		auth = &apigw.Authorizer{Key: registeredKey(key.Key, secrets)}
	}
	awslambda.Start("api", apigw.Dispatch(h.Handle, auth))
}
