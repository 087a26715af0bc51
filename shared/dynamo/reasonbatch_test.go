package dynamo

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Reason batches on DynamoDB Local: concurrent joins agree on one batch and
// one leader, a full or closed batch makes the next signal open another, a
// signal cannot join a batch once it is claimed, and only the claimant
// finishes it.
func TestReasonBatches(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := at
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	c, name := newTable(t)
	l := New(c, name, func(o *Options) { o.Now = clock })

	t.Run("concurrent joins, one batch, one leader", func(t *testing.T) {
		var wg sync.WaitGroup
		got := make([]ora.Batch, 8)
		errs := make([]error, 8)
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], errs[i] = l.JoinBatch(ctx, "k1", fmt.Sprintf("s%d", i), time.Second, 10)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("join s%d: %v", i, err)
			}
			if got[i].ID != got[0].ID || got[i].Leader != got[0].Leader || !got[i].ClosesAt.Equal(at.Add(time.Second)) {
				t.Errorf("s%d joined %+v, s0 %+v: want one batch", i, got[i], got[0])
			}
		}
		set(at.Add(time.Second))
		members, err := l.ClaimBatch(ctx, got[0].ID, got[0].Leader, time.Minute)
		if err != nil || len(members) != 8 {
			t.Fatalf("claim: %v members, %v; want all 8", members, err)
		}
		set(at)
	})
	t.Run("a full batch opens the next", func(t *testing.T) {
		a, _ := l.JoinBatch(ctx, "k2", "a", time.Second, 2)
		b, _ := l.JoinBatch(ctx, "k2", "b", time.Second, 2)
		c, err := l.JoinBatch(ctx, "k2", "c", time.Second, 2)
		if err != nil || a.ID != b.ID || c.ID == a.ID || c.Leader != "c" {
			t.Errorf("batches %s %s %s (leader of the third %q), %v; want a and b together, c leading another", a.ID, b.ID, c.ID, c.Leader, err)
		}
	})
	t.Run("a closed batch opens the next", func(t *testing.T) {
		a, _ := l.JoinBatch(ctx, "k3", "a", time.Second, 10)
		set(at.Add(time.Second))
		defer set(at)
		b, err := l.JoinBatch(ctx, "k3", "b", time.Second, 10)
		if err != nil || b.ID == a.ID || b.Leader != "b" {
			t.Errorf("after the window: batch %+v, %v; want a new one led by b", b, err)
		}
	})
	t.Run("no joining a claimed batch", func(t *testing.T) {
		a, _ := l.JoinBatch(ctx, "k4", "a", time.Second, 10)
		// A claimant whose clock runs ahead claims while the window is
		// still open here.
		if _, err := l.ClaimBatch(ctx, a.ID, "a", time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := l.JoinBatch(ctx, "k4", "b", time.Second, 10); ora.ErrorCode(err) != ora.ECONFLICT {
			t.Errorf("join after the claim: %v, want ECONFLICT (reason alone)", err)
		}
		if _, err := l.ClaimBatch(ctx, a.ID, "b", time.Minute); ora.ErrorCode(err) != ora.ECONFLICT {
			t.Errorf("second claimant: %v, want ECONFLICT", err)
		}
		if err := l.FinishBatch(ctx, a.ID, "b", ""); ora.ErrorCode(err) != ora.ECONFLICT {
			t.Errorf("finish by a non-claimant: %v, want ECONFLICT", err)
		}
		if err := l.FinishBatch(ctx, a.ID, "a", "model throttled"); err != nil {
			t.Fatal(err)
		}
		st, err := l.BatchState(ctx, a.ID)
		if err != nil || st.Claimant != "a" || !st.Finished || st.Failed != "model throttled" || !st.LeaseUntil.Equal(at.Add(time.Minute)) {
			t.Errorf("state %+v, %v; want finished by a, failed", st, err)
		}
		if _, err := l.ClaimBatch(ctx, a.ID, "a", time.Minute); ora.ErrorCode(err) != ora.ECONFLICT {
			t.Errorf("claim of a finished batch: %v, want ECONFLICT", err)
		}
	})
	t.Run("unclaimed", func(t *testing.T) {
		st, err := l.BatchState(ctx, "no-such-batch")
		if err != nil || st != (ora.BatchState{}) {
			t.Errorf("state %+v, %v; want the zero state", st, err)
		}
		members, err := l.ClaimBatch(ctx, "empty", "x", time.Minute)
		if err != nil || len(members) != 0 {
			t.Errorf("claim of an empty batch: %v, %v", members, err)
		}
	})
}
