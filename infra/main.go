// Command infra is ora's AWS CDK app: `cdk deploy` from this folder (or `make
// deploy` from the repository root) deploys the whole stack. It is
// environment-agnostic and configured through CDK context (see cdk.json and
// the README's "Deploying to AWS").
package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	NewOraStack(app, "Ora", ConfigFromContext(app))
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	app.Synth(nil)
}
