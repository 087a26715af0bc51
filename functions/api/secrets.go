package main

import (
	"context"

	"github.com/ora-runtime/ora/shared/ora"
)

// taskSender completes a task waiting on a token (sfn.Client does).
type taskSender interface {
	SendTaskSuccess(ctx context.Context, token string, output []byte) error
}

// registering is a taskSender that registers each task token it is given
// (read from the ledger, to approve a decision or resume a wave) before it
// sends it on, so the function's logs, metrics, traces and responses
// redact it.
type registering struct {
	next    taskSender
	secrets *ora.Secrets
}

// SendTaskSuccess registers token, then completes its task through next.
// Errors: next's.
func (r registering) SendTaskSuccess(ctx context.Context, token string, output []byte) error {
	r.secrets.AddTaskToken(token)
	return r.next.SendTaskSuccess(ctx, token, output)
}

// registeredKey returns key (the REST profile's token-signing key reader)
// registering each key it reads.
func registeredKey(key func(context.Context) ([]byte, error), secrets *ora.Secrets) func(context.Context) ([]byte, error) {
	return func(ctx context.Context) ([]byte, error) {
		k, err := key(ctx)
		if err == nil {
			secrets.Add("api.token_signing_key", string(k))
		}
		return k, err
	}
}
