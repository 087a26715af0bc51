// Command infra is ora's AWS CDK app: `cdk deploy` from this folder (or `make
// deploy` from the repository root) deploys the whole stack. It is
// environment-agnostic and configured through CDK context (see cdk.json and
// the README's "Deploying to AWS").
//
// The app reads cdk.json's context itself, so running it directly (`make
// synth`) synthesizes exactly what `cdk deploy` deploys. Before building the
// stack it checks that every function's binary under build/ exists and is
// newer than the source; if not, it stops with one line naming the command.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

func main() {
	ctx, err := CDKJSONContext("cdk.json")
	if err != nil {
		fmt.Fprintln(os.Stderr, "ora: run the CDK app from infra/:", err)
		os.Exit(1)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	cfg := ConfigFromContext(app)
	if err := CheckBuilds(cfg.Root, FunctionNames(cfg.Root)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		jsii.Close()
		os.Exit(1)
	}
	NewOraStack(app, "Ora", cfg)
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	app.Synth(nil)
	jsii.Close()
}
