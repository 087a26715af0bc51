package embedded

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/stepfn"
)

// TestRetentionSweepsAFinishedWave runs waves to their end, then sweeps as
// ora dev's sweeper would a little past the retention: the facts, packets,
// jobs files and executions go; the signal, decision, evidence and verdict
// stay; replaying the packet says when it expired; the ledger file shrinks.
func TestRetentionSweepsAFinishedWave(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t, t.TempDir())
	r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	var ids []string
	for _, key := range []string{"keep-1", "keep-2", "keep-3"} {
		rec := send(t, r, srv.URL, key, `{"confidence":"high"}`)
		if st := waitWave(t, r, rec.WaveID); st != "SUCCEEDED" {
			t.Fatalf("wave %s: %s", rec.WaveID, st)
		}
		ids = append(ids, rec.WaveID)
	}
	wave := ids[0]
	if v, err := orient.NewService(r.ledger, r.orientOptions()).Verify(ctx, wave); err != nil || !v.Match {
		t.Fatalf("Verify before the retention = %+v, %v; want a match", v, err)
	}
	if staged, _ := r.jobs().Staged(ctx, wave); !staged {
		t.Fatal("the wave's jobs file is missing before the retention")
	}
	settle(t, r)
	before := fileBytes(t, cfg.Store.SQLitePath)

	later := time.Now().Add(time.Duration(cfg.Retention.Executions) + time.Hour)
	r.sweepOnce(ctx, cfg.Retention, later)
	r.expireFiles(cfg.Retention, later)

	kinds := map[ora.EntryKind]int{}
	es, err := r.ledger.Entries(ctx, wave)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		kinds[e.Kind]++
	}
	for _, tc := range []struct {
		kind ora.EntryKind
		kept bool
	}{
		{ora.KindSignalReceived, true},
		{ora.KindReasonerDecision, true},
		{ora.KindExecutionEvidence, true},
		{ora.KindFinalVerdict, true},
		{ora.KindObservedFact, false},
		{ora.KindOrientationPacket, false},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			if got := kinds[tc.kind] > 0; got != tc.kept {
				t.Errorf("%s entries after the sweep: %d, want kept %v", tc.kind, kinds[tc.kind], tc.kept)
			}
		})
	}
	svc := orient.NewService(r.ledger, r.orientOptions())
	_, err = svc.Verify(ctx, wave)
	if ora.ErrorCode(err) != ora.ENOTFOUND || !strings.Contains(err.Error(), "expired at ") {
		t.Errorf("Verify after the retention: %v; want not found, saying when the packet expired", err)
	}
	_, err = svc.Packet(ctx, wave)
	if ora.ErrorCode(err) != ora.ENOTFOUND || !strings.Contains(err.Error(), "expired at ") {
		t.Errorf("Packet after the retention: %v; want not found, saying when the packet expired", err)
	}
	if staged, _ := r.jobs().Staged(ctx, wave); staged {
		t.Error("the wave's jobs file is still there after the retention")
	}
	if _, err := os.Stat(filepath.Join(r.jobs().Dir, JobsBucket, filepath.Dir(orient.JobsKey(wave)))); !os.IsNotExist(err) {
		t.Errorf("the wave's jobs folder: %v, want it removed", err)
	}
	if _, err := r.engine.DescribeExecution(ctx, r.executionArn(wave)); stepfn.ErrorCode(err) != stepfn.CodeExecutionDoesNotExist {
		t.Errorf("the wave's execution after the retention: %v, want it swept", err)
	}
	// The outbox must not take a swept wave for one never started.
	sw, err := r.observer.StartMissing(ctx, time.Now().Add(-time.Hour), time.Now().Add(time.Minute))
	if err != nil || len(sw.Started) != 0 {
		t.Errorf("the outbox after the sweep: started %v, %v; want none started again", sw.Started, err)
	}
	settle(t, r)
	if after := fileBytes(t, cfg.Store.SQLitePath); after >= before {
		t.Errorf("the ledger is %d bytes after the sweep, %d before: want it smaller", after, before)
	}
}

// TestRetentionConfig checks the retention keys' validation.
func TestRetentionConfig(t *testing.T) {
	tests := []struct {
		name   string
		change func(*RetentionConfig)
		field  string // "" when valid
	}{
		{"the defaults", func(*RetentionConfig) {}, ""},
		{"everything kept", func(c *RetentionConfig) { c.Facts, c.Packets, c.Jobs, c.Executions = 0, 0, 0, 0 }, ""},
		{"negative", func(c *RetentionConfig) { c.Jobs = -1 }, "retention.jobs"},
		{"under a minute", func(c *RetentionConfig) { c.Executions = Duration(time.Second) }, "retention.executions"},
		{"packets outlive their facts", func(c *RetentionConfig) { c.Packets = c.Facts + Duration(time.Hour) }, "retention.packets"},
		{"packets kept, facts not", func(c *RetentionConfig) { c.Packets = 0 }, "retention.packets"},
		{"a sweep too often", func(c *RetentionConfig) { c.SweepEvery = Duration(time.Millisecond) }, "retention.sweep_every"},
		{"no batch", func(c *RetentionConfig) { c.SweepBatch = 0 }, "retention.sweep_batch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultRetention()
			tc.change(&c)
			err := c.validate()
			var e *ora.Error
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("validate: %v, want nil", err)
			case tc.field != "" && (!errors.As(err, &e) || e.Field != tc.field):
				t.Errorf("validate: %v, want an error on %s", err, tc.field)
			}
		})
	}
}

// settle truncates the ledger's WAL, copying its pages into the file, trying
// again while readers keep it busy (TruncateWAL gives up after 50 ms).
func settle(t *testing.T, r *Runtime) {
	t.Helper()
	var err error
	for range 50 {
		if err = r.ledgerDB.TruncateWAL(context.Background()); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal(err)
}

func fileBytes(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
