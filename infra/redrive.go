package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// grantRedrive lets the api function redrive the wave's executions (POST
// /waves/{id}/redrive calls states:RedriveExecution): that action only, on
// the executions of the wave's state machine (execArns) only. The Express
// children cannot be redriven; a redriven parent starts them anew.
func grantRedrive(api awslambda.Function, execArns *string) {
	api.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("states:RedriveExecution"),
		Resources: &[]*string{execArns},
	}))
}
