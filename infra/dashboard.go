package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/jsii-runtime-go"
)

// metricsNamespace is where the functions' EMF lines put ora's metrics
// (shared/telemetry/emf).
const metricsNamespace = "Ora"

// Cost assumptions of the dashboard's AWS cost estimate (us-east-1 list
// prices, November 2026, shared/cost/prices.json): Lambda arm64 per GB-second
// and per request, Step Functions Standard per state transition and Express
// per request, and what a typical high-confidence wave uses (the README's
// cost section measures it): 9 parent transitions and 2 Express children.
const (
	lambdaGBSecondUSD   = 0.0000133334
	lambdaRequestUSD    = 0.0000002
	transitionUSD       = 0.000025
	transitionsPerWave  = 9
	expressRequestUSD   = 0.000001
	expressPerWave      = 2
	assumedFunctionMemG = 0.25
)

// addDashboard adds the ora CloudWatch dashboard: waves per minute by
// outcome, wave duration p50/p99, decisions by band, escalations to humans,
// failures by stage and incident class, cost per 1,000 signals, DLQ depths.
func (s *OraStack) addDashboard() awscloudwatch.Dashboard {
	minute, five := awscdk.Duration_Minutes(jsii.Number(1)), awscdk.Duration_Minutes(jsii.Number(5))
	ora := func(name, stat string, period awscdk.Duration, dims map[string]string) awscloudwatch.Metric {
		dm := map[string]*string{}
		for k, v := range dims {
			dm[k] = jsii.String(v)
		}
		label := name
		for _, v := range dims {
			label = v
		}
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String(metricsNamespace), MetricName: jsii.String(name),
			DimensionsMap: &dm, Statistic: jsii.String(stat), Period: period, Label: jsii.String(label),
		})
	}
	// search graphs every label value of a metric with the given dimensions.
	search := func(label, dims, name string, period awscdk.Duration) awscloudwatch.MathExpression {
		return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String(fmt.Sprintf(`SEARCH('{%s,%s} MetricName="%s"', 'Sum', %d)`, metricsNamespace, dims, name, int(*period.ToSeconds(nil)))),
			Label:      jsii.String(label), Period: period,
		})
	}
	graph := func(title string, left ...awscloudwatch.IMetric) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: jsii.String(title), Left: &left, Width: jsii.Number(12), Height: jsii.Number(6)})
	}

	var outcomes []awscloudwatch.IMetric
	for _, o := range []string{"completed", "rejected", "failed"} {
		outcomes = append(outcomes, ora("ora_waves_total", "Sum", minute, map[string]string{"outcome": o}))
	}
	duration := func(stat string) awscloudwatch.IMetric {
		return s.StateMachine.MetricTime(&awscloudwatch.MetricOptions{Statistic: jsii.String(stat), Period: five, Label: jsii.String("wave duration " + stat)})
	}

	// Cost per 1,000 signals: the model's cost from the reason stage, and an
	// estimate of Lambda and Step Functions from their own metrics.
	started := ora("ora_waves_started_total", "Sum", awscdk.Duration_Hours(jsii.Number(1)), nil)
	modelCost := ora("ora_model_cost_usd_total", "Sum", awscdk.Duration_Hours(jsii.Number(1)), nil)
	hour := int(*awscdk.Duration_Hours(jsii.Number(1)).ToSeconds(nil))
	modelPer1k := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String("1000 * model / started"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{"model": modelCost, "started": started},
		Label:        jsii.String("model USD per 1,000 signals"), Period: awscdk.Duration_Hours(jsii.Number(1)),
	})
	awsPer1k := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf(
			"1000 * (SUM(SEARCH('{AWS/Lambda,FunctionName} MetricName=\"Duration\" %s', 'Sum', %d)) / 1000 * %g * %g"+
				" + SUM(SEARCH('{AWS/Lambda,FunctionName} MetricName=\"Invocations\" %s', 'Sum', %d)) * %g) / started + %g",
			*s.StackName(), hour, assumedFunctionMemG, lambdaGBSecondUSD, *s.StackName(), hour, lambdaRequestUSD,
			1000*(transitionsPerWave*transitionUSD+expressPerWave*expressRequestUSD))),
		UsingMetrics: &map[string]awscloudwatch.IMetric{"started": started},
		Label:        jsii.String("AWS USD per 1,000 signals (estimate)"), Period: awscdk.Duration_Hours(jsii.Number(1)),
	})

	var depths []awscloudwatch.IMetric
	for _, q := range s.DLQs {
		depths = append(depths, q.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Statistic: jsii.String("Maximum"), Period: five, Label: q.Node().Id(),
		}))
	}

	return awscloudwatch.NewDashboard(s.Stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
		Widgets: &[]*[]awscloudwatch.IWidget{
			{graph("Waves per minute by outcome", outcomes...), graph("Wave duration p50 / p99", duration("p50"), duration("p99"))},
			{graph("Decisions by band", search("decisions", "band,author_type", "ora_decisions_total", five)),
				graph("Escalations to a human (approvals requested)", ora("ora_escalations_total", "Sum", five, nil))},
			{graph("Failures by stage", search("failures", "stage,error_code", "ora_stage_failures_total", five)),
				graph("Operator incidents by class", search("incidents", "class", "ora_incidents_total", five))},
			{graph("Cost per 1,000 signals (USD)", modelPer1k, awsPer1k), graph("Dead-letter queue depths", depths...)},
			// The outbox sweep publishes both gauges every 5 minutes.
			{graph("Decisions waiting for a human", ora("ora_escalations_pending", "Maximum", five, nil)),
				graph("Oldest decision waiting for a human (s)", ora("ora_escalation_oldest_age_seconds", "Maximum", five, nil))},
			{graph("Stage latency p99 (s)", awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
				Expression: jsii.String(fmt.Sprintf(`SEARCH('{%s,stage,outcome} MetricName="ora_stage_duration_seconds"', 'p99', 300)`, metricsNamespace)),
				Label:      jsii.String("stage p99"), Period: five,
			}))},
		},
	})
}
