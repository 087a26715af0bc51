package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
)

// builtFrom is an intake that answers with the secret it was built from.
type builtFrom string

func (b builtFrom) Webhook(context.Context, string, http.Header, []byte) (observe.Receipt, error) {
	return observe.Receipt{SignalID: string(b)}, nil
}

// The sources are read again once the TTL has passed: a source added to the
// secret is served by warm containers within the TTL, and a failed read keeps
// the previous sources.
func TestSourcesRefreshAfterTTL(t *testing.T) {
	now := time.Unix(0, 0)
	secret, readErr, reads := "v1", error(nil), 0
	r := &refreshing{
		ttl: time.Minute, now: func() time.Time { return now },
		log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		read: func(context.Context) (string, error) {
			reads++
			return secret, readErr
		},
		build: func(raw string) (webhooks, error) {
			if raw == "bad" {
				return nil, ora.Invalid("sources", "bad")
			}
			return builtFrom(raw), nil
		},
	}
	serves := func(want string) {
		t.Helper()
		rec, err := r.Webhook(context.Background(), "demo", nil, nil)
		if err != nil || rec.SignalID != want {
			t.Fatalf("served by %q (%v), want %q", rec.SignalID, err, want)
		}
	}
	steps := []struct {
		name    string
		advance time.Duration
		secret  string
		err     error
		want    string
		reads   int
	}{
		{"first request reads the secret", 0, "v1", nil, "v1", 1},
		{"within the TTL the cached sources serve", 30 * time.Second, "v2", nil, "v1", 1},
		{"past the TTL the new sources serve", 31 * time.Second, "v2", nil, "v2", 2},
		{"a failed read keeps the previous sources", 61 * time.Second, "v3", errors.New("throttled"), "v2", 3},
		{"a secret that does not parse keeps the previous sources", 61 * time.Second, "bad", nil, "v2", 4},
		{"the next good read is used", 61 * time.Second, "v3", nil, "v3", 5},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			now = now.Add(s.advance)
			secret, readErr = s.secret, s.err
			serves(s.want)
			if reads != s.reads {
				t.Errorf("secret reads: %d, want %d", reads, s.reads)
			}
		})
	}
	// With no sources yet, a failed read fails the request as transient.
	empty := &refreshing{ttl: time.Minute, now: time.Now, log: r.log,
		read:  func(context.Context) (string, error) { return "", errors.New("denied") },
		build: r.build}
	if _, err := empty.Webhook(context.Background(), "demo", nil, nil); ora.ErrorCode(err) != ora.ETRANSIENT {
		t.Errorf("no sources and a failed read: %v, want a transient error", err)
	}
}
