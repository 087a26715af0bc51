package act

import (
	"context"
	"encoding/json"

	"github.com/ora-runtime/ora/shared/idempotency"
)

// Idempotent adapts an idempotency.Idempotency to Once: each action runs once
// per key while its record lives, and a concurrent caller gets an ETRANSIENT
// *idempotency.InProgressError.
func Idempotent(i *idempotency.Idempotency) Once {
	return func(ctx context.Context, key string, payload []byte, fn func(context.Context) (Receipt, error)) (Receipt, error) {
		return idempotency.Do(ctx, i, key, json.RawMessage(payload), fn)
	}
}
