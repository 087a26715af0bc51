package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/statemachines"
)

// All CDK tests share one synthesized stack: each jsii start costs seconds.
var (
	once     sync.Once
	stack    *OraStack
	template assertions.Template
	tmpl     map[string]any
)

// root is the repository root; ORA_INFRA_ROOT overrides it.
var root = func() string {
	if r := os.Getenv("ORA_INFRA_ROOT"); r != "" {
		return r
	}
	return ".."
}()

func TestMain(m *testing.M) {
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

func synth(t *testing.T) {
	t.Helper()
	once.Do(func() {
		for _, name := range FunctionNames(root) {
			if _, err := os.Stat(filepath.Join(root, "build", name, "bootstrap")); err != nil {
				panic(fmt.Sprintf("build/%s/bootstrap is missing: run `make lambdas` before the infra tests", name))
			}
		}
		// Exactly the context `cdk deploy` hands the app: cdk.json's
		// settings and feature flags (TestSynthMatchesCDKDeploy compares).
		ctx, err := CDKJSONContext("cdk.json")
		if err != nil {
			panic(err)
		}
		if os.Getenv("ORA_INFRA_ROOT") != "" {
			ctx["ora:root"] = root
		}
		app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
		stack = NewOraStack(app, "Ora", ConfigFromContext(app))
		awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
		template = assertions.Template_FromStack(stack.Stack, nil)
		b, _ := json.Marshal(template.ToJSON())
		_ = json.Unmarshal(b, &tmpl)
	})
	if template == nil {
		t.Fatal("synth failed")
	}
}

func resources(t *testing.T, typ string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for id, r := range tmpl["Resources"].(map[string]any) {
		m := r.(map[string]any)
		if m["Type"] == typ {
			out[id] = m
		}
	}
	return out
}

func TestNagReportsNoUnsuppressedErrors(t *testing.T) {
	synth(t)
	errs := assertions.Annotations_FromStack(stack.Stack).FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))
	for _, e := range *errs {
		t.Errorf("cdk-nag: %+v", *e)
	}
	warns := assertions.Annotations_FromStack(stack.Stack).FindWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))
	for _, w := range *warns {
		t.Logf("cdk-nag warning: %+v", *w)
	}
}

func TestLedgerTable(t *testing.T) {
	synth(t)
	template.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"KeySchema":                        []map[string]string{{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}},
		"BillingMode":                      "PAY_PER_REQUEST",
		"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
		"TimeToLiveSpecification":          map[string]any{"AttributeName": "ttl", "Enabled": true},
		"StreamSpecification":              map[string]any{"StreamViewType": "NEW_AND_OLD_IMAGES"},
		"SSESpecification":                 map[string]any{"SSEEnabled": true},
		"DeletionProtectionEnabled":        true,
		"GlobalSecondaryIndexes": assertions.Match_ArrayWith(&[]any{
			assertions.Match_ObjectLike(&map[string]any{"IndexName": "GSI1"}),
			assertions.Match_ObjectLike(&map[string]any{"IndexName": "GSI2"}),
		}),
	})
	template.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"KeySchema":                 []map[string]string{{"AttributeName": "id", "KeyType": "HASH"}},
		"TimeToLiveSpecification":   map[string]any{"AttributeName": "expiration", "Enabled": true},
		"DeletionProtectionEnabled": true,
	})
}

func TestOneFunctionPerFolder(t *testing.T) {
	synth(t)
	names := FunctionNames(root)
	fns := resources(t, "AWS::Lambda::Function")
	ours := 0
	for _, f := range fns {
		p := f["Properties"].(map[string]any)
		if p["Runtime"] != "provided.al2023" {
			continue // CDK's own helpers (bucket notifications, log retention)
		}
		ours++
		if got := fmt.Sprint(p["Architectures"]); got != "[arm64]" {
			t.Errorf("%v: Architectures = %s, want [arm64]", p["Description"], got)
		}
		if got := fmt.Sprint(p["TracingConfig"]); got != "map[Mode:Active]" {
			t.Errorf("%v: TracingConfig = %s, want Active", p["Description"], got)
		}
		if p["Handler"] != "bootstrap" || p["MemorySize"] == nil || p["Timeout"] == nil || p["LoggingConfig"] == nil {
			t.Errorf("%v: handler, memory, timeout or log group missing: %v", p["Description"], p)
		}
	}
	if ours != len(names) {
		t.Errorf("%d provided.al2023 functions, want one per functions/* folder (%d)", ours, len(names))
	}
	for _, lg := range resources(t, "AWS::Logs::LogGroup") {
		if lg["Properties"].(map[string]any)["RetentionInDays"] == nil {
			t.Errorf("a log group has no retention: %v", lg)
		}
	}
}

func TestStateMachine(t *testing.T) {
	synth(t)
	sms := resources(t, "AWS::StepFunctions::StateMachine")
	if len(sms) != 1+len(statemachines.Children) {
		t.Fatalf("%d state machines, want the wave and its %d Express children", len(sms), len(statemachines.Children))
	}
	var props map[string]any
	var parentID string
	express := map[string]map[string]any{}
	for id, sm := range sms {
		p := sm["Properties"].(map[string]any)
		switch p["StateMachineType"] {
		case "STANDARD":
			props, parentID = p, id
		case "EXPRESS":
			express[id] = p
		}
	}
	if props == nil || len(express) != len(statemachines.Children) {
		t.Fatalf("want one STANDARD wave and %d EXPRESS children, got %d EXPRESS", len(statemachines.Children), len(express))
	}
	_ = parentID
	if lvl := props["LoggingConfiguration"].(map[string]any)["Level"]; lvl != "ALL" {
		t.Errorf("logging level = %v, want ALL", lvl)
	}
	// Execution data would log the escalation's task token.
	if inc := props["LoggingConfiguration"].(map[string]any)["IncludeExecutionData"]; inc != false {
		t.Errorf("IncludeExecutionData = %v, want false (task tokens must not reach the logs)", inc)
	}
	if props["TracingConfiguration"].(map[string]any)["Enabled"] != true {
		t.Errorf("tracing is off")
	}
	if _, isString := props["DefinitionString"].(string); !isString {
		t.Errorf("the definition is not inline: %T", props["DefinitionString"])
	}
	// Every ${Placeholder} in the ASL has a substitution.
	subs := props["DefinitionSubstitutions"].(map[string]any)
	for _, p := range statemachines.Placeholders(statemachines.Wave) {
		if _, ok := subs[p]; !ok {
			t.Errorf("${%s} has no substitution", p)
		}
	}
	// Every function the ASL invokes is granted to the state machine's role.
	role := props["RoleArn"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
	granted := map[string]bool{}
	roleStmts := roleStatements(t, role)
	for _, stm := range roleStmts {
		if !strings.Contains(fmt.Sprint(stm["Action"]), "lambda:InvokeFunction") {
			continue
		}
		b, _ := json.Marshal(stm["Resource"])
		for _, m := range regexp.MustCompile(`"([A-Za-z0-9]+)","Arn"`).FindAllStringSubmatch(string(b), -1) {
			granted[m[1]] = true
		}
	}
	// Each function placeholder names a published version (AWS::Lambda::Version),
	// whose function is granted; the integration ARN names the partition by Ref.
	versions := resources(t, "AWS::Lambda::Version")
	for p, v := range subs {
		b, _ := json.Marshal(v)
		if arn, ok := statemachines.Integrations("aws")[p]; ok {
			if !strings.Contains(string(b), `{"Ref":"AWS::Partition"}`) || !strings.Contains(string(b), strings.TrimPrefix(arn, "arn:aws")) {
				t.Errorf("${%s} -> %s, want the integration ARN in the deployment's partition", p, b)
			}
			continue
		}
		if isChild(p) {
			// A published version of the child, kept when replaced: a
			// waiting wave resumes on the child it began with.
			ver, ok := resources(t, "AWS::StepFunctions::StateMachineVersion")[getAttID(v)]
			if !ok {
				t.Errorf("${%s} -> %s, want a published version of an EXPRESS child", p, b)
				continue
			}
			if ver["DeletionPolicy"] != "Retain" || ver["UpdateReplacePolicy"] != "Retain" {
				t.Errorf("${%s}: the child's version is not retained (%v, %v): a deploy would delete what running waves start", p, ver["DeletionPolicy"], ver["UpdateReplacePolicy"])
			}
			vp := ver["Properties"].(map[string]any)
			if id, _ := vp["StateMachineArn"].(map[string]any)["Ref"].(string); express[id] == nil {
				t.Errorf("${%s}: a version of %v, want an EXPRESS child", p, vp["StateMachineArn"])
			}
			if rev := fmt.Sprint(vp["StateMachineRevisionId"]); !strings.Contains(rev, "StateMachineRevisionId") {
				t.Errorf("${%s}: the version's revision is %s, want the child's own (a new version per definition change)", p, rev)
			}
			continue
		}
		ver, ok := versions[getAttID(v)]
		if !ok {
			t.Errorf("${%s} -> %s is not a published function version", p, b)
			continue
		}
		fn := getAttID(ver["Properties"].(map[string]any)["FunctionName"])
		if !granted[fn] {
			t.Errorf("${%s} -> version of %s, which is not granted lambda:InvokeFunction to the state machine role", p, fn)
		}
	}
	// Each Express child logs every event, with its input and output, to a
	// log group of its own (its only history: the console shows each step's
	// data), and has every placeholder filled. The children's inputs carry
	// no task token (statemachines' TestChildrenCarryNoTaskToken).
	for id, p := range express {
		lc, _ := p["LoggingConfiguration"].(map[string]any)
		if lc == nil || lc["Level"] != "ALL" || lc["IncludeExecutionData"] != true || len(toAny(lc["Destinations"])) != 1 {
			t.Errorf("%s: logging %v, want level ALL, execution data, one log group", id, lc)
		}
		if p["TracingConfiguration"].(map[string]any)["Enabled"] != true {
			t.Errorf("%s: tracing is off", id)
		}
		csubs, _ := p["DefinitionSubstitutions"].(map[string]any)
		for _, ch := range statemachines.Children {
			if !strings.Contains(fmt.Sprint(p["StateMachineName"]), "-"+ch.Name) {
				continue
			}
			for _, ph := range statemachines.Placeholders(ch.Definition) {
				if csubs[ph] == nil {
					t.Errorf("%s: ${%s} has no substitution", id, ph)
				}
			}
		}
	}
	// The parent's role may start, describe and stop its children, and
	// manage the EventBridge rule .sync uses to follow them.
	var startOn, followOn []string
	var rule bool
	for _, stm := range roleStmts {
		actions := toStrings(stm["Action"])
		b, _ := json.Marshal(stm["Resource"])
		switch {
		case slices.Contains(actions, "states:StartExecution"):
			startOn = append(startOn, string(b))
		case slices.Contains(actions, "states:DescribeExecution") && slices.Contains(actions, "states:StopExecution"):
			followOn = append(followOn, string(b))
		case slices.Contains(actions, "events:PutTargets") && slices.Contains(actions, "events:PutRule") && slices.Contains(actions, "events:DescribeRule"):
			rule = strings.Contains(string(b), "rule/StepFunctionsGetEventsForStepFunctionsExecutionRule")
		}
	}
	for id := range express {
		if !strings.Contains(strings.Join(startOn, " "), `"`+id+`"`) {
			t.Errorf("the wave's role may not start the child %s (StartExecution on %v)", id, startOn)
		}
		if !strings.Contains(strings.Join(followOn, " "), id) {
			t.Errorf("the wave's role may not describe and stop the executions of %s (%v)", id, followOn)
		}
	}
	if !rule {
		t.Error("the wave's role may not manage the rule StepFunctionsGetEventsForStepFunctionsExecutionRule")
	}
}

// isChild reports whether p stands for an Express child's ARN.
func isChild(p string) bool {
	for _, ch := range statemachines.Children {
		if ch.Placeholder == p {
			return true
		}
	}
	return false
}

// toAny returns v as a list, or nil.
func toAny(v any) []any {
	l, _ := v.([]any)
	return l
}

// No statement grants a wildcard action, and Resource "*" appears only for
// actions that have no resource-level permissions.
func TestIAMIsScoped(t *testing.T) {
	synth(t)
	// Actions that AWS documents as supporting no resource-level permissions.
	starOK := map[string]bool{
		"xray:PutTraceSegments": true, "xray:PutTelemetryRecords": true,
		"xray:GetSamplingRules": true, "xray:GetSamplingTargets": true,
		"states:SendTaskSuccess": true, "states:SendTaskFailure": true,
		"dynamodb:ListStreams": true,
		// AWS Marketplace's subscription actions (Bedrock's first use of a
		// third-party model); they can be narrowed by product id only.
		"aws-marketplace:Subscribe": true, "aws-marketplace:Unsubscribe": true, "aws-marketplace:ViewSubscriptions": true,
		// Step Functions' logging to CloudWatch Logs (vended logs).
		"logs:CreateLogDelivery": true, "logs:GetLogDelivery": true, "logs:UpdateLogDelivery": true,
		"logs:DeleteLogDelivery": true, "logs:ListLogDeliveries": true, "logs:PutResourcePolicy": true,
		"logs:DescribeResourcePolicies": true, "logs:DescribeLogGroups": true,
	}
	for id, pol := range resources(t, "AWS::IAM::Policy") {
		for _, st := range pol["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			stm := st.(map[string]any)
			actions := toStrings(stm["Action"])
			for _, a := range actions {
				if a == "*" || strings.HasSuffix(a, ":*") {
					t.Errorf("%s grants the wildcard action %s", id, a)
				}
			}
			if fmt.Sprint(stm["Resource"]) == "*" {
				for _, a := range actions {
					if !starOK[a] {
						t.Errorf("%s grants %s on every resource", id, a)
					}
				}
			}
		}
	}
}

// guardrailTemplate synthesizes the stack once more with cdk.json's context
// plus the optional settings a user adds with -c: a guardrail, a second
// model family, escalation and alarm subscriptions.
var guardrailTemplate = sync.OnceValue(func() map[string]any {
	ctx, err := CDKJSONContext("cdk.json")
	if err != nil {
		panic(err)
	}
	if os.Getenv("ORA_INFRA_ROOT") != "" {
		ctx["ora:root"] = root
	}
	ctx["ora:bedrockModelIds"] = []string{"us.anthropic.claude-haiku-4-5-20251001-v1:0", "amazon.nova-lite-v1:0"}
	ctx["ora:guardrailId"] = "gr-test"
	ctx["ora:guardrailVersion"] = "2"
	ctx["ora:escalationSubscriptions"] = []map[string]string{
		{"kind": "email", "endpoint": "approvers@example.com"},
		{"kind": "https", "endpoint": "https://hooks.example.com/ora"},
		{"kind": "sqs", "endpoint": "arn:aws:sqs:us-east-1:123456789012:approvals"},
	}
	ctx["ora:alarmSubscriptions"] = []map[string]string{{"kind": "email", "endpoint": "oncall@example.com"}}
	ctx["ora:orientation"] = map[string]any{"objects_bucket": "acme-invoices", "http_allow": []string{"https://status.example.com/"}, "token_budget": 120000,
		"admin": map[string]any{"max_horizon_waves": 20}, "proposal_ttl": "72h"}
	ctx["ora:golden"] = map[string]any{"bucket": "acme-ora-golden", "prefix": "gate/"}
	ctx["ora:goldenRecordRate"] = 0.05 // TestGoldenRecordRate
	ctx["ora:functions"] = map[string]any{"report": reportARN, "triage": map[string]any{"arn": triageARN, "timeout_seconds": 20}}
	// And the scale settings (TestScaleSettings).
	ctx["ora:apiThrottles"] = map[string]any{"webhooks": map[string]any{"rate": 900, "burst": 1800}, "reads": map[string]any{"rate": 20, "burst": 40}}
	ctx["ora:warmThroughput"] = map[string]any{"write_units_per_second": 8000, "read_units_per_second": 12000}
	ctx["ora:inlineFetchMaxJobs"] = 12
	// And an MCP server (TestMCPServersReachReasonAndAct).
	ctx["ora:mcpServers"] = []map[string]any{{"name": "tracker", "url": "https://mcp.example.com/mcp", "act_tools": []string{"add_label"}}}
	// And coalescing (TestCoalesceWindowReachesObservers).
	ctx["ora:coalesceWindowMs"] = 500
	// And a retention of its own (TestRetentionReachesEveryFunction).
	ctx["ora:retention"] = map[string]any{"factsDays": 14, "packetsDays": 7, "jobsDays": 3}
	ctx["ora:coalesceSources"] = map[string]string{"slack": "off", "orders": "order.id"}
	// And batching (TestBatchWindowReachesReason).
	ctx["ora:batchWindowMs"] = 1000
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	st := NewOraStack(app, "OraGuardrail", ConfigFromContext(app))
	b, _ := json.Marshal(assertions.Template_FromStack(st.Stack, nil).ToJSON())
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
})

func TestReasonMayInvokeOnlyConfiguredModels(t *testing.T) {
	synth(t)
	var found, guardrails []string
	for _, r := range guardrailTemplate()["Resources"].(map[string]any) {
		pol := r.(map[string]any)
		if pol["Type"] != "AWS::IAM::Policy" {
			continue
		}
		for _, st := range pol["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			stm := st.(map[string]any)
			if fmt.Sprint(stm["Action"]) == "bedrock:ApplyGuardrail" {
				b, _ := json.Marshal(stm["Resource"])
				guardrails = append(guardrails, string(b))
				continue
			}
			if !strings.Contains(fmt.Sprint(stm["Action"]), "bedrock:") {
				continue
			}
			b, _ := json.Marshal(stm["Resource"])
			found = append(found, string(b))
		}
	}
	// ApplyGuardrail: the reason function and the safety and intent
	// validators, on the configured guardrail only.
	if len(guardrails) != 3 {
		t.Errorf("%d ApplyGuardrail statements, want 3", len(guardrails))
	}
	for _, g := range guardrails {
		if !strings.Contains(g, ":guardrail/gr-test") || strings.Contains(g, "*") {
			t.Errorf("ApplyGuardrail on %s, want only guardrail/gr-test", g)
		}
	}
	if len(found) != 2 {
		t.Fatalf("%d bedrock statements, want 2 (the reason function's and the intent validator's)", len(found))
	}
	for _, f := range found {
		for _, want := range []string{"inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0",
			"foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0", "foundation-model/amazon.nova-lite-v1:0"} {
			if !strings.Contains(f, want) {
				t.Errorf("the bedrock statement %s does not name %s", f, want)
			}
		}
	}
	if strings.Contains(found[0], `foundation-model/*`) {
		t.Errorf("the bedrock statement allows every model: %s", found[0])
	}
	// A plain model id (no inference profile) is named in this region only.
	scratch := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Scratch"), nil)
	b, _ := json.Marshal(scratch.Resolve(bedrockResources(scratch, []string{"amazon.nova-lite-v1:0"})))
	if !strings.Contains(string(b), "foundation-model/amazon.nova-lite-v1:0") || strings.Contains(string(b), "inference-profile") {
		t.Errorf("amazon.nova-lite-v1:0 resolves to %s", b)
	}
}

func TestHTTPAPI(t *testing.T) {
	synth(t)
	template.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::Api"), jsii.Number(1))
	template.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Authorizer"), map[string]any{"AuthorizerType": "JWT"})
	routes := map[string]map[string]any{}
	for _, r := range resources(t, "AWS::ApiGatewayV2::Route") {
		p := r["Properties"].(map[string]any)
		routes[p["RouteKey"].(string)] = p
	}
	want := map[string]string{
		"POST /webhooks/{source}":                "",
		"GET /signals/{id}":                      "ora/orientation.read",
		"GET /waves/{id}":                        "ora/orientation.read",
		"POST /decisions/{id}/approve":           "ora/ora.approve",
		"POST /decisions/{id}/reject":            "ora/ora.approve",
		"GET /incidents":                         "ora/ora.read",
		"GET /incidents/{id}":                    "ora/ora.read",
		"POST /waves/{id}/resume":                "ora/ora.operate",
		"GET /motor/versions":                    "ora/ora.read",
		"POST /motor/versions":                   "ora/ora.operate",
		"POST /motor/versions/{version}/promote": "ora/ora.operate",
		"POST /motor/rollback":                   "ora/ora.operate",
		"GET /motor/waves":                       "ora/ora.read",
		"GET /motor/patterns":                    "ora/ora.read",
		"POST /motor/patterns/{id}/promote":      "ora/ora.operate",
		"POST /waves/{id}/resolve":               "ora/ora.operate",
	}
	for key, scope := range want {
		p, ok := routes[key]
		if !ok {
			t.Errorf("route %s missing", key)
			continue
		}
		if scope == "" {
			if p["AuthorizationType"] == "JWT" {
				t.Errorf("%s: webhooks are verified by signature, not JWT", key)
			}
			continue
		}
		if p["AuthorizationType"] != "JWT" || !strings.Contains(fmt.Sprint(p["AuthorizationScopes"]), scope) {
			t.Errorf("%s: authorization %v %v, want JWT with %s", key, p["AuthorizationType"], p["AuthorizationScopes"], scope)
		}
	}
	template.HasResourceProperties(jsii.String("AWS::Cognito::UserPoolResourceServer"), map[string]any{
		"Scopes": assertions.Match_ArrayWith(&[]any{
			assertions.Match_ObjectLike(&map[string]any{"ScopeName": "ora.approve"}),
			assertions.Match_ObjectLike(&map[string]any{"ScopeName": "orientation.read"}),
			assertions.Match_ObjectLike(&map[string]any{"ScopeName": "orientation.propose"}),
		}),
	})
	template.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Stage"), map[string]any{
		"AccessLogSettings": assertions.Match_ObjectLike(&map[string]any{}),
	})
}

func TestTriggersAndProtection(t *testing.T) {
	synth(t)
	template.HasResourceProperties(jsii.String("AWS::Scheduler::Schedule"), map[string]any{
		"ScheduleExpression": "rate(1 hour)",
		"Target": assertions.Match_ObjectLike(&map[string]any{
			"DeadLetterConfig": assertions.Match_ObjectLike(&map[string]any{}),
			"RetryPolicy":      assertions.Match_ObjectLike(&map[string]any{}),
		}),
	})
	template.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
		"PublicAccessBlockConfiguration": map[string]any{"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true},
		"BucketEncryption":               assertions.Match_ObjectLike(&map[string]any{}),
		"LoggingConfiguration":           assertions.Match_ObjectLike(&map[string]any{}),
	})
	template.HasResourceProperties(jsii.String("Custom::S3BucketNotifications"), map[string]any{
		"NotificationConfiguration": assertions.Match_ObjectLike(&map[string]any{
			"LambdaFunctionConfigurations": assertions.Match_ArrayWith(&[]any{
				assertions.Match_ObjectLike(&map[string]any{"Events": []string{"s3:ObjectCreated:*"}}),
				assertions.Match_ObjectLike(&map[string]any{"Events": []string{"s3:ObjectRemoved:*"}}),
			}),
		}),
	})
	template.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"DestinationConfig": assertions.Match_ObjectLike(&map[string]any{"OnFailure": assertions.Match_ObjectLike(&map[string]any{})}),
		"StartingPosition":  "LATEST",
	})
	template.HasResourceProperties(jsii.String("AWS::SNS::Topic"), map[string]any{"KmsMasterKeyId": assertions.Match_AnyValue()})
	template.ResourceCountIs(jsii.String("AWS::SecretsManager::Secret"), jsii.Number(2)) // webhook sources, action signing key
	// Every SSL-only bucket and queue carries an aws:SecureTransport deny.
	for _, typ := range []string{"AWS::S3::BucketPolicy", "AWS::SQS::QueuePolicy"} {
		for id, p := range resources(t, typ) {
			if !strings.Contains(fmt.Sprint(p), "aws:SecureTransport") {
				t.Errorf("%s does not enforce SSL", id)
			}
		}
	}
	// Alarms: failed waves, and errors and throttles per function.
	alarms := map[string]int{}
	for _, a := range resources(t, "AWS::CloudWatch::Alarm") {
		p := a["Properties"].(map[string]any)
		name, _ := p["MetricName"].(string)
		if b, _ := json.Marshal(p["Metrics"]); name == "" && strings.Contains(string(b), `"MetricName":"Errors"`) {
			name = "Errors" // the unexpected-errors expression (TestErrorsAlarmsLeaveOutExpectedErrors)
		}
		alarms[name]++
	}
	n := len(FunctionNames(root))
	if alarms["ExecutionsFailed"] != 1 || alarms["Errors"] != n || alarms["Throttles"] != n {
		t.Errorf("alarms = %v, want ExecutionsFailed 1, Errors %d, Throttles %d", alarms, n, n)
	}
	if alarms["WavelessSignals"] != 1 {
		t.Errorf("alarms = %v, want one on the outbox sweep's WavelessSignals", alarms)
	}
	// The outbox: the ledger's stream brings only commitments to
	// observe-table (the capture started each signal's wave: one
	// StartExecution per signal), and a rule runs the sweep, which starts
	// only the signals without a wave.
	var filters []string
	for _, m := range resources(t, "AWS::Lambda::EventSourceMapping") {
		b, _ := json.Marshal(m["Properties"].(map[string]any)["FilterCriteria"])
		filters = append(filters, string(b))
	}
	if len(filters) != 1 || strings.Contains(filters[0], observe.SignalReceivedSortKey) ||
		!strings.Contains(filters[0], observe.CommitmentKeyPrefix) || strings.Count(filters[0], `"Pattern"`) != 1 {
		t.Errorf("stream filters %v, want one pattern, on commitments only", filters)
	}
	rules := 0
	for _, r := range resources(t, "AWS::Events::Rule") {
		if r["Properties"].(map[string]any)["ScheduleExpression"] == "rate(5 minutes)" {
			rules++
		}
	}
	if rules != 1 {
		t.Errorf("outbox sweep rules = %d, want 1", rules)
	}
	// Asynchronously invoked functions have a dead-letter queue.
	for _, f := range resources(t, "AWS::Lambda::Function") {
		p := f["Properties"].(map[string]any)
		d := fmt.Sprint(p["Description"])
		if (d == "ora observe-object" || d == "ora observe-schedule") && p["DeadLetterConfig"] == nil {
			t.Errorf("%s has no dead-letter queue", d)
		}
	}
}

func TestOutputs(t *testing.T) {
	synth(t)
	outs := tmpl["Outputs"].(map[string]any)
	var got []string
	for k := range outs {
		got = append(got, k)
	}
	sort.Strings(got)
	for _, want := range []string{"ApiUrl", "StateMachineArn", "LedgerTableName", "IdempotencyTableName", "BucketName", "UserPoolId", "UserPoolClientId", "TokenUrl"} {
		if _, ok := outs[want]; !ok {
			t.Errorf("output %s missing; have %v", want, got)
		}
	}
}

func toStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return nil
}

// The nag check can fail: a queue without SSL enforcement or a dead-letter
// queue, in a stack of its own, is reported.
func TestNagCatchesAViolation(t *testing.T) {
	synth(t)
	app := awscdk.NewApp(nil)
	bad := awscdk.NewStack(app, jsii.String("Bad"), nil)
	awssqs.NewQueue(bad, jsii.String("Plain"), nil)
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{}), nil)
	errs := assertions.Annotations_FromStack(bad).FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))
	if len(*errs) == 0 {
		t.Fatal("cdk-nag reported nothing for an unencrypted, SSL-optional queue without a dead-letter queue")
	}
}

// Every ORA_* name a function's main.go reads (or documents) is set in that
// function's environment, unless it is optional with a built-in default.
func TestFunctionEnvironments(t *testing.T) {
	synth(t)
	optional := map[string]bool{"ORA_RULES_FILE": true, "ORA_TOKEN_BUDGET": true, "ORA_BEDROCK_CONFIG": true, "ORA_GUARDRAIL_ID": true, "ORA_GUARDRAIL_VERSION": true,
		// Orientation's objects and http source families are off without them.
		"ORA_OBJECTS_BUCKET": true, "ORA_OBSERVE_HTTP_ALLOW": true,
		// The REST API profile's token key (ora:api=rest): TestRESTProfile checks it.
		"ORA_API_TOKEN_SECRET_ARN": true,
		// Set with ora:mcpServers only: TestMCPServersReachReasonAndAct checks it.
		"ORA_MCP_SERVERS": true,
		// Set with ora:golden only: TestGoldenSetContext checks it.
		"ORA_GOLDEN_BUCKET": true, "ORA_GOLDEN_PREFIX": true,
		// Set with ora:goldenRecordRate only: TestGoldenRecordRate checks it.
		"ORA_GOLDEN_RECORD_RATE": true,
		// Set with ora:batchWindowMs only: TestBatchWindowReachesReason checks it.
		"ORA_BATCH_WINDOW_MS": true}
	envs := map[string]map[string]any{}
	for _, f := range resources(t, "AWS::Lambda::Function") {
		p := f["Properties"].(map[string]any)
		name := strings.TrimPrefix(fmt.Sprint(p["Description"]), "ora ")
		if e, ok := p["Environment"].(map[string]any); ok {
			envs[name] = e["Variables"].(map[string]any)
		}
	}
	// With a guardrail in the context, the functions that call it know it.
	guarded := map[string]map[string]any{}
	for _, r := range guardrailTemplate()["Resources"].(map[string]any) {
		f := r.(map[string]any)
		if f["Type"] != "AWS::Lambda::Function" {
			continue
		}
		p := f["Properties"].(map[string]any)
		if e, ok := p["Environment"].(map[string]any); ok {
			guarded[strings.TrimPrefix(fmt.Sprint(p["Description"]), "ora ")] = e["Variables"].(map[string]any)
		}
	}
	for _, name := range []string{"reason", "validate-safety", "validate-intent"} {
		if guarded[name]["ORA_GUARDRAIL_ID"] != "gr-test" || guarded[name]["ORA_GUARDRAIL_VERSION"] != "2" {
			t.Errorf("%s: guardrail environment %v, want gr-test version 2", name, guarded[name])
		}
		if _, ok := envs[name]["ORA_GUARDRAIL_ID"]; ok {
			t.Errorf("%s: a guardrail in the environment though cdk.json configures none: %v", name, envs[name])
		}
	}
	// The functions that record decisions and operator records carry one app
	// version: the declared one (0.0.0 by default) with the context's digest.
	appVersion := regexp.MustCompile(`^0\.0\.0\+[0-9a-f]{12}$`)
	for _, name := range []string{"reason", "operate", "api"} {
		v := fmt.Sprint(envs[name]["ORA_APP_VERSION"])
		if !appVersion.MatchString(v) || v != fmt.Sprint(envs["reason"]["ORA_APP_VERSION"]) {
			t.Errorf("%s: ORA_APP_VERSION %q, want 0.0.0+<digest>, the same for reason, operate and api", name, v)
		}
	}
	re := regexp.MustCompile(`ORA_[A-Z_]+`)
	for _, name := range FunctionNames(root) {
		src, err := os.ReadFile(filepath.Join(root, "functions", name, "main.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range re.FindAllString(string(src), -1) {
			if _, ok := envs[name][v]; !ok && !optional[v] {
				t.Errorf("functions/%s reads %s, which its environment does not set", name, v)
			}
		}
	}
}

// The jobs bucket: encrypted, private, SSL-only, its objects expire; Plan may
// only write wave jobs to it, the state machine role only read them (the
// Fetch Distributed Map's ItemReader) and run its own child executions, the
// api function only read them (a resume at Fetch heads the wave's jobs).
func TestJobsBucket(t *testing.T) {
	synth(t)
	id := *stack.Stack.GetLogicalId(stack.JobsBucket.Node().DefaultChild().(awscdk.CfnElement))
	b := resources(t, "AWS::S3::Bucket")[id]
	if b == nil {
		t.Fatalf("no jobs bucket %s", id)
	}
	props, _ := json.Marshal(b["Properties"])
	for _, want := range []string{
		`"BucketEncryption":{"ServerSideEncryptionConfiguration":[{"ServerSideEncryptionByDefault":{"SSEAlgorithm":"AES256"}}]}`,
		fmt.Sprintf(`"ExpirationInDays":%d`, DefaultRetention().JobsDays),
		`"BlockPublicAcls":true`, `"RestrictPublicBuckets":true`, `"LoggingConfiguration"`,
	} {
		if !strings.Contains(string(props), want) {
			t.Errorf("jobs bucket lacks %s: %s", want, props)
		}
	}
	// Who may do what with it, by policy.
	grants := map[string][]string{}
	for pid, pol := range resources(t, "AWS::IAM::Policy") {
		for _, st := range pol["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			stm := st.(map[string]any)
			res, _ := json.Marshal(stm["Resource"])
			if strings.Contains(string(res), id) {
				for _, a := range toStrings(stm["Action"]) {
					grants[a] = append(grants[a], pid)
					if !strings.Contains(string(res), `/waves/*`) {
						t.Errorf("%s grants %s on %s, want only waves/*", pid, a, res)
					}
				}
			}
		}
	}
	roleOf := func(name string) string {
		for pid := range resources(t, "AWS::IAM::Policy") {
			if strings.HasPrefix(pid, name) {
				return pid
			}
		}
		return ""
	}
	plan, wave, api := roleOf("planServiceRoleDefaultPolicy"), roleOf("WaveRoleDefaultPolicy"), roleOf("apiServiceRoleDefaultPolicy")
	if plan == "" || wave == "" || api == "" {
		t.Fatalf("no plan (%q), state machine (%q) or api (%q) policy", plan, wave, api)
	}
	for action, pids := range grants {
		for _, pid := range pids {
			switch {
			case strings.HasPrefix(action, "s3:PutObject") && pid != plan:
				t.Errorf("%s may %s the jobs bucket; only plan may write", pid, action)
			case strings.HasPrefix(action, "s3:GetObject") && pid != wave && pid != api:
				t.Errorf("%s may %s the jobs bucket; only the state machine and the api read", pid, action)
			}
		}
	}
	if !slices.Contains(grants["s3:PutObject"], plan) || !slices.Contains(grants["s3:GetObject*"], wave) ||
		!slices.Contains(grants["s3:GetObject*"], api) || !slices.Contains(grants["s3:List*"], api) {
		t.Errorf("grants %v: want plan to put, the state machine to get, the api to get and list", grants)
	}
	// The Distributed Map starts child executions of its own state machine.
	pol, _ := json.Marshal(resources(t, "AWS::IAM::Policy")[wave])
	for _, want := range []string{`"states:StartExecution"`, `"states:StopExecution"`, `-wave/*`} {
		if !strings.Contains(string(pol), want) {
			t.Errorf("the state machine's policy lacks %s", want)
		}
	}
	for _, f := range resources(t, "AWS::Lambda::Function") {
		p := f["Properties"].(map[string]any)
		if p["Description"] == "ora plan" || p["Description"] == "ora api" {
			env, _ := json.Marshal(p["Environment"])
			if !strings.Contains(string(env), `"ORA_JOBS_BUCKET":{"Ref":"`+id+`"}`) {
				t.Errorf("%s's environment %s does not name the jobs bucket", p["Description"], env)
			}
		}
	}
}

// TestMCPServersReachReasonAndAct: the servers of ora:mcpServers reach the
// reason and act functions (ORA_MCP_SERVERS) and no other; a stdio server
// is refused at synth (Lambda runs no local commands).
func TestMCPServersReachReasonAndAct(t *testing.T) {
	synth(t)
	for _, r := range guardrailTemplate()["Resources"].(map[string]any) {
		f := r.(map[string]any)
		if f["Type"] != "AWS::Lambda::Function" {
			continue
		}
		p := f["Properties"].(map[string]any)
		name := strings.TrimPrefix(fmt.Sprint(p["Description"]), "ora ")
		env, _ := p["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		v, set := vars[mcp.EnvServers]
		switch name {
		case "reason", "act":
			var servers []mcp.ServerConfig
			if err := json.Unmarshal([]byte(fmt.Sprint(v)), &servers); err != nil || len(servers) != 1 || servers[0].URL != "https://mcp.example.com/mcp" || !servers[0].ActAllows("add_label") {
				t.Errorf("%s: %s=%v, want the tracker server", name, mcp.EnvServers, v)
			}
		default:
			if set {
				t.Errorf("%s: %s is set, want it on reason and act only", name, mcp.EnvServers)
			}
		}
	}
	for _, f := range resources(t, "AWS::Lambda::Function") {
		if vars, ok := f["Properties"].(map[string]any)["Environment"].(map[string]any); ok {
			if _, set := vars["Variables"].(map[string]any)[mcp.EnvServers]; set {
				t.Errorf("%s set without ora:mcpServers", mcp.EnvServers)
			}
		}
	}
	ctx := map[string]any{"ora:mcpServers": `[{"name":"files","command":["mcp-fs"]}]`}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "ora:mcpServers") {
				t.Errorf("a stdio server in ora:mcpServers: panic %v, want one naming the key", r)
			}
		}()
		ConfigFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}))
	}()
}
