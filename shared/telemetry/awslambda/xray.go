package awslambda

import (
	"context"
	"errors"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-xray-sdk-go/instrumentation/awsv2"
	"github.com/aws/aws-xray-sdk-go/strategy/ctxmissing"
	"github.com/aws/aws-xray-sdk-go/xray"
	"github.com/aws/aws-xray-sdk-go/xraylog"
)

func init() {
	// SDK calls made while a function starts (reading a secret) have no
	// segment yet: they are not traced, and that is no error. The SDK's own
	// text log would break the one-JSON-object-per-line rule: it keeps quiet.
	_ = xray.Configure(xray.Config{ContextMissingStrategy: ctxmissing.NewDefaultIgnoreErrorStrategy()})
	xray.SetLogger(xraylog.NewDefaultLogger(io.Discard, xraylog.LogLevelError))
}

// Instrument makes every client built from cfg (DynamoDB, Bedrock, SNS, S3,
// Secrets Manager, Step Functions) record each call as an X-Ray subsegment of
// the current stage's subsegment. Call it once, after LoadDefaultConfig and
// before building clients.
func Instrument(cfg *aws.Config) { awsv2.AWSV2Instrumentor(&cfg.APIOptions) }

// Trace opens an X-Ray subsegment named for the stage and annotates it with
// the wave's correlation keys (wave_id, signal_id, decision_id, ...), so a
// trace can be found by wave id: annotation.wave_id = "sig_...". The
// annotations, and the error the subsegment records when the stage fails,
// pass through Secrets first.
func Trace(ctx context.Context, stage string, annotations map[string]string) (context.Context, func(error)) {
	ctx, seg := xray.BeginSubsegment(ctx, stage)
	if seg == nil {
		return ctx, func(error) {}
	}
	for k, v := range annotations {
		_ = seg.AddAnnotation(k, Secrets.RedactString(v))
	}
	return ctx, func(err error) { seg.Close(redactErr(err)) }
}

// redactErr returns err, or an error of the same text less the registered
// secrets when it holds one (X-Ray records the message as the exception).
func redactErr(err error) error {
	if err == nil {
		return nil
	}
	if msg := Secrets.RedactString(err.Error()); msg != err.Error() {
		return errors.New(msg)
	}
	return err
}
