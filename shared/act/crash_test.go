package act_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/idempotency"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/sqlite"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// keyLog is a target that logs the idempotency key of every request and
// applies each key once, as a target honouring the key does.
type keyLog struct {
	mu      sync.Mutex
	keys    []string
	applied map[string]int
}

func (k *keyLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	k.mu.Lock()
	defer k.mu.Unlock()
	key := r.Header.Get(act.HeaderIdempotencyKey)
	k.keys = append(k.keys, key)
	if k.applied == nil {
		k.applied = map[string]int{}
	}
	if k.applied[key] == 0 {
		k.applied[key] = 1
	}
	w.WriteHeader(http.StatusOK)
}

func (k *keyLog) snapshot() ([]string, int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, v := range k.applied {
		n += v
	}
	return append([]string(nil), k.keys...), n
}

// clock is a settable time for the idempotency records.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

func httpRegistry(t *testing.T, db *sqlite.DB, target string, timeoutSeconds int) *act.Registry {
	t.Helper()
	u, _ := url.Parse(target)
	cfg := act.Config{HTTP: act.HTTPConfig{AllowedHosts: []string{u.Host}, SigningSecret: secret, TimeoutSeconds: timeoutSeconds}}
	return act.Standard(cfg, act.NewLogNotify(quiet), act.Folder{Root: t.TempDir()}, db, nil)
}

// A process that died while an action ran (the request went out, the result
// was never saved) leaves its lock. The next run meets the lock until it
// expires, after the action's timeout plus the margin (not 15 minutes), then
// runs the action again under the same idempotency key: a target honouring
// the key applies it once, and the wave ends executed with its evidence.
func TestActAfterACrashRerunsUnderTheSameKeyOnceTheLockExpires(t *testing.T) {
	db := acttest.DB(t)
	store := sqlite.NewIdempotencyStore(db)
	clk := &clock{t: time.Now()}
	once := act.Idempotent(idempotency.New(store, func(o *idempotency.Options) { o.Now = clk.Now }))
	log := &keyLog{}
	srv := httptest.NewServer(log)
	t.Cleanup(srv.Close)
	reg := httpRegistry(t, db, srv.URL, 5)
	d := acttest.Decision("d1", "s1", fullScope, ora.Action{Type: act.TypeHTTPRequest, Parameters: acttest.Params(t, map[string]any{"url": srv.URL + "/hook", "body": "{}"})})
	acttest.Record(t, db, d)

	// The run that dies: its action goes out, then the process stops for
	// good before the result is saved (the goroutine never returns).
	sent := make(chan struct{})
	started := time.Now()
	go func() {
		_, _ = act.New(db, reg, dying(once, sent), func(o *act.Options) { o.Log = quiet }).Act(context.Background(), "s1", "d1")
	}()
	<-sent
	lock, err := store.Get(context.Background(), "d1/0")
	if err != nil || lock.Status != ora.IdempotencyInProgress {
		t.Fatalf("lock %+v, %v; want in progress", lock, err)
	}
	if ttl := lock.InProgressExpiresAt.Sub(started); ttl < 5*time.Second+act.LockMargin-time.Second || ttl > 5*time.Second+act.LockMargin+time.Second {
		t.Errorf("lock lasts %v, want the action's timeout 5s plus the margin %v", ttl, act.LockMargin)
	}

	svc := act.New(db, reg, once, func(o *act.Options) { o.Log = quiet })
	_, err = svc.Act(context.Background(), "s1", "d1")
	var te *taskerr.TransientError
	if !errors.As(taskerr.From(err), &te) {
		t.Fatalf("retry while the lock holds: %v, want a TransientError (Act's Retry)", err)
	}
	clk.Add(5*time.Second + act.LockMargin + time.Second)
	res, err := svc.Act(context.Background(), "s1", "d1")
	if err != nil || res.Outcome != act.OutcomeSuccess {
		t.Fatalf("retry after the lock expired: %+v, %v; want success", res, err)
	}
	keys, applied := log.snapshot()
	if len(keys) != 2 || keys[0] != "d1/0" || keys[1] != "d1/0" || applied != 1 {
		t.Errorf("target saw keys %v (applied %d); want d1/0 twice, applied once", keys, applied)
	}
	st, _ := db.Decision(context.Background(), "d1")
	if st.Status != ora.StatusExecuted {
		t.Errorf("decision %s, want executed", st.Status)
	}
}

// Where the outcome cannot be known (the request went out, no answer came
// back) the evidence says unknown and the decision is unknown, and the error
// is OutcomeUnknown (the operator asks a human); a request that never left
// (nobody listens) is a failure, nothing done.
func TestActOutcomeUnknownVersusNothingSent(t *testing.T) {
	hang := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(silent.Close)
	t.Cleanup(func() { close(hang) }) // runs first: the handler returns, Close does not wait
	closed := closedURL(t)

	tests := []struct {
		name        string
		url         string
		wantErr     func(error) bool
		wantOutcome string
		wantStatus  ora.DecisionStatus
	}{
		{"no answer", silent.URL, func(err error) bool { var e *taskerr.OutcomeUnknown; return errors.As(err, &e) }, act.OutcomeUnknown, ora.StatusUnknown},
		{"nobody listens", closed, func(err error) bool { var e *taskerr.ActionFailed; return errors.As(err, &e) }, act.OutcomeFailure, ora.StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := acttest.DB(t)
			svc := act.New(db, httpRegistry(t, db, tt.url, 1), acttest.Once(db), func(o *act.Options) { o.Log = quiet })
			d := acttest.Decision("d1", "s1", fullScope, ora.Action{Type: act.TypeHTTPRequest, Parameters: acttest.Params(t, map[string]any{"url": tt.url + "/hook", "body": "{}"})})
			acttest.Record(t, db, d)
			_, err := svc.Act(context.Background(), "s1", "d1")
			if !tt.wantErr(err) {
				t.Fatalf("Act: %T %v", err, err)
			}
			w, err := act.LoadWave(context.Background(), db, "s1", "d1")
			if err != nil {
				t.Fatal(err)
			}
			if ev := w.Evidence[0]; ev.Outcome != tt.wantOutcome {
				t.Errorf("evidence %+v, want outcome %s", ev, tt.wantOutcome)
			}
			if st, _ := db.Decision(context.Background(), "d1"); st.Status != tt.wantStatus {
				t.Errorf("decision %s, want %s", st.Status, tt.wantStatus)
			}
			// A retry of the task answers the same, and sends nothing more.
			if _, err := svc.Act(context.Background(), "s1", "d1"); err == nil {
				t.Errorf("retry succeeded")
			}
		})
	}
}

// closedURL is the base URL of a port nobody listens on: a request to it
// never leaves.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "http://" + l.Addr().String()
}

// clockedOnce is an act.Once over db's idempotency records whose clock the
// test moves (to expire a dead run's lock).
func clockedOnce(db *sqlite.DB) (act.Once, *clock) {
	clk := &clock{t: time.Now()}
	return act.Idempotent(idempotency.New(sqlite.NewIdempotencyStore(db), func(o *idempotency.Options) { o.Now = clk.Now })), clk
}

// dying wraps once as a process that dies mid-action: the action runs, ran
// is closed, and the result is never saved (the call never returns).
func dying(once act.Once, ran chan struct{}) act.Once {
	return func(ctx context.Context, key string, payload []byte, fn func(context.Context) (act.Receipt, error)) (act.Receipt, error) {
		return once(ctx, key, payload, func(ctx context.Context) (act.Receipt, error) {
			_, _ = fn(ctx)
			close(ran)
			select {} // the process is gone
		})
	}
}
