package stepfn

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
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
