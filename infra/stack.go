package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3notifications"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/ora-runtime/ora/shared/connect"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/statemachines"
)

// sizing is a function's memory (MB) and timeout (seconds).
type sizing struct{ memory, timeout float64 }

// sizes holds the functions that differ from the default of 256 MB and 30 s.
// The ones an Express child runs are short enough for the child's worst case
// (every attempt at its full timeout, plus the retries' waits) to stay under
// 4.5 minutes (statemachines' TestExpressBudgets); the state's TimeoutSeconds
// is the function's timeout plus a few seconds, so the function's own timeout
// ends a run first (TestLambdaTimeoutsMatchTheASL). The reason function is
// the tight one: 80 s holds a Converse call with its SDK retries and a
// fallback model; one retry fits in its child, and a longer wait (a throttled
// model) is the operator's backoff in the Standard parent.
var sizes = map[string]sizing{
	"reason":             {512, 80},
	"act":                {256, 75},
	"compile":            {512, 12},
	"fetch":              {256, 60},
	"flag-review":        {256, 6},
	"validate-technical": {256, 10},
	"validate-safety":    {256, 10},
	"validate-intent":    {256, 25},
	"witness":            {256, 10},
	"record":             {256, 10},
	"api":                {256, 15},
}

// BodyPrefix is the bucket prefix of ledger entry bodies stored by reference:
// the kept ones under ora.BodyPrefix and the expiring ones under
// ora.ExpiringBodyPrefix both begin with it.
const BodyPrefix = "ledger/bodies/"

// The functions the state machine calls, and the ones that start waves.

var observers = []string{"observe-webhook", "observe-schedule", "observe-object", "observe-table", "observe-event"}

// OraStack is the deployed stack and the parts its tests look at.
type OraStack struct {
	awscdk.Stack
	Functions    map[string]awslambda.Function
	Ledger       awsdynamodb.Table
	StateMachine awsstepfunctions.StateMachine
	// JobsBucket holds each wave's observation jobs (Plan writes, the
	// Fetch Map reads).
	JobsBucket awss3.Bucket
	// DLQs are the dead-letter queues, for the dashboard.
	DLQs []awssqs.Queue
}

// FunctionNames lists the functions/* folders under root, sorted.
func FunctionNames(root string) []string {
	entries, err := os.ReadDir(filepath.Join(root, "functions"))
	if err != nil {
		panic(fmt.Sprintf("read functions/: %v", err))
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// NewOraStack builds the whole of ora on AWS.
func NewOraStack(scope constructs.Construct, id string, cfg Config) *OraStack {
	stack := awscdk.NewStack(scope, jsii.String(id), &awscdk.StackProps{
		Description: jsii.String("ora: the Observer-Reasoner-Actor runtime"),
	})
	s := &OraStack{Stack: stack, Functions: map[string]awslambda.Function{}}
	retention := retentionDays(cfg.LogRetentionDays)

	// Keys and storage.
	key := awskms.NewKey(stack, jsii.String("Key"), &awskms.KeyProps{
		Description:       jsii.String("ora: encrypts the escalation topic and the dead-letter queues"),
		EnableKeyRotation: jsii.Bool(true),
	})
	removal := awscdk.RemovalPolicy_RETAIN
	ledger := awsdynamodb.NewTable(stack, jsii.String("Ledger"), &awsdynamodb.TableProps{
		PartitionKey:                     &awsdynamodb.Attribute{Name: jsii.String("PK"), Type: awsdynamodb.AttributeType_STRING},
		SortKey:                          &awsdynamodb.Attribute{Name: jsii.String("SK"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:                      awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: jsii.Bool(true)},
		TimeToLiveAttribute:              jsii.String("ttl"),
		Stream:                           awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES,
		Encryption:                       awsdynamodb.TableEncryption_AWS_MANAGED,
		DeletionProtection:               jsii.Bool(cfg.DeletionProtection),
		RemovalPolicy:                    removal,
		WarmThroughput:                   warmThroughput(cfg.WarmThroughput),
	})
	for _, g := range ledgerIndexes {
		ledger.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:      jsii.String(g.name),
			PartitionKey:   &awsdynamodb.Attribute{Name: jsii.String(g.pk), Type: awsdynamodb.AttributeType_STRING},
			SortKey:        &awsdynamodb.Attribute{Name: jsii.String(g.sk), Type: awsdynamodb.AttributeType_STRING},
			ProjectionType: awsdynamodb.ProjectionType_ALL,
			WarmThroughput: warmThroughput(cfg.WarmThroughput),
		})
	}
	s.Ledger = ledger
	idem := awsdynamodb.NewTable(stack, jsii.String("Idempotency"), &awsdynamodb.TableProps{
		PartitionKey:                     &awsdynamodb.Attribute{Name: jsii.String("id"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:                      awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: jsii.Bool(true)},
		TimeToLiveAttribute:              jsii.String("expiration"),
		Encryption:                       awsdynamodb.TableEncryption_AWS_MANAGED,
		DeletionProtection:               jsii.Bool(cfg.DeletionProtection),
		RemovalPolicy:                    removal,
	})

	accessLogs := awss3.NewBucket(stack, jsii.String("AccessLogs"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_PREFERRED,
		LifecycleRules:    &[]*awss3.LifecycleRule{{Expiration: awscdk.Duration_Days(jsii.Number(90))}},
		RemovalPolicy:     removal,
	})
	cdknag.NagSuppressions_AddResourceSuppressions(accessLogs, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-S1"),
		Reason: jsii.String("This is the access-log bucket itself; logging it into itself would loop."),
	}}, nil)
	bucket := awss3.NewBucket(stack, jsii.String("Objects"), &awss3.BucketProps{
		BlockPublicAccess:      awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:             jsii.Bool(true),
		Encryption:             awss3.BucketEncryption_S3_MANAGED,
		Versioned:              jsii.Bool(true),
		ServerAccessLogsBucket: accessLogs,
		ServerAccessLogsPrefix: jsii.String("objects/"),
		// Bodies of ledger entries that expire (facts, packets) go when
		// their items do: ora.ExpiringBodyDays after their last write, a day
		// after the longest such entry's TTL; the bucket is versioned, so
		// the version the expiration makes noncurrent goes a day later.
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:                          jsii.String("ExpiringLedgerBodies"),
			Prefix:                      jsii.String(ora.ExpiringBodyPrefix),
			Expiration:                  awscdk.Duration_Days(jsii.Number(ora.ExpiringBodyDays)),
			NoncurrentVersionExpiration: awscdk.Duration_Days(jsii.Number(1)),
		}},
		RemovalPolicy: removal,
	})

	// Each wave's observation jobs, written by Plan and read by the "Fetch
	// observations" Distributed Map's ItemReader; a wave's jobs are of no
	// use once it has ended, so they expire.
	jobsBucket := awss3.NewBucket(stack, jsii.String("Jobs"), &awss3.BucketProps{
		BlockPublicAccess:      awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:             jsii.Bool(true),
		Encryption:             awss3.BucketEncryption_S3_MANAGED,
		ServerAccessLogsBucket: accessLogs,
		ServerAccessLogsPrefix: jsii.String("jobs/"),
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Expiration:                          awscdk.Duration_Days(jsii.Number(cfg.Retention.JobsDays)),
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1)),
		}},
		RemovalPolicy: removal,
	})
	s.JobsBucket = jobsBucket

	topic := awssns.NewTopic(stack, jsii.String("Escalations"), &awssns.TopicProps{
		DisplayName: jsii.String("ora escalations"),
		MasterKey:   key,
		EnforceSSL:  jsii.Bool(true),
	})
	subscribe(stack, "Escalations", topic, cfg.EscalationSubscriptions)
	// Alarms have a topic of their own: whoever answers escalations (an
	// approver) is rarely who answers a throttled table (an operator).
	alarmTopic := awssns.NewTopic(stack, jsii.String("Alarms"), &awssns.TopicProps{
		DisplayName: jsii.String("ora alarms"),
		MasterKey:   key,
		EnforceSSL:  jsii.Bool(true),
	})
	subscribe(stack, "Alarms", alarmTopic, cfg.AlarmSubscriptions)
	secret := awssecretsmanager.NewSecret(stack, jsii.String("WebhookSecrets"), &awssecretsmanager.SecretProps{
		Description: jsii.String("ora webhook sources: a JSON array of {name, type, secret, header, hash}; starts empty (every webhook answers 404) until you add yours"),
		// Not a secret: the empty list the operator replaces with the real sources.
		SecretStringValue: awscdk.SecretValue_UnsafePlainText(jsii.String("[]")),
	})
	cdknag.NagSuppressions_AddResourceSuppressions(secret, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-SMG4"),
		Reason: jsii.String("Webhook signing secrets are issued by the providers (GitHub, Slack, Stripe); they are rotated there and pasted here, so a rotation Lambda cannot rotate them."),
	}}, nil)

	dlq := func(name string) awssqs.Queue {
		q := awssqs.NewQueue(stack, jsii.String(name), &awssqs.QueueProps{
			Encryption:          awssqs.QueueEncryption_KMS,
			EncryptionMasterKey: key,
			EnforceSSL:          jsii.Bool(true),
			RetentionPeriod:     awscdk.Duration_Days(jsii.Number(14)),
		})
		cdknag.NagSuppressions_AddResourceSuppressions(q, &[]*cdknag.NagPackSuppression{{
			Id:     jsii.String("AwsSolutions-SQS3"),
			Reason: jsii.String("This queue is itself a dead-letter queue; its messages are inspected and redriven by hand."),
		}}, nil)
		s.DLQs = append(s.DLQs, q)
		return q
	}

	// The state machine's name and ARN are fixed up front, so functions can
	// start executions without a dependency cycle (the definition names them).
	smName := awscdk.Fn_Join(jsii.String("-"), &[]*string{stack.StackName(), jsii.String("wave")})
	smArn := stack.FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("states"), Resource: jsii.String("stateMachine"),
		ResourceName: smName, ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
	execArns := stack.FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("states"), Resource: jsii.String("execution"),
		ResourceName: awscdk.Fn_Join(jsii.String(""), &[]*string{smName, jsii.String(":*")}), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})

	// One function per functions/* folder, from `make lambdas`.
	// Each function gets the ledger table and only the other names it reads
	// (functions/<name>/main.go); a test checks the two agree.
	signing := awssecretsmanager.NewSecret(stack, jsii.String("ActionSigningSecret"), &awssecretsmanager.SecretProps{
		Description:          jsii.String("ora: the HMAC key http.request actions sign their bodies with (header X-Ora-Signature)"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{PasswordLength: jsii.Number(48), ExcludePunctuation: jsii.Bool(true)},
	})
	cdknag.NagSuppressions_AddResourceSuppressions(signing, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-SMG4"),
		Reason: jsii.String("Receivers of signed requests hold a copy of this key; it is rotated together with them, by hand, not by a rotation Lambda."),
	}}, nil)
	actConfig, err := json.Marshal(cfg.Actions)
	if err != nil {
		panic(fmt.Sprintf("context ora:actions: %v", err))
	}
	// One secret per connection: IAM, CloudTrail and rotation then work per
	// credential, and the act function is granted exactly these.
	var connSecrets []awssecretsmanager.Secret
	conns := make([]connect.Config, len(cfg.Connections))
	for i, cn := range cfg.Connections {
		s := awssecretsmanager.NewSecret(stack, jsii.String("Connection"+pascal(cn.Name)+"Secret"), &awssecretsmanager.SecretProps{
			Description: jsii.String("ora connection " + cn.Name + " (" + cn.Auth.Kind + "): put its credential here as the secret's string"),
		})
		cdknag.NagSuppressions_AddResourceSuppressions(s, &[]*cdknag.NagPackSuppression{{
			Id:     jsii.String("AwsSolutions-SMG4"),
			Reason: jsii.String("A connection's credential is issued by the API's provider (a token, key or client secret); it is rotated there and pasted here."),
		}}, nil)
		connSecrets = append(connSecrets, s)
		conns[i] = cn
		conns[i].SecretARN = *s.SecretArn()
	}
	connConfig, err := json.Marshal(conns)
	if err != nil {
		panic(fmt.Sprintf("context ora:connections: %v", err))
	}
	functions := []byte("{}")
	if len(cfg.Functions) > 0 {
		if functions, err = json.Marshal(cfg.Functions); err != nil {
			panic(fmt.Sprintf("context ora:functions: %v", err))
		}
	}
	timeout := jsii.String(fmt.Sprint(cfg.EscalationTimeoutSeconds))
	appVersion, err := cfg.AppVersionOf()
	if err != nil {
		panic(fmt.Sprintf("context ora:appVersion: %v", err))
	}
	observerEnv := map[string]*string{"ORA_STATE_MACHINE_ARN": smArn, "ORA_ESCALATION_TIMEOUT_SECONDS": timeout}
	user := userSourcesOf(stack) // ora:tables, ora:buckets, ora:eventRules (sources_user.go)
	extraEnv := map[string]map[string]*string{
		"observe-webhook": {"ORA_STATE_MACHINE_ARN": smArn, "ORA_ESCALATION_TIMEOUT_SECONDS": timeout,
			"ORA_SOURCES_SECRET_ARN": secret.SecretArn(),
			// A signal-received entry holds the body twice (payload and raw);
			// one over DynamoDB's 400 KB item limit keeps its body in the
			// bucket by reference (BodyPrefix), so 1 MiB webhooks are taken.
			"ORA_MAX_BODY_BYTES": jsii.String("1048576")},
		"observe-schedule": observerEnv,
		"observe-object":   observerEnv,
		"observe-table":    {"ORA_STATE_MACHINE_ARN": smArn, "ORA_ESCALATION_TIMEOUT_SECONDS": timeout, "ORA_TABLES": user.tablesEnv()},
		"observe-event":    observerEnv,
		"outbox-sweep":     observerEnv,
		"reason": {"ORA_REASONER": jsii.String(cfg.Reasoner), "ORA_BEDROCK_MODEL_IDS": jsii.String(strings.Join(cfg.BedrockModelIDs, ",")), "ORA_APP_VERSION": jsii.String(appVersion), "ORA_ACT_CONFIG": jsii.String(string(actConfig)), "ORA_TOPIC_ARN": topic.TopicArn(),
			// the connections' names, for the model's catalogue (their secrets stay with act)
			connect.EnvConnections: jsii.String(string(connConfig)),
			// the functions act runs, for the model's catalogue (function.invoke)
			"ORA_FUNCTIONS": jsii.String(string(functions))},
		"validate-intent": {"ORA_REASONER": jsii.String(cfg.Reasoner), "ORA_BEDROCK_MODEL_IDS": jsii.String(strings.Join(cfg.BedrockModelIDs, ","))},
		"escalate":        {"ORA_TOPIC_ARN": topic.TopicArn()},
		"act": {"ORA_IDEMPOTENCY_TABLE": idem.TableName(), "ORA_TOPIC_ARN": topic.TopicArn(), "ORA_BUCKET": bucket.BucketName(),
			"ORA_ACT_CONFIG": jsii.String(string(actConfig)), "ORA_SIGNING_SECRET_ARN": signing.SecretArn(),
			connect.EnvConnections: jsii.String(string(connConfig)),
			"ORA_FUNCTIONS":        jsii.String(string(functions))},
		"validate-technical": {"ORA_BUCKET": bucket.BucketName()},
		// Transient failures are retried after a backoff before a wave pauses.
		"operate": {"ORA_AUTO_RESUME_TRANSIENT": jsii.String("true"), "ORA_APP_VERSION": jsii.String(appVersion)},
		"plan": {"ORA_JOBS_BUCKET": jobsBucket.BucketName(),
			// Fan-outs up to this many jobs run inline in the fetch child.
			"ORA_INLINE_FETCH_MAX_JOBS": jsii.String(fmt.Sprint(cfg.InlineFetchMaxJobs))},
		"api": {"ORA_STATE_MACHINE_ARN": smArn, "ORA_RESOURCE_SERVER": jsii.String("ora"), "ORA_APP_VERSION": jsii.String(appVersion),
			"ORA_JOBS_BUCKET": jobsBucket.BucketName(),
			// Proposed motors may name only the models the reason function may invoke.
			"ORA_BEDROCK_MODEL_IDS": jsii.String(strings.Join(cfg.BedrockModelIDs, ","))},
	}
	if len(cfg.MCPServers) > 0 {
		// The reasoner offers the servers' read-only tools; the actor's
		// mcp.call calls the tools each server's act_tools allows.
		servers, err := json.Marshal(cfg.MCPServers)
		if err != nil {
			panic(fmt.Sprintf("context ora:mcpServers: %v", err))
		}
		for _, name := range []string{"reason", "act"} {
			extraEnv[name][mcp.EnvServers] = jsii.String(string(servers))
		}
	}
	// Coalescing (off unless ora:coalesceWindowMs is set): every observer
	// claims entity windows in the ledger table and the first signal's
	// observer waits out the window before it starts the one wave.
	if cfg.CoalesceWindowMs > 0 {
		w := jsii.String(fmt.Sprint(cfg.CoalesceWindowMs))
		for _, name := range []string{"observe-webhook", "observe-schedule", "observe-object", "observe-table", "observe-event", "outbox-sweep"} {
			extraEnv[name] = maps.Clone(extraEnv[name])
			extraEnv[name]["ORA_COALESCE_WINDOW_MS"] = w
			if len(cfg.CoalesceSources) > 0 {
				b, _ := json.Marshal(cfg.CoalesceSources)
				extraEnv[name]["ORA_COALESCE_SOURCES"] = jsii.String(string(b))
			}
		}
	}
	// Batching (off unless ora:batchWindowMs is set; the reason function
	// batches with the Bedrock reasoner only): it joins each wave to its
	// source family's batch in the ledger table, and the wave's Standard
	// execution waits between looks.
	if cfg.BatchWindowMs > 0 {
		extraEnv["reason"] = maps.Clone(extraEnv["reason"])
		if extraEnv["reason"] == nil {
			extraEnv["reason"] = map[string]*string{}
		}
		extraEnv["reason"]["ORA_BATCH_WINDOW_MS"] = jsii.String(fmt.Sprint(cfg.BatchWindowMs))
	}
	// Every function that plans, fetches, compiles or judges orientation
	// proposals reads the same orientation settings, so they agree on the
	// source families (a proposal naming another is refused).
	for k, v := range cfg.Orientation.env() {
		for _, name := range []string{"plan", "fetch", "compile", "reason", "api"} {
			if extraEnv[name] == nil {
				extraEnv[name] = map[string]*string{}
			}
			extraEnv[name][k] = jsii.String(v)
		}
	}
	asyncDLQ := dlq("ObserverDLQ")
	for _, name := range FunctionNames(cfg.Root) {
		size, ok := sizes[name]
		if !ok {
			size = sizing{256, 30}
		}
		logs := awslogs.NewLogGroup(stack, jsii.String(name+"-logs"), &awslogs.LogGroupProps{
			Retention:     retention,
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		})
		props := &awslambda.FunctionProps{
			Code:         awslambda.Code_FromAsset(jsii.String(filepath.Join(cfg.Root, "build", name)), nil),
			Handler:      jsii.String("bootstrap"),
			Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
			Architecture: awslambda.Architecture_ARM_64(),
			MemorySize:   jsii.Number(size.memory),
			Timeout:      awscdk.Duration_Seconds(jsii.Number(size.timeout)),
			Tracing:      awslambda.Tracing_ACTIVE,
			LogGroup:     logs,
			Environment:  environment(ledger.TableName(), bucket.BucketName(), cfg.Retention.ledger(), extraEnv[name]),
			Description:  jsii.String("ora " + name),

			// JSON lines (shared/telemetry); Lambda passes the application
			// level to the function as AWS_LAMBDA_LOG_LEVEL.
			LoggingFormat:         awslambda.LoggingFormat_JSON,
			ApplicationLogLevelV2: awslambda.ApplicationLogLevel_INFO,
			SystemLogLevelV2:      awslambda.SystemLogLevel_WARN,
		}
		if name == "observe-object" || name == "observe-schedule" {
			// Invoked asynchronously (S3 notifications, Scheduler): failed
			// events land in a dead-letter queue instead of vanishing.
			props.DeadLetterQueue = asyncDLQ
			props.RetryAttempts = jsii.Number(2)
		}
		fn := awslambda.NewFunction(stack, jsii.String(name), props)
		s.Functions[name] = fn
		if props.DeadLetterQueue != nil {
			// The queue is KMS-encrypted: sending needs the key as well.
			asyncDLQ.GrantSendMessages(fn)
		}
		awscloudwatch.NewAlarm(stack, jsii.String(name+"-errors"), &awscloudwatch.AlarmProps{
			Metric:            unexpectedErrors(stack, name, fn, logs),
			Threshold:         jsii.Number(1),
			EvaluationPeriods: jsii.Number(1),
			AlarmDescription:  jsii.String("ora " + name + ": unexpected invocation errors (not " + strings.Join(ExpectedErrors, ", ") + ")"),
			TreatMissingData:  awscloudwatch.TreatMissingData_NOT_BREACHING,
		}).AddAlarmAction(awscloudwatchactions.NewSnsAction(alarmTopic))
		awscloudwatch.NewAlarm(stack, jsii.String(name+"-throttles"), &awscloudwatch.AlarmProps{
			Metric:            fn.MetricThrottles(&awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5))}),
			Threshold:         jsii.Number(1),
			EvaluationPeriods: jsii.Number(1),
			AlarmDescription:  jsii.String("ora " + name + ": throttles"),
			TreatMissingData:  awscloudwatch.TreatMissingData_NOT_BREACHING,
		}).AddAlarmAction(awscloudwatchactions.NewSnsAction(alarmTopic))
	}
	fn := func(name string) awslambda.Function {
		f, ok := s.Functions[name]
		if !ok {
			panic("no functions/" + name + " folder")
		}
		return f
	}

	// Grants: each function gets only what it uses.
	for _, name := range observers {
		ledger.GrantReadWriteData(fn(name))
		fn(name).AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("states:StartExecution"),
			Resources: &[]*string{smArn},
		}))
	}
	ledger.GrantReadData(fn("outbox-sweep"))
	// The sweep keeps its position in the ledger: it may put items in that
	// one partition and nowhere else.
	fn("outbox-sweep").AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("dynamodb:PutItem"),
		Resources: &[]*string{ledger.TableArn()},
		Conditions: &map[string]any{"ForAllValues:StringEquals": map[string]any{
			"dynamodb:LeadingKeys": []string{observe.SignalKeyPrefix + observe.SweepPositionID()},
		}},
	}))
	fn("outbox-sweep").AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("states:StartExecution"),
		Resources: &[]*string{smArn},
	}))
	fn("outbox-sweep").AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("states:DescribeExecution"),
		Resources: &[]*string{execArns},
	}))
	secret.GrantRead(fn("observe-webhook"), nil)
	signing.GrantRead(fn("act"), nil)
	for _, s := range connSecrets {
		s.GrantRead(fn("act"), nil)
	}
	for _, name := range []string{"plan", "fetch", "compile", "reason", "flag-review", "escalate", "act",
		"validate-technical", "validate-safety", "validate-intent", "witness", "record", "operate", "api"} {
		ledger.GrantReadWriteData(fn(name))
	}
	jobsBucket.GrantPut(fn("plan"), jsii.String("waves/*"))
	if b := cfg.Orientation.ObjectsBucket; b != "" {
		objects := awss3.Bucket_FromBucketName(stack, jsii.String("OrientationObjects"), jsii.String(b))
		objects.GrantRead(fn("plan"), nil)
		objects.GrantRead(fn("fetch"), nil)
	}
	// The deployment's golden set: the api function reads it at start.
	if g := cfg.Golden; g.Bucket != "" {
		golden := awss3.Bucket_FromBucketName(stack, jsii.String("GoldenSet"), jsii.String(g.Bucket))
		golden.GrantRead(fn("api"), jsii.String(g.Prefix+"*"))
		fn("api").AddEnvironment(jsii.String("ORA_GOLDEN_BUCKET"), jsii.String(g.Bucket), nil)
		fn("api").AddEnvironment(jsii.String("ORA_GOLDEN_PREFIX"), jsii.String(g.Prefix), nil)
		// The gate replays the set through the reason function's reasoner,
		// answered from the recordings under the prefix: the same settings
		// and catalogue make the same requests.
		fn("api").AddEnvironment(jsii.String("ORA_REASONER"), jsii.String(cfg.Reasoner), nil)
		fn("api").AddEnvironment(jsii.String("ORA_ACT_CONFIG"), jsii.String(string(actConfig)), nil)
		fn("api").AddEnvironment(jsii.String(connect.EnvConnections), jsii.String(string(connConfig)), nil)
		fn("api").AddEnvironment(jsii.String("ORA_FUNCTIONS"), jsii.String(string(functions)), nil)
		// Recording from real waves: the reason function writes (never
		// overwrites: If-None-Match) and reads under recordings/ only; it
		// lists that prefix only, so a missing recording is a 404, not a 403.
		if cfg.GoldenRecordRate > 0 {
			recordings := g.Prefix + "recordings/"
			fn("reason").AddEnvironment(jsii.String("ORA_GOLDEN_RECORD_RATE"), jsii.String(fmt.Sprint(cfg.GoldenRecordRate)), nil)
			fn("reason").AddEnvironment(jsii.String("ORA_GOLDEN_BUCKET"), jsii.String(g.Bucket), nil)
			fn("reason").AddEnvironment(jsii.String("ORA_GOLDEN_PREFIX"), jsii.String(g.Prefix), nil)
			fn("reason").AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Actions:   jsii.Strings("s3:PutObject", "s3:GetObject"),
				Resources: jsii.Strings(*golden.ArnForObjects(jsii.String(recordings + "*"))),
			}))
			fn("reason").AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Actions:    jsii.Strings("s3:ListBucket"),
				Resources:  &[]*string{golden.BucketArn()},
				Conditions: &map[string]any{"StringLike": map[string]any{"s3:prefix": []string{recordings + "*"}}},
			}))
		}
	}
	// A resume at Fetch observations heads the wave's jobs object (gone
	// after the retention's jobsDays: the wave re-plans); GrantRead includes
	// s3:ListBucket, without which S3 answers a missing key with 403.
	jobsBucket.GrantRead(fn("api"), jsii.String("waves/*"))
	// Entry bodies too large for a ledger item live in the bucket under
	// BodyPrefix: every function that writes the ledger may put and read
	// them there, outbox-sweep (which only reads it) may read them.
	for _, name := range FunctionNames(cfg.Root) {
		f := fn(name)
		if name == "outbox-sweep" {
			bucket.GrantRead(f, jsii.String(BodyPrefix+"*"))
			continue
		}
		bucket.GrantRead(f, jsii.String(BodyPrefix+"*"))
		bucket.GrantPut(f, jsii.String(BodyPrefix+"*"))
	}
	topic.GrantPublish(fn("escalate"))
	topic.GrantPublish(fn("act"))
	idem.GrantReadWriteData(fn("act"))
	if arns := cfg.FunctionARNs(); len(arns) > 0 {
		// function.invoke: exactly the configured functions (ora:functions).
		fn("act").AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("lambda:InvokeFunction"),
			Resources: jsii.Strings(arns...),
		}))
	}
	for _, prefix := range cfg.Actions.Object.AllowedPrefixes {
		bucket.GrantPut(fn("act"), jsii.String(prefix+"*"))
		bucket.GrantRead(fn("validate-technical"), jsii.String(prefix+"*"))
	}
	for _, name := range []string{"reason", "validate-intent"} { // validate-intent: the tier-3 intent judge
		fn(name).AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("bedrock:InvokeModel"),
			Resources: bedrockResources(stack, cfg.BedrockModelIDs),
		}))
		bedrockFirstUse(fn(name))
	}
	if cfg.GuardrailID != "" {
		// The guardrail, and only it: applied to the reason function's
		// Converse calls and by the safety validator.
		guardrail := stack.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("bedrock"), Resource: jsii.String("guardrail"),
			ResourceName: jsii.String(cfg.GuardrailID), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME,
		})
		for _, name := range []string{"reason", "validate-safety", "validate-intent"} {
			f := fn(name)
			f.AddEnvironment(jsii.String("ORA_GUARDRAIL_ID"), jsii.String(cfg.GuardrailID), nil)
			f.AddEnvironment(jsii.String("ORA_GUARDRAIL_VERSION"), jsii.String(cfg.GuardrailVersion), nil)
			f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Actions:   jsii.Strings("bedrock:ApplyGuardrail"),
				Resources: &[]*string{guardrail},
			}))
		}
	}
	fn("api").AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("states:DescribeExecution", "states:GetExecutionHistory"),
		Resources: &[]*string{execArns},
	}))
	grantRedrive(fn("api"), execArns)
	// The api settles escalations and resumes; escalate settles at once an
	// escalation run again after its human already answered.
	for _, name := range []string{"api", "escalate"} {
		fn(name).AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("states:SendTaskSuccess", "states:SendTaskFailure"),
			Resources: jsii.Strings("*"),
		}))
	}

	// The state machine: the very ASL file the embedded runtime runs.
	def, err := os.ReadFile(filepath.Join(cfg.Root, "statemachines", "ora.asl.json"))
	if err != nil {
		panic(fmt.Sprintf("read the state machine definition: %v", err))
	}
	// Tasks invoke each function's published version, not $LATEST: an
	// execution keeps the definition it started with, so a wave that waited a
	// day for a human resumes on the code it began with.
	functionSubs := func(file string, def []byte, subs map[string]*string) {
		for _, p := range statemachines.Placeholders(def) {
			for name, f := range s.Functions {
				if statemachines.FunctionPlaceholder(name) == p {
					subs[p] = f.CurrentVersion().FunctionArn()
				}
			}
			if subs[p] == nil {
				panic("no substitution for ${" + p + "} in " + file)
			}
		}
	}
	// The Express children run the wave's automated segments; the Standard
	// parent starts each with states:startExecution.sync:2 and waits for it.
	subs := map[string]*string{}
	for p, v := range statemachines.Integrations(*stack.Partition()) {
		subs[p] = jsii.String(v)
	}
	var children []awsstepfunctions.StateMachine
	for _, ch := range statemachines.Children {
		cdef, err := os.ReadFile(filepath.Join(cfg.Root, "statemachines", ch.Name+".asl.json"))
		if err != nil {
			panic(fmt.Sprintf("read the child state machine definition: %v", err))
		}
		csubs := map[string]*string{}
		functionSubs(ch.Name+".asl.json", cdef, csubs)
		id := strings.ToUpper(ch.Name[:1]) + ch.Name[1:]
		name := awscdk.Fn_Join(jsii.String("-"), &[]*string{stack.StackName(), jsii.String(ch.Name)})
		// Express keeps no history of its own: the log group (every event,
		// with its input and output) is where a child's run is read. A
		// child's input is the wave's state, which holds no task token and
		// no secret (statemachines' TestChildrenCarryNoTaskToken): the
		// escalation's and the pause's tokens go only to the parent's
		// waitForTaskToken payloads, and the parent logs without data.
		logs := awslogs.NewLogGroup(stack, jsii.String(id+"ChildLogs"), &awslogs.LogGroupProps{
			LogGroupName:  awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("/aws/vendedlogs/states/"), name}),
			Retention:     retention,
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		})
		child := awsstepfunctions.NewStateMachine(stack, jsii.String(id+"Child"), &awsstepfunctions.StateMachineProps{
			StateMachineName:        name,
			StateMachineType:        awsstepfunctions.StateMachineType_EXPRESS,
			DefinitionBody:          awsstepfunctions.DefinitionBody_FromString(jsii.String(string(cdef))),
			DefinitionSubstitutions: &csubs,
			TracingEnabled:          jsii.Bool(true),
			Logs: &awsstepfunctions.LogOptions{
				Destination:          logs,
				Level:                awsstepfunctions.LogLevel_ALL,
				IncludeExecutionData: jsii.Bool(true),
			},
		})
		for p := range csubs {
			for fname, f := range s.Functions {
				if statemachines.FunctionPlaceholder(fname) == p {
					f.GrantInvoke(child)
				}
			}
		}
		// The parent starts the child's published version, not its latest
		// definition: a wave that waits (a human, a pause) resumes on the
		// child it began with. Each definition change publishes a new
		// version (its revision id changes); old versions are retained, as
		// running waves may still start them.
		// LocalStack's free plan (the REST API profile) has no state machine
		// versions: there the parent starts the child's latest definition.
		if cfg.API == APIREST {
			subs[ch.Placeholder] = child.StateMachineArn()
			children = append(children, child)
			continue
		}
		version := awsstepfunctions.NewCfnStateMachineVersion(stack, jsii.String(id+"ChildVersion"), &awsstepfunctions.CfnStateMachineVersionProps{
			StateMachineArn:        child.StateMachineArn(),
			StateMachineRevisionId: child.Node().DefaultChild().(awsstepfunctions.CfnStateMachine).AttrStateMachineRevisionId(),
			Description:            jsii.String("ora: the " + ch.Name + " child as the parent's definition starts it"),
		})
		version.ApplyRemovalPolicy(awscdk.RemovalPolicy_RETAIN, &awscdk.RemovalPolicyOptions{ApplyToUpdateReplacePolicy: jsii.Bool(true)})
		subs[ch.Placeholder] = version.AttrArn()
		children = append(children, child)
	}
	functionSubs("ora.asl.json", def, subs)
	smLogs := awslogs.NewLogGroup(stack, jsii.String("WaveLogs"), &awslogs.LogGroupProps{
		LogGroupName:  awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("/aws/vendedlogs/states/"), smName}),
		Retention:     retention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	sm := awsstepfunctions.NewStateMachine(stack, jsii.String("Wave"), &awsstepfunctions.StateMachineProps{
		StateMachineName:        smName,
		StateMachineType:        awsstepfunctions.StateMachineType_STANDARD,
		DefinitionBody:          awsstepfunctions.DefinitionBody_FromString(jsii.String(string(def))),
		DefinitionSubstitutions: &subs,
		TracingEnabled:          jsii.Bool(true),
		Logs: &awsstepfunctions.LogOptions{
			Destination: smLogs,
			Level:       awsstepfunctions.LogLevel_ALL,
			// Execution data would put the escalation's task token (the
			// credential that settles a wave) into the logs.
			IncludeExecutionData: jsii.Bool(false),
		},
	})
	s.StateMachine = sm
	// .sync:2 starts the child, follows it through an EventBridge rule Step
	// Functions manages, and stops it when the parent task is stopped.
	for _, child := range children {
		child.GrantStartExecution(sm)
		sm.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("states:StartExecution"),
			Resources: &[]*string{awscdk.Fn_Join(jsii.String(""), &[]*string{child.StateMachineArn(), jsii.String(":*")})},
		}))
		sm.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("states:DescribeExecution", "states:StopExecution"),
			Resources: &[]*string{
				stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("states"), Resource: jsii.String("execution"),
					ResourceName: awscdk.Fn_Join(jsii.String(""), &[]*string{child.StateMachineName(), jsii.String(":*")}), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME}),
				stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("states"), Resource: jsii.String("express"),
					ResourceName: awscdk.Fn_Join(jsii.String(""), &[]*string{child.StateMachineName(), jsii.String(":*")}), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME}),
			},
		}))
	}
	sm.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("events:PutTargets", "events:PutRule", "events:DescribeRule"),
		Resources: &[]*string{stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("events"), Resource: jsii.String("rule"),
			ResourceName: jsii.String("StepFunctionsGetEventsForStepFunctionsExecutionRule"), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME})},
	}))
	// The "Fetch observations" Distributed Map: its ItemReader reads the
	// jobs Plan wrote, and the Map Run starts, watches and stops its child
	// executions (ARNs .../execution:NAME/LABEL:ID).
	jobsBucket.GrantRead(sm, jsii.String("waves/*"))
	sm.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("states:StartExecution"),
		Resources: &[]*string{smArn},
	}))
	sm.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("states:DescribeExecution", "states:StopExecution"),
		Resources: &[]*string{stack.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("states"), Resource: jsii.String("execution"),
			ResourceName: awscdk.Fn_Join(jsii.String(""), &[]*string{smName, jsii.String("/*")}), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
		})},
	}))
	for p := range subs {
		for name, f := range s.Functions {
			if statemachines.FunctionPlaceholder(name) == p {
				f.GrantInvoke(sm)
			}
		}
	}
	awscloudwatch.NewAlarm(stack, jsii.String("WaveFailures"), &awscloudwatch.AlarmProps{
		Metric:            sm.MetricFailed(&awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5))}),
		Threshold:         jsii.Number(1),
		EvaluationPeriods: jsii.Number(1),
		AlarmDescription:  jsii.String("ora: failed waves"),
		TreatMissingData:  awscloudwatch.TreatMissingData_NOT_BREACHING,
	}).AddAlarmAction(awscloudwatchactions.NewSnsAction(alarmTopic))

	// Triggers: S3 notifications, the ledger's stream, schedules.
	bucket.AddEventNotification(awss3.EventType_OBJECT_CREATED, awss3notifications.NewLambdaDestination(fn("observe-object")), &awss3.NotificationKeyFilter{Prefix: jsii.String("inbox/")})
	bucket.AddEventNotification(awss3.EventType_OBJECT_REMOVED, awss3notifications.NewLambdaDestination(fn("observe-object")), &awss3.NotificationKeyFilter{Prefix: jsii.String("inbox/")})
	streamDLQ := dlq("StreamDLQ")
	fn("observe-table").AddEventSource(awslambdaeventsources.NewDynamoEventSource(ledger, &awslambdaeventsources.DynamoEventSourceProps{
		StartingPosition:        awslambda.StartingPosition_LATEST,
		BatchSize:               jsii.Number(25),
		BisectBatchOnError:      jsii.Bool(true),
		RetryAttempts:           jsii.Number(5),
		MaxRecordAge:            awscdk.Duration_Hours(jsii.Number(24)),
		OnFailure:               awslambdaeventsources.NewSqsDlq(streamDLQ),
		ReportBatchItemFailures: jsii.Bool(true),
		Filters: &[]*map[string]interface{}{
			// Commitments only. Signal-received inserts are not delivered:
			// the observer that appended one starts its wave at once, so a
			// second start per signal from the stream (100 waves a second
			// would make 200 StartExecution calls a second, past Step
			// Functions' refill) is left out; the sweep below starts the
			// rare signal whose capture failed after its append.
			awslambda.FilterCriteria_Filter(&map[string]interface{}{
				"dynamodb": map[string]interface{}{"Keys": map[string]interface{}{dynamo.AttrPK: map[string]interface{}{"S": awslambda.FilterRule_BeginsWith(jsii.String(observe.CommitmentKeyPrefix))}}},
			}),
		},
	}))
	userDLQs := addUserSources(stack, user, key, fn, dlq)
	// The outbox: a sweep asks, for each signal recorded more than five
	// minutes ago since its last complete sweep and without a final verdict,
	// whether its wave exists, and starts only the ones without
	// (one StartExecution per signal in the common path: the capture's);
	// an alarm fires when it found any.
	awsevents.NewRule(stack, jsii.String("OutboxSweep"), &awsevents.RuleProps{
		Schedule: awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(5))),
		Targets:  &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(fn("outbox-sweep"), nil)},
	})
	awscloudwatch.NewAlarm(stack, jsii.String("WavelessSignals"), &awscloudwatch.AlarmProps{
		Metric: awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String("ora"), MetricName: jsii.String("WavelessSignals"),
			Statistic: jsii.String("Sum"), Period: awscdk.Duration_Minutes(jsii.Number(5))}),
		Threshold:         jsii.Number(1),
		EvaluationPeriods: jsii.Number(1),
		AlarmDescription:  jsii.String("ora: signals recorded without a wave (started by the outbox sweep)"),
		TreatMissingData:  awscloudwatch.TreatMissingData_NOT_BREACHING,
	}).AddAlarmAction(awscloudwatchactions.NewSnsAction(alarmTopic))
	scheduleDLQ := dlq("ScheduleDLQ")
	if len(cfg.Schedules) > 0 {
		role := awsiam.NewRole(stack, jsii.String("SchedulerRole"), &awsiam.RoleProps{
			AssumedBy:   awsiam.NewServicePrincipal(jsii.String("scheduler.amazonaws.com"), nil),
			Description: jsii.String("ora: lets EventBridge Scheduler invoke observe-schedule"),
		})
		fn("observe-schedule").GrantInvoke(role)
		scheduleDLQ.GrantSendMessages(role)
		for _, sc := range cfg.Schedules {
			if sc.Name == "" || sc.Expression == "" {
				panic("context ora:schedules: every schedule needs a name and an expression")
			}
			input := fmt.Sprintf(`{"job_name":%q,"schedule":%q}`, sc.Name, sc.Expression)
			var tz *string
			if sc.Timezone != "" {
				tz = jsii.String(sc.Timezone)
			}
			awsscheduler.NewCfnSchedule(stack, jsii.String("Schedule"+pascal(sc.Name)), &awsscheduler.CfnScheduleProps{
				Description:                jsii.String("ora schedule " + sc.Name),
				ScheduleExpression:         jsii.String(sc.Expression),
				ScheduleExpressionTimezone: tz,
				FlexibleTimeWindow:         &awsscheduler.CfnSchedule_FlexibleTimeWindowProperty{Mode: jsii.String("OFF")},
				Target: &awsscheduler.CfnSchedule_TargetProperty{
					Arn:              fn("observe-schedule").FunctionArn(),
					RoleArn:          role.RoleArn(),
					Input:            jsii.String(input),
					RetryPolicy:      &awsscheduler.CfnSchedule_RetryPolicyProperty{MaximumRetryAttempts: jsii.Number(5), MaximumEventAgeInSeconds: jsii.Number(3600)},
					DeadLetterConfig: &awsscheduler.CfnSchedule_DeadLetterConfigProperty{Arn: scheduleDLQ.QueueArn()},
				},
			})
		}
	}

	// The API: an HTTP API (webhooks open, each source verifies its
	// signature; the read and approval routes behind a JWT authorizer with
	// scopes), or in the REST API profile (ora:api=rest) a REST API with a
	// Lambda TOKEN authorizer (restAPI).
	var pool awscognito.UserPool
	var client awscognito.UserPoolClient
	var domain awscognito.UserPoolDomain
	var apiURL *string
	var api5xx awscloudwatch.IMetric
	if cfg.API == APIREST {
		var tokenKey awssecretsmanager.Secret
		apiURL, api5xx, tokenKey = restAPI(stack, fn("api"), fn("observe-webhook"), cfg.APIThrottles)
		awscdk.NewCfnOutput(stack, jsii.String("ApiTokenKeyArn"), &awscdk.CfnOutputProps{Value: tokenKey.SecretArn()})
	} else {
		// The HTTP API: webhooks open (each source verifies its signature), the
		// read and approval routes behind a JWT authorizer with scopes.
		apiLogs := awslogs.NewLogGroup(stack, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
			Retention:     retention,
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		})
		api := awsapigatewayv2.NewHttpApi(stack, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiProps{
			Description:        jsii.String("ora: webhooks, waves, approvals"),
			CreateDefaultStage: jsii.Bool(false),
		})
		stage := awsapigatewayv2.NewHttpStage(stack, jsii.String("ApiStage"), &awsapigatewayv2.HttpStageProps{
			HttpApi:    api,
			AutoDeploy: jsii.Bool(true),
			StageName:  jsii.String("$default"),
			Throttle:   &awsapigatewayv2.ThrottleSettings{RateLimit: jsii.Number(cfg.APIThrottles.Reads.Rate), BurstLimit: jsii.Number(cfg.APIThrottles.Reads.Burst)},
		})
		// The webhook route has limits of its own (ora:apiThrottles), so
		// reads never take its share: a 429 to a provider can lose a delivery.
		stage.Node().DefaultChild().(awsapigatewayv2.CfnStage).SetRouteSettings(map[string]any{
			webhookRoute: map[string]any{
				"ThrottlingRateLimit":  cfg.APIThrottles.Webhooks.Rate,
				"ThrottlingBurstLimit": cfg.APIThrottles.Webhooks.Burst,
			},
		})
		stage.Node().DefaultChild().(awsapigatewayv2.CfnStage).SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
			DestinationArn: apiLogs.LogGroupArn(),
			Format:         jsii.String(`{"requestId":"$context.requestId","ip":"$context.identity.sourceIp","method":"$context.httpMethod","route":"$context.routeKey","status":"$context.status","latency":"$context.responseLatency","error":"$context.error.message","authorizerError":"$context.authorizer.error"}`),
		})
		issuer, audience := cfg.JWTIssuer, cfg.JWTAudience
		if issuer == "" {
			pool = awscognito.NewUserPool(stack, jsii.String("Users"), &awscognito.UserPoolProps{
				SelfSignUpEnabled: jsii.Bool(false),
				PasswordPolicy: &awscognito.PasswordPolicy{
					MinLength: jsii.Number(12), RequireDigits: jsii.Bool(true), RequireLowercase: jsii.Bool(true),
					RequireUppercase: jsii.Bool(true), RequireSymbols: jsii.Bool(true),
				},
				Mfa:                          awscognito.Mfa_REQUIRED,
				MfaSecondFactor:              &awscognito.MfaSecondFactor{Otp: jsii.Bool(true), Sms: jsii.Bool(false)},
				FeaturePlan:                  awscognito.FeaturePlan_PLUS,
				StandardThreatProtectionMode: awscognito.StandardThreatProtectionMode_FULL_FUNCTION,
				RemovalPolicy:                removal,
			})
			scopes := []awscognito.ResourceServerScope{}
			for _, sc := range []struct{ name, desc string }{
				{"ora.approve", "approve or reject escalated decisions"},
				{"orientation.read", "read signals, waves and orientation packets"},
				{"ora.operate", "resume paused waves, propose, promote and roll back motor versions"},
				{"ora.read", "read the operator's incidents and the motor's versions"},
				{"orientation.propose", "propose orientation profile changes"},
				{"orientation.approve", "approve orientation profile changes"},
				{"orientation.admin", "administer orientation profiles"},
			} {
				scopes = append(scopes, awscognito.NewResourceServerScope(&awscognito.ResourceServerScopeProps{
					ScopeName: jsii.String(sc.name), ScopeDescription: jsii.String(sc.desc),
				}))
			}
			server := pool.AddResourceServer(jsii.String("OraScopes"), &awscognito.UserPoolResourceServerOptions{
				Identifier: jsii.String("ora"),
				Scopes:     &scopes,
			})
			oauthScopes := []awscognito.OAuthScope{}
			for _, sc := range scopes {
				oauthScopes = append(oauthScopes, awscognito.OAuthScope_ResourceServer(server, sc))
			}
			client = pool.AddClient(jsii.String("Operator"), &awscognito.UserPoolClientOptions{
				GenerateSecret: jsii.Bool(true),
				OAuth: &awscognito.OAuthSettings{
					Flows:  &awscognito.OAuthFlows{ClientCredentials: jsii.Bool(true)},
					Scopes: &oauthScopes,
				},
			})
			domain = pool.AddDomain(jsii.String("Domain"), &awscognito.UserPoolDomainOptions{
				CognitoDomain: &awscognito.CognitoDomainOptions{
					DomainPrefix: awscdk.Fn_Join(jsii.String("-"), &[]*string{jsii.String("ora"), stack.Account()}),
				},
			})
			issuer = *awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("https://cognito-idp."), stack.Region(), jsii.String(".amazonaws.com/"), pool.UserPoolId()})
			audience = *client.UserPoolClientId()
		}
		authorizer := awsapigatewayv2authorizers.NewHttpJwtAuthorizer(jsii.String("Jwt"), jsii.String(issuer), &awsapigatewayv2authorizers.HttpJwtAuthorizerProps{
			JwtAudience: jsii.Strings(audience),
		})
		webhooks := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("Webhooks"), fn("observe-webhook"), nil)
		reads := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("Reads"), fn("api"), nil)
		api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path: jsii.String("/webhooks/{source}"), Methods: &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_POST},
			Integration: webhooks,
		})
		for _, r := range apiRoutes {
			api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
				Path: jsii.String(r.path), Methods: &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod(r.method)},
				Integration: reads, Authorizer: authorizer, AuthorizationScopes: jsii.Strings(r.scope),
			})
		}
		cdknag.NagSuppressions_AddResourceSuppressionsByPath(stack, jsii.String("/"+id+"/HttpApi/POST--webhooks--{source}/Resource"), &[]*cdknag.NagPackSuppression{{
			Id:     jsii.String("AwsSolutions-APIG4"),
			Reason: jsii.String("Webhook providers cannot present a JWT; every delivery is authenticated by its source's signature (GitHub, Slack, Stripe, HMAC) inside observe-webhook, in constant time."),
		}}, nil)
		apiURL = stage.Url()
		api5xx = api.MetricServerError(&awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum")})
	}

	// Alarms that reach someone, and what they watch for lost work.
	alarmTopicDelivers(stack, key, alarmTopic)
	deliveryAlarms{
		DLQs:        withQueues(map[string]awssqs.Queue{"ObserverDLQ": asyncDLQ, "StreamDLQ": streamDLQ, "ScheduleDLQ": scheduleDLQ}, userDLQs),
		AsyncDLQFns: map[string]awslambda.Function{"observe-object": fn("observe-object"), "observe-schedule": fn("observe-schedule")},
		StreamFn:    fn("observe-table"),
		API5xx:      api5xx,
		Tables:      map[string]awsdynamodb.Table{"Ledger": ledger, "Idempotency": idem},
		Wave:        sm,
	}.add(stack, alarmTopic)

	// Outputs.
	out := func(name string, v *string) {
		awscdk.NewCfnOutput(stack, jsii.String(name), &awscdk.CfnOutputProps{Value: v})
	}
	out("ApiUrl", apiURL)
	out("StateMachineArn", sm.StateMachineArn())
	out("LedgerTableName", ledger.TableName())
	out("IdempotencyTableName", idem.TableName())
	out("BucketName", bucket.BucketName())
	out("EscalationTopicArn", topic.TopicArn())
	out("AlarmTopicArn", alarmTopic.TopicArn())
	out("WebhookSecretArn", secret.SecretArn())
	if pool != nil {
		out("UserPoolId", pool.UserPoolId())
		out("UserPoolClientId", client.UserPoolClientId())
		out("TokenUrl", awscdk.Fn_Join(jsii.String(""), &[]*string{domain.BaseUrl(nil), jsii.String("/oauth2/token")}))
	}

	suppressStackWide(stack)
	s.addDashboard()
	return s
}

// webhookRoute is the HTTP API's webhook route key.
const webhookRoute = "POST /webhooks/{source}"

// warmThroughput is the table's (or an index's) warm throughput; nil when
// neither is set, leaving DynamoDB's default for a new on-demand table.
func warmThroughput(w WarmThroughput) *awsdynamodb.WarmThroughput {
	if w.ReadUnitsPerSecond == 0 && w.WriteUnitsPerSecond == 0 {
		return nil
	}
	out := &awsdynamodb.WarmThroughput{}
	if w.ReadUnitsPerSecond > 0 {
		out.ReadUnitsPerSecond = jsii.Number(w.ReadUnitsPerSecond)
	}
	if w.WriteUnitsPerSecond > 0 {
		out.WriteUnitsPerSecond = jsii.Number(w.WriteUnitsPerSecond)
	}
	return out
}

// ledgerIndexes are the ledger table's GSIs, as shared/dynamo queries them.
var ledgerIndexes = []struct{ name, pk, sk string }{
	{dynamo.IndexRecent, dynamo.AttrGSI1PK, dynamo.AttrGSI1SK},
	{dynamo.IndexOpen, dynamo.AttrGSI2PK, dynamo.AttrGSI2SK},
}

// suppressStackWide records the findings that follow from AWS's own managed
// pieces, each with the reason it is acceptable.
func suppressStackWide(stack awscdk.Stack) {
	cdknag.NagSuppressions_AddStackSuppressions(stack, &[]*cdknag.NagPackSuppression{
		{
			Id:        jsii.String("AwsSolutions-IAM4"),
			Reason:    jsii.String("Functions use AWSLambdaBasicExecutionRole, AWS's managed policy scoped to writing their own logs; the CDK attaches it."),
			AppliesTo: &[]interface{}{"Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"},
		},
		{
			Id:     jsii.String("AwsSolutions-IAM5"),
			Reason: jsii.String("Wildcards are limited to: the ledger table's own indexes (index/*), objects under the actions/ prefix of ora's bucket and ledger entry bodies under its ledger/bodies/ prefix, wave jobs under waves/ in the jobs bucket, recordings under the golden set's recordings/ prefix, executions of ora's state machines (the wave, its Express children and its Distributed Map's children), X-Ray trace writes (no resource-level permissions exist), Lambda version qualifiers of ora's own functions, KMS data-key actions on ora's key, states:SendTaskSuccess/SendTaskFailure, which support no resource-level permissions, and the AWS Marketplace subscription actions Bedrock needs the first time a third-party model is invoked in an account (none take a resource ARN)."),
		},
		{
			Id:     jsii.String("AwsSolutions-L1"),
			Reason: jsii.String("The functions run on provided.al2023, the newest OS-only runtime; Go binaries have no managed language runtime to upgrade. Flagged rows come from CDK's own singleton helper functions."),
		},
	}, nil)
}

// environment returns the ledger table plus extra.
func environment(table, bodies *string, retention ora.Retention, extra map[string]*string) *map[string]*string {
	// ORA_BODY_BUCKET: where the ledger keeps entry bodies too large for an
	// item, under ledger/bodies/ (shared/bodystore); ORA_RETENTION: the
	// ledger's TTL by kind (dynamo.FromEnv).
	env := map[string]*string{"ORA_LEDGER_TABLE": table, "ORA_BODY_BUCKET": bodies, ora.EnvRetention: jsii.String(retention.String())}
	for k, v := range extra {
		env[k] = v
	}
	return &env
}

// bedrockResources returns the ARNs the reason function may invoke: each
// configured foundation model, and for a cross-region inference profile
// (us., eu., apac., global.) the profile in this account and its model in
// whichever region the profile routes to.
func bedrockResources(stack awscdk.Stack, ids []string) *[]*string {
	var arns []*string
	for _, id := range ids {
		base := id
		for _, geo := range []string{"us.", "eu.", "apac.", "global."} {
			if strings.HasPrefix(id, geo) {
				base = strings.TrimPrefix(id, geo)
				arns = append(arns, stack.FormatArn(&awscdk.ArnComponents{
					Service: jsii.String("bedrock"), Resource: jsii.String("inference-profile"),
					ResourceName: jsii.String(id), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME,
				}))
				arns = append(arns, jsii.String("arn:"+*stack.Partition()+":bedrock:*::foundation-model/"+base))
			}
		}
		if base == id {
			arns = append(arns, stack.FormatArn(&awscdk.ArnComponents{
				Service: jsii.String("bedrock"), Account: jsii.String(""), Resource: jsii.String("foundation-model"),
				ResourceName: jsii.String(id), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME,
			}))
		}
	}
	return &arns
}

func pascal(name string) string {
	return strings.TrimSuffix(statemachines.FunctionPlaceholder(name), "FunctionArn")
}

func retentionDays(days int) awslogs.RetentionDays {
	switch days {
	case 1:
		return awslogs.RetentionDays_ONE_DAY
	case 7:
		return awslogs.RetentionDays_ONE_WEEK
	case 14:
		return awslogs.RetentionDays_TWO_WEEKS
	case 30:
		return awslogs.RetentionDays_ONE_MONTH
	case 90:
		return awslogs.RetentionDays_THREE_MONTHS
	case 180:
		return awslogs.RetentionDays_SIX_MONTHS
	case 365:
		return awslogs.RetentionDays_ONE_YEAR
	}
	panic(fmt.Sprintf("context ora:logRetentionDays: %d is not one of 1, 7, 14, 30, 90, 180, 365", days))
}
