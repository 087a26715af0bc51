package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
)

// sourcesTTL is how long a container keeps the webhook sources it read from
// Secrets Manager before reading them again: a source added to the secret
// answers within this long, with one secret read per container per TTL.
const sourcesTTL = 60 * time.Second

// refreshing is the webhook intake over sources that change: it rebuilds its
// observer from the secret once the last read is older than ttl. A failed
// read keeps the sources it has (and is tried again a ttl later); with none
// yet, the request fails as transient.
type refreshing struct {
	ttl   time.Duration
	now   func() time.Time
	read  func(ctx context.Context) (string, error)
	build func(raw string) (webhooks, error)
	log   *slog.Logger

	mu  sync.Mutex
	raw string
	cur webhooks
	at  time.Time
}

func (r *refreshing) current(ctx context.Context) (webhooks, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil && r.now().Sub(r.at) < r.ttl {
		return r.cur, nil
	}
	raw, err := r.read(ctx)
	if err == nil && (r.cur == nil || raw != r.raw) {
		var next webhooks
		if next, err = r.build(raw); err == nil {
			r.cur, r.raw = next, raw
		}
	}
	if err != nil {
		if r.cur == nil {
			return nil, ora.Transient(err, "read the webhook sources")
		}
		r.log.ErrorContext(ctx, "webhook sources not refreshed; keeping the previous ones", "err", err)
	}
	r.at = r.now()
	return r.cur, nil
}

// Webhook refreshes the sources when they are stale, then hands the delivery
// to the observer built from them.
func (r *refreshing) Webhook(ctx context.Context, source string, header http.Header, body []byte) (observe.Receipt, error) {
	w, err := r.current(ctx)
	if err != nil {
		return observe.Receipt{}, fmt.Errorf("observe-webhook: %w", err)
	}
	return w.Webhook(ctx, source, header, body)
}
