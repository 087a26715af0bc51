package main

import (
	"fmt"
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/jsii-runtime-go"
	"strings"
)

// iteratorAgeLimitMs is the stream iterator age (milliseconds) past which
// observe-table is falling behind the ledger's stream: five minutes.
const iteratorAgeLimitMs = 5 * 60 * 1000

// alarmTopicDelivers lets CloudWatch publish alarm notifications to the
// KMS-encrypted topic: the key policy allows cloudwatch.amazonaws.com to
// create and use data keys, and the topic policy allows it to publish, both
// only for alarms of this account.
func alarmTopicDelivers(stack awscdk.Stack, key awskms.Key, topic awssns.Topic) {
	cw := awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)
	key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarmsPublishToEncryptedTopic"),
		Principals: &[]awsiam.IPrincipal{cw},
		Actions:    jsii.Strings("kms:Decrypt", "kms:GenerateDataKey*"),
		Resources:  jsii.Strings("*"),
		Conditions: &map[string]any{"StringEquals": map[string]any{"aws:SourceAccount": stack.Account()}},
	}), jsii.Bool(false))
	topic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarmsPublish"),
		Principals: &[]awsiam.IPrincipal{cw},
		Actions:    jsii.Strings("sns:Publish"),
		Resources:  &[]*string{topic.TopicArn()},
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"aws:SourceAccount": stack.Account()},
			"ArnLike": map[string]any{"aws:SourceArn": stack.FormatArn(&awscdk.ArnComponents{
				Service: jsii.String("cloudwatch"), Resource: jsii.String("alarm"), ResourceName: jsii.String("*"),
				ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
			})},
		},
	}))
}

// deliveryAlarms are the alarms that say something was lost or is falling
// behind: a dead-letter queue holding messages, Lambda failing to write to
// its dead-letter queue, the stream consumer lagging, the API answering 5xx,
// DynamoDB throttling, and waves throttled or timed out. Each notifies topic.
type deliveryAlarms struct {
	DLQs        map[string]awssqs.Queue       // id prefix -> queue
	AsyncDLQFns map[string]awslambda.Function // functions with an async dead-letter queue
	StreamFn    awslambda.Function
	API5xx      awscloudwatch.IMetric        // the API's 5xx count
	Tables      map[string]awsdynamodb.Table // id prefix -> table
	Wave        awsstepfunctions.StateMachine
}

func (d deliveryAlarms) add(stack awscdk.Stack, topic awssns.Topic) {
	five := awscdk.Duration_Minutes(jsii.Number(5))
	alarm := func(id, description string, m awscloudwatch.IMetric, threshold float64) {
		awscloudwatch.NewAlarm(stack, jsii.String(id), &awscloudwatch.AlarmProps{
			Metric:             m,
			Threshold:          jsii.Number(threshold),
			EvaluationPeriods:  jsii.Number(1),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			AlarmDescription:   jsii.String(description),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		}).AddAlarmAction(awscloudwatchactions.NewSnsAction(topic))
	}
	for id, q := range d.DLQs {
		alarm(id+"-depth", "ora: messages waiting in the "+id+" dead-letter queue",
			q.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Maximum")}), 1)
	}
	for name, fn := range d.AsyncDLQFns {
		alarm(name+"-dead-letter-errors", "ora "+name+": failed events could not be written to the dead-letter queue (they are lost)",
			fn.Metric(jsii.String("DeadLetterErrors"), &awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}), 1)
	}
	if d.StreamFn != nil {
		alarm("observe-table-iterator-age", "ora observe-table: the ledger stream is processed more than 5 minutes late",
			d.StreamFn.Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Maximum")}), iteratorAgeLimitMs)
	}
	if d.API5xx != nil {
		alarm("Api5xx", "ora: the API answered 5xx", d.API5xx, 1)
	}
	for id, t := range d.Tables {
		for _, m := range []string{"ReadThrottleEvents", "WriteThrottleEvents"} {
			alarm(id+"-"+m, "ora: DynamoDB "+m+" on the "+id+" table",
				t.Metric(jsii.String(m), &awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}), 1)
		}
	}
	alarm("WaveThrottled", "ora: wave executions throttled by Step Functions",
		d.Wave.MetricThrottled(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}), 1)
	alarm("WaveTimedOut", "ora: wave executions timed out",
		d.Wave.MetricTimedOut(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}), 1)
}

// ExpectedErrors are the error types a function returns by design, which
// the wave handles as it should: a transient failure retried, an action
// that failed in the world (recorded as evidence), a validator's FAIL
// verdict, an outcome an operator must settle. Each is counted from the
// function's "stage failed" log lines and left out of its errors alarm,
// which fires on everything else: internal errors, bad input, provenance
// and scope refusals, crashes and timeouts (which log no such line).
var ExpectedErrors = []string{"TransientError", "ActionFailed", "ValidationFailed", "OutcomeUnknown"}

// unexpectedErrors returns fn's invocation errors less the expected ones its
// log group records (a metric filter on the "stage failed" lines).
func unexpectedErrors(stack awscdk.Stack, name string, fn awslambda.Function, logs awslogs.LogGroup) awscloudwatch.IMetric {
	var codes []string
	for _, c := range ExpectedErrors {
		codes = append(codes, fmt.Sprintf("$.error_code = %q", c))
	}
	expected := awslogs.NewMetricFilter(stack, jsii.String(name+"-expected-errors"), &awslogs.MetricFilterProps{
		LogGroup:        logs,
		MetricNamespace: jsii.String("ora/expected-errors"),
		MetricName:      jsii.String(name),
		FilterPattern:   awslogs.FilterPattern_Literal(jsii.String(`{ $.message = "stage failed" && (` + strings.Join(codes, " || ") + `) }`)),
		MetricValue:     jsii.String("1"),
		DefaultValue:    jsii.Number(0),
	})
	five := awscdk.Duration_Minutes(jsii.Number(5))
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("errors - FILL(expected, 0)"),
		Label:      jsii.String(name + " unexpected errors"),
		Period:     five,
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"errors":   fn.MetricErrors(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}),
			"expected": expected.Metric(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}),
		},
	})
}
