package sfn

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssfn "github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/ora-runtime/ora/shared/ora"
)

// RedriveAPI is the call Redriver makes; the SDK's *sfn.Client satisfies it.
type RedriveAPI interface {
	RedriveExecution(ctx context.Context, in *awssfn.RedriveExecutionInput, opts ...func(*awssfn.Options)) (*awssfn.RedriveExecutionOutput, error)
}

var _ RedriveAPI = (*awssfn.Client)(nil)

// Redriver restarts a wave's stopped execution with RedriveExecution: Step
// Functions continues it at the state that did not finish. It satisfies
// operate.Redriver.
type Redriver struct {
	api     RedriveAPI
	machine string
}

// NewRedriver returns a Redriver for the executions of the state machine
// stateMachineARN. Errors: EINVALID (not a state machine ARN).
func NewRedriver(api RedriveAPI, stateMachineARN string) (*Redriver, error) {
	if _, err := ExecutionARN(stateMachineARN, "probe"); err != nil {
		return nil, err
	}
	return &Redriver{api: api, machine: stateMachineARN}, nil
}

// Redrive redrives the execution named waveID. Errors: EINVALID (a name Step
// Functions would refuse), ENOTFOUND (ExecutionDoesNotExist), ECONFLICT
// (ExecutionNotRedrivable, with Step Functions' reason), ETRANSIENT
// (ExecutionLimitExceeded, throttling), EINTERNAL.
func (r *Redriver) Redrive(ctx context.Context, waveID string) error {
	arn, err := ExecutionARN(r.machine, waveID)
	if err != nil {
		return err
	}
	_, err = r.api.RedriveExecution(ctx, &awssfn.RedriveExecutionInput{ExecutionArn: aws.String(arn)})
	var (
		missing *types.ExecutionDoesNotExist
		not     *types.ExecutionNotRedrivable
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &missing):
		return &ora.Error{Code: ora.ENOTFOUND, Message: fmt.Sprintf("wave %s has no execution", waveID), Err: err}
	case errors.As(err, &not):
		return &ora.Error{Code: ora.ECONFLICT, Message: fmt.Sprintf("wave %s cannot be redriven: %s", waveID, aws.ToString(not.Message)), Err: err}
	}
	return fmt.Errorf("sfn: redrive %s: %w", waveID, translate(err))
}
