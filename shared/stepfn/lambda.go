package stepfn

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/google/uuid"
)

// LambdaHandler returns a Handler that runs fn, a function of any signature
// aws-lambda-go's lambda.Start accepts, decoding and encoding exactly as the
// Lambda runtime does. Unlike lambda.NewHandler(fn) registered directly, it is
// safe for the concurrent invocations a Map or Parallel state makes:
// aws-lambda-go's handler hands back bytes from an output buffer it reuses for
// its next call, which is harmless on Lambda (one invocation at a time) but
// lets concurrent calls overwrite each other's output. LambdaHandler builds
// the handler per invocation, so no two calls share a buffer.
func LambdaHandler(fn any) Handler { return lambdaHandler{fn} }

type lambdaHandler struct{ fn any }

func (h lambdaHandler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return lambda.NewHandler(h.fn).Invoke(ctx, payload)
}

// lambdaInvokeResponse wraps a function's output as the response of the
// arn:aws:states:::lambda:invoke integration, as AWS returns it: the output is
// the Payload beside StatusCode, ExecutedVersion and the SDK's metadata.
func lambdaInvokeResponse(out []byte) ([]byte, *stateError) {
	v, serr := handlerOutput(out)
	if serr != nil {
		return nil, serr
	}
	return marshal(map[string]any{
		"ExecutedVersion": "$LATEST",
		"Payload":         v,
		"SdkHttpMetadata": map[string]any{
			"HttpHeaders":    map[string]any{"Content-Type": "application/json", "X-Amz-Executed-Version": "$LATEST"},
			"HttpStatusCode": int64(200),
		},
		"SdkResponseMetadata": map[string]any{"RequestId": uuid.NewString()},
		"StatusCode":          int64(200),
	}), nil
}
