package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
)

func main() {
	wave := flag.String("state-machine", "", "the wave's state machine ARN (the stack's StateMachineArn output)")
	keep := flag.Int("keep", 2, "the newest versions of each function and child to keep (the current and the previous deploy's)")
	apply := flag.Bool("apply", false, "delete; without it, only print what would be deleted")
	flag.Parse()
	if *wave == "" || *keep < 1 {
		fmt.Fprintln(os.Stderr, "usage: prune-versions -state-machine ARN [-keep 2] [-apply]")
		os.Exit(2)
	}
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "prune-versions:", err)
		os.Exit(1)
	}
	n, err := Prune(ctx, aws2{sfn.NewFromConfig(cfg), lambda.NewFromConfig(cfg)}, *wave, *keep, *apply, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "prune-versions:", err)
		os.Exit(1)
	}
	fmt.Printf("%d version(s)\n", n)
}

// aws2 is Cloud over the Step Functions and Lambda clients.
type aws2 struct {
	sfn    *sfn.Client
	lambda *lambda.Client
}

func (a aws2) Definition(ctx context.Context, arn string) (string, error) {
	out, err := a.sfn.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(arn)})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.Definition), nil
}

func (a aws2) RunningDefinitions(ctx context.Context, arn string) ([]string, error) {
	var defs []string
	p := sfn.NewListExecutionsPaginator(a.sfn, &sfn.ListExecutionsInput{StateMachineArn: aws.String(arn), StatusFilter: sfntypes.ExecutionStatusRunning})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, ex := range page.Executions {
			d, err := a.sfn.DescribeStateMachineForExecution(ctx, &sfn.DescribeStateMachineForExecutionInput{ExecutionArn: ex.ExecutionArn})
			if err != nil {
				return nil, err
			}
			defs = append(defs, aws.ToString(d.Definition))
		}
	}
	return defs, nil
}

func (a aws2) Versions(ctx context.Context, arn string) ([]int, error) {
	var out []int
	if isStateMachine(arn) {
		in := &sfn.ListStateMachineVersionsInput{StateMachineArn: aws.String(arn)}
		for {
			page, err := a.sfn.ListStateMachineVersions(ctx, in)
			if err != nil {
				return nil, err
			}
			for _, v := range page.StateMachineVersions {
				if _, n, ok := unqualified(aws.ToString(v.StateMachineVersionArn)); ok {
					out = append(out, n)
				}
			}
			if page.NextToken == nil {
				return out, nil
			}
			in.NextToken = page.NextToken
		}
	}
	p := lambda.NewListVersionsByFunctionPaginator(a.lambda, &lambda.ListVersionsByFunctionInput{FunctionName: aws.String(arn)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, v := range page.Versions {
			if n, err := strconv.Atoi(aws.ToString(v.Version)); err == nil { // $LATEST is not a number
				out = append(out, n)
			}
		}
	}
	return out, nil
}

func (a aws2) Delete(ctx context.Context, arn string, version int) error {
	if isStateMachine(arn) {
		_, err := a.sfn.DeleteStateMachineVersion(ctx, &sfn.DeleteStateMachineVersionInput{StateMachineVersionArn: aws.String(arn + ":" + strconv.Itoa(version))})
		return err
	}
	_, err := a.lambda.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String(arn), Qualifier: aws.String(strconv.Itoa(version))})
	return err
}

func isStateMachine(arn string) bool { return strings.Contains(arn, ":stateMachine:") }
