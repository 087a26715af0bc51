package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/stepfn"
)

// TestSweep writes expiring and kept records of every class at t0 and sweeps
// at several times after it: each class goes at its own expiry, kept entries
// stay, a packet leaves its digest behind, and the file gives back the space.
func TestSweep(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clock := t0
	db := openDB(t, func(o *Options) {
		o.Now = func() time.Time { return clock }
		o.Retention = ora.Retention{ora.KindObservedFact: time.Hour, ora.KindOrientationPacket: time.Hour}
	})
	if mode, err := db.AutoVacuum(ctx); err != nil || mode != "incremental" {
		t.Fatalf("AutoVacuum = %q, %v; want incremental on a new file", mode, err)
	}
	big := strings.Repeat("x", 20_000)
	const waves = 40
	var packetDigest string
	for i := range waves {
		sig := fmt.Sprintf("sig-%02d", i)
		for _, e := range []struct {
			kind ora.EntryKind
			q    string
			body any
		}{
			{ora.KindObservedFact, "job/facts-000", map[string]string{"fact": big}},
			{ora.KindOrientationPacket, "", map[string]string{"packet": big}},
			{ora.KindExecutionEvidence, "0", map[string]string{"evidence": "ok"}},
		} {
			en, err := ora.NewEntry(sig, e.kind, e.q, e.body)
			if err != nil {
				t.Fatal(err)
			}
			en.CreatedAt = t0
			stored, err := db.Append(ctx, en)
			if err != nil {
				t.Fatalf("Append %s %s: %v", sig, e.kind, err)
			}
			if i == 0 && e.kind == ora.KindOrientationPacket {
				packetDigest = stored.Digest
			}
		}
	}
	if _, err := db.Debounce(ctx, "dedup-1", time.Minute); err != nil {
		t.Fatal(err)
	}
	idem := NewIdempotencyStore(db)
	if err := idem.PutInProgress(ctx, ora.IdempotencyRecord{Key: "k1", PayloadHash: "h", ExpiresAt: t0.Add(2 * time.Hour),
		InProgressExpiresAt: t0.Add(time.Minute)}, t0); err != nil {
		t.Fatal(err)
	}
	exec := NewExecutionStore(db)
	for i, stopped := range []time.Duration{time.Minute, 0} { // one finished, one running
		rec := stepfn.ExecutionRecord{
			Execution: stepfn.Execution{ExecutionArn: fmt.Sprintf("arn:x:%d", i), StateMachineArn: "arn:sm", Name: fmt.Sprint(i),
				Status: stepfn.StatusRunning, Input: json.RawMessage(`{}`), StartDate: t0},
			Definition: []byte(`{"StartAt":"A"}`),
		}
		if err := exec.CreateExecution(ctx, rec, []stepfn.HistoryEvent{{Type: "ExecutionStarted", ID: 1, Timestamp: t0}}); err != nil {
			t.Fatal(err)
		}
		if stopped > 0 {
			rec.Status, rec.StopDate = stepfn.StatusSucceeded, t0.Add(stopped)
			if err := exec.SaveExecution(ctx, rec, []stepfn.HistoryEvent{{Type: "ExecutionSucceeded", ID: 2, Timestamp: rec.StopDate}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.TruncateWAL(ctx); err != nil {
		t.Fatal(err)
	}
	sizeBefore := fileSize(t, db.Path())
	opts := SweepOptions{Batch: 16, Executions: 3 * time.Hour}

	// sweepAll sweeps at now until a sweep finds nothing more.
	sweepAll := func(now time.Time) Swept {
		t.Helper()
		var total Swept
		for range 100 {
			s, err := db.Sweep(ctx, now, opts)
			if err != nil {
				t.Fatalf("Sweep at %v: %v", now, err)
			}
			if s.Entries > opts.Batch || s.Executions > max(1, opts.Batch/10) {
				t.Fatalf("Sweep deleted %+v, more than its batch of %d", s, opts.Batch)
			}
			total.Entries += s.Entries
			total.Debounce += s.Debounce
			total.Idempotency += s.Idempotency
			total.Executions += s.Executions
			total.VacuumedPages += s.VacuumedPages
			if !s.More(opts.Batch) {
				return total
			}
		}
		t.Fatal("Sweep never finished")
		return total
	}

	tests := []struct {
		name    string
		at      time.Duration
		want    Swept
		entries int // entries left for sig-00
	}{
		{"before any expiry nothing goes", 30 * time.Second, Swept{}, 3},
		{"the debounce window has ended", 2 * time.Minute, Swept{Debounce: 1}, 3},
		{"facts and packets at their retention", time.Hour + time.Second, Swept{Entries: 2 * waves}, 1},
		{"the idempotency record at its expiry", 2*time.Hour + time.Second, Swept{Idempotency: 1}, 1},
		{"the finished execution after its retention", 3*time.Hour + 2*time.Minute, Swept{Executions: 1}, 1},
		{"nothing left to sweep", 100 * time.Hour, Swept{}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock = t0.Add(tc.at)
			got := sweepAll(clock)
			got.VacuumedPages = 0
			if got != tc.want {
				t.Errorf("swept %+v, want %+v", got, tc.want)
			}
			es, err := db.Entries(ctx, "sig-00")
			if err != nil || len(es) != tc.entries {
				t.Errorf("Entries(sig-00) = %d entries, %v; want %d", len(es), err, tc.entries)
			}
		})
	}

	x, err := db.ExpiredEntries(ctx, "sig-00")
	if err != nil || len(x) != 1 {
		t.Fatalf("ExpiredEntries = %+v, %v; want the packet's", x, err)
	}
	if x[0].Kind != ora.KindOrientationPacket || x[0].Digest != packetDigest || !x[0].ExpiredAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("expired packet = %+v, want digest %s expired at %v", x[0], packetDigest, t0.Add(time.Hour))
	}
	if _, err := exec.GetExecution(ctx, "arn:x:0"); !errors.Is(err, stepfn.ErrNotFound) {
		t.Errorf("the swept execution: %v, want ErrNotFound", err)
	}
	if _, err := exec.GetExecution(ctx, "arn:x:1"); err != nil {
		t.Errorf("the running execution: %v, want it kept", err)
	}
	if err := db.TruncateWAL(ctx); err != nil {
		t.Fatal(err)
	}
	if after := fileSize(t, db.Path()); after >= sizeBefore/2 {
		t.Errorf("the file is %d bytes after the sweep, %d before: want the swept pages given back", after, sizeBefore)
	}
}

// TestSweepTruncatesTheWAL grows the WAL past the sweep's limit and checks
// that a sweep cuts it back.
func TestSweepTruncatesTheWAL(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, func(o *Options) { o.CheckpointEvery = -1 })
	for i := range 50 {
		e, _ := ora.NewEntry(fmt.Sprintf("sig-%d", i), ora.KindExecutionEvidence, "", map[string]string{"b": strings.Repeat("y", 10_000)})
		if _, err := db.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if before := fileSize(t, db.Path()+"-wal"); before < 500_000 {
		t.Fatalf("the WAL is %d bytes, want it over 500 KB for the test", before)
	}
	s, err := db.Sweep(ctx, time.Now(), SweepOptions{WALBytes: 100_000})
	if err != nil || !s.WALTruncated {
		t.Fatalf("Sweep = %+v, %v; want the WAL truncated", s, err)
	}
	if after := fileSize(t, db.Path()+"-wal"); after != 0 {
		t.Errorf("the WAL is %d bytes after the sweep, want 0", after)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestOpenConvertsASmallFile opens a file made without incremental vacuum
// (as before ora dev swept): Open converts it, keeping its rows.
func TestOpenConvertsASmallFile(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/old.db"
	old, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(`CREATE TABLE ledger_entries (signal_id TEXT NOT NULL, kind TEXT NOT NULL, qualifier TEXT NOT NULL,
		kind_rank INTEGER NOT NULL, author_type TEXT NOT NULL, body BLOB NOT NULL, meta TEXT, digest TEXT NOT NULL,
		created_at TEXT NOT NULL, expires_at TEXT, PRIMARY KEY (signal_id, kind, qualifier))`); err != nil {
		t.Fatal(err)
	}
	e, _ := ora.NewEntry("sig-old", ora.KindExecutionEvidence, "", map[string]string{"ok": "yes"})
	if _, err := old.Exec(`INSERT INTO ledger_entries VALUES (?, ?, '', 7, '', ?, NULL, ?, ?, NULL)`,
		e.SignalID, string(e.Kind), []byte(e.Body), e.Digest, formatTime(e.CreatedAt)); err != nil {
		t.Fatal(err)
	}
	var mode int
	if err := old.QueryRow("PRAGMA auto_vacuum").Scan(&mode); err != nil || mode != 0 {
		t.Fatalf("the old file's auto_vacuum = %d, %v; want 0 for the test", mode, err)
	}
	old.Close()
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if m, err := db.AutoVacuum(ctx); err != nil || m != "incremental" {
		t.Errorf("AutoVacuum after Open = %q, %v; want incremental", m, err)
	}
	if es, err := db.Entries(ctx, "sig-old"); err != nil || len(es) != 1 || es[0].Digest != e.Digest {
		t.Errorf("the old row after the conversion: %v, %v", es, err)
	}
}
