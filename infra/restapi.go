package main

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// apiRoute is one authorized route of the API and the scope it needs
// (bare or prefixed with the resource server "ora/").
type apiRoute struct{ method, path, scope string }

// apiRoutes are the routes behind a bearer token, the same in both API
// profiles; POST /webhooks/{source} is the one open route (each source
// verifies its signature).
var apiRoutes = []apiRoute{
	{"GET", "/signals/{id}", "ora/orientation.read"},
	{"GET", "/waves/{id}", "ora/orientation.read"},
	{"POST", "/decisions/{id}/approve", "ora/ora.approve"},
	{"POST", "/decisions/{id}/reject", "ora/ora.approve"},
	{"GET", "/incidents", "ora/ora.read"},
	{"GET", "/incidents/{id}", "ora/ora.read"},
	{"POST", "/waves/{id}/resume", "ora/ora.operate"},
	{"GET", "/motor/versions", "ora/ora.read"},
	{"POST", "/motor/versions", "ora/ora.operate"},
	{"POST", "/motor/versions/{version}/promote", "ora/ora.operate"},
	{"POST", "/motor/rollback", "ora/ora.operate"},
	{"POST", "/motor/versions/{version}/canary", "ora/ora.operate"},
	{"GET", "/motor/waves", "ora/ora.read"},
	{"GET", "/motor/patterns", "ora/ora.read"},
	{"POST", "/motor/patterns/{id}/promote", "ora/ora.operate"},
	{"POST", "/waves/{id}/resolve", "ora/ora.operate"},
	{"POST", "/incidents/{id}/classification", "ora/ora.operate"},
	{"POST", "/waves/{id}/redrive", "ora/ora.operate"},
	// The orientation routes of seed 002 §12.1 (functions/api serves them).
	{"GET", "/api/orientation/profile/current", "ora/orientation.read"},
	{"POST", "/api/orientation/proposals", "ora/orientation.propose"},
	{"POST", "/api/orientation/proposals/{id}/approve", "ora/orientation.approve"},
	{"POST", "/api/orientation/proposals/{id}/reject", "ora/orientation.approve"},
	{"GET", "/api/orientation/packets/{wave_id}", "ora/orientation.read"},
	{"GET", "/api/orientation/feedback/{wave_id}", "ora/orientation.read"},
	// Feedback, verification and the guard's admin settings.
	{"POST", "/api/orientation/feedback/{wave_id}", "ora/orientation.propose"},
	{"POST", "/api/orientation/packets/{wave_id}/verify", "ora/orientation.read"},
	{"GET", "/api/orientation/admin", "ora/orientation.read"},
	{"PUT", "/api/orientation/admin", "ora/orientation.admin"},
}

// restAPI is the REST API profile (context ora:api=rest): an API Gateway
// REST API (v1) whose authorized routes go through a Lambda TOKEN
// authorizer, the api function itself (shared/apigw), which verifies HS256
// bearer tokens signed with the generated ApiTokenKey secret
// (shared/apitoken); the api function checks each route's scope from the
// token's claims, as it does behind the HTTP API's JWT authorizer. No
// Cognito: LocalStack's free plan has REST APIs and Lambda but neither HTTP
// APIs nor Cognito. It returns the API's base URL, its 5xx metric and the
// key's secret.
func restAPI(stack awscdk.Stack, apiFn, webhookFn awslambda.Function, throttles APIThrottles) (*string, awscloudwatch.IMetric, awssecretsmanager.Secret) {
	key := awssecretsmanager.NewSecret(stack, jsii.String("ApiTokenKey"), &awssecretsmanager.SecretProps{
		Description:          jsii.String("ora REST API profile: the HMAC-SHA256 key bearer tokens are signed with (shared/apitoken; mint one with go run ./localstack/provision -mint)"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{PasswordLength: jsii.Number(48), ExcludePunctuation: jsii.Bool(true)},
	})
	cdknag.NagSuppressions_AddResourceSuppressions(key, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-SMG4"),
		Reason: jsii.String("Rotating the token key invalidates every token issued; it is rotated by hand with the tokens, not by a rotation Lambda."),
	}}, nil)
	key.GrantRead(apiFn, nil)
	apiFn.AddEnvironment(jsii.String("ORA_API_TOKEN_SECRET_ARN"), key.SecretArn(), nil)

	api := awsapigateway.NewRestApi(stack, jsii.String("RestApi"), &awsapigateway.RestApiProps{
		Description: jsii.String("ora: webhooks, waves, approvals (REST API profile)"),
		// No account-wide CloudWatch role (AWS::ApiGateway::Account): the
		// profile deploys only what LocalStack's free plan runs.
		CloudWatchRole: jsii.Bool(false),
		EndpointTypes:  &[]awsapigateway.EndpointType{awsapigateway.EndpointType_REGIONAL},
		DeployOptions: &awsapigateway.StageOptions{
			StageName:            jsii.String("prod"),
			ThrottlingRateLimit:  jsii.Number(throttles.Reads.Rate),
			ThrottlingBurstLimit: jsii.Number(throttles.Reads.Burst),
			// The webhook route has limits of its own (ora:apiThrottles).
			MethodOptions: &map[string]*awsapigateway.MethodDeploymentOptions{
				"/webhooks/{source}/POST": {
					ThrottlingRateLimit:  jsii.Number(throttles.Webhooks.Rate),
					ThrottlingBurstLimit: jsii.Number(throttles.Webhooks.Burst),
				},
			},
		},
	})
	authorizer := awsapigateway.NewTokenAuthorizer(stack, jsii.String("TokenAuthorizer"), &awsapigateway.TokenAuthorizerProps{
		Handler:         apiFn,
		IdentitySource:  jsii.String("method.request.header.Authorization"),
		ResultsCacheTtl: awscdk.Duration_Minutes(jsii.Number(5)),
	})
	resource := func(path string) awsapigateway.IResource {
		return api.Root().ResourceForPath(jsii.String(strings.TrimPrefix(path, "/")))
	}
	resource("/webhooks/{source}").AddMethod(jsii.String("POST"), awsapigateway.NewLambdaIntegration(webhookFn, nil), nil)
	reads := awsapigateway.NewLambdaIntegration(apiFn, nil)
	for _, r := range apiRoutes {
		resource(r.path).AddMethod(jsii.String(r.method), reads, &awsapigateway.MethodOptions{
			Authorizer: authorizer, AuthorizationType: awsapigateway.AuthorizationType_CUSTOM,
		})
	}
	cdknag.NagSuppressions_AddResourceSuppressions(api, &[]*cdknag.NagPackSuppression{
		{Id: jsii.String("AwsSolutions-APIG1"), Reason: jsii.String("REST API profile for LocalStack: access logs need the account-wide API Gateway CloudWatch role, which the profile does not deploy; the http profile logs every request.")},
		{Id: jsii.String("AwsSolutions-APIG6"), Reason: jsii.String("REST API profile for LocalStack: execution logs need the account-wide API Gateway CloudWatch role; the functions log each request as JSON.")},
		{Id: jsii.String("AwsSolutions-APIG2"), Reason: jsii.String("The functions validate every request body against ora's schemas and answer 400 naming the field.")},
		{Id: jsii.String("AwsSolutions-APIG3"), Reason: jsii.String("REST API profile for LocalStack: no WAF (not in its free plan); throttled at the stage.")},
		{Id: jsii.String("AwsSolutions-APIG4"), Reason: jsii.String("Only POST /webhooks/{source} is open: webhook providers cannot present a bearer token; every delivery is authenticated by its source's signature inside observe-webhook.")},
		{Id: jsii.String("AwsSolutions-COG4"), Reason: jsii.String("REST API profile: a Lambda TOKEN authorizer verifies HS256 bearer tokens; Cognito is not in LocalStack's free plan.")},
	}, jsii.Bool(true))
	return api.Url(), api.MetricServerError(&awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum")}), key
}
