package embedded

import (
	"context"
	"time"

	"github.com/ora-runtime/ora/shared/bodystore"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/sqlite"
)

// RetentionConfig says how long `ora dev` keeps each class of record that
// only serves a wave while it runs (and its audit for a while after), and how
// it sweeps them (docs/ledger.md). Signals, decisions, evidence, verdicts,
// every other ledger entry and the digests of expired packets are kept.
// A duration of 0 keeps that class.
type RetentionConfig struct {
	// Facts is how long observed facts are kept after they were written.
	Facts Duration `yaml:"facts"`
	// Packets is how long orientation packets are kept (their digests stay):
	// at most Facts, since replaying a packet recompiles it from its facts.
	Packets Duration `yaml:"packets"`
	// Jobs is how long a wave's jobs file is kept.
	Jobs Duration `yaml:"jobs"`
	// Executions is how long the engine keeps a wave's execution (its
	// history and checkpoint) after it stopped. Running and paused waves are
	// kept whatever their age.
	Executions Duration `yaml:"executions"`
	// SweepEvery is how often the sweeper looks for expired records.
	SweepEvery Duration `yaml:"sweep_every"`
	// SweepBatch is the most rows of a table one sweep transaction deletes.
	SweepBatch int `yaml:"sweep_batch"`
}

// DefaultRetention is `ora dev`'s retention: facts and packets as on AWS
// (ora.DefaultRetention, 30 days), jobs files 7 days as the jobs bucket's
// lifecycle rule, finished executions 30 days; a sweep every 10 s of at most
// 200 rows a table a transaction (20 executions with their history).
func DefaultRetention() RetentionConfig {
	keep := ora.DefaultRetention()
	return RetentionConfig{
		Facts:      Duration(keep[ora.KindObservedFact]),
		Packets:    Duration(keep[ora.KindOrientationPacket]),
		Jobs:       Duration(JobsRetention),
		Executions: Duration(30 * 24 * time.Hour),
		SweepEvery: Duration(10 * time.Second),
		SweepBatch: 200,
	}
}

// validate checks the durations.
func (c RetentionConfig) validate() error {
	for key, d := range map[string]Duration{"facts": c.Facts, "packets": c.Packets, "jobs": c.Jobs, "executions": c.Executions} {
		if d < 0 || (d > 0 && d < Duration(time.Minute)) {
			return ora.Invalid("retention."+key, "must be at least 1m (0 keeps): a wave's records must outlive the wave")
		}
	}
	if c.Facts > 0 && (c.Packets == 0 || c.Packets > c.Facts) {
		return ora.Invalid("retention.packets", "%v must be set and at most retention.facts (%v): a packet is replayed from its facts",
			time.Duration(c.Packets), time.Duration(c.Facts))
	}
	if c.SweepEvery < Duration(100*time.Millisecond) {
		return ora.Invalid("retention.sweep_every", "must be at least 100ms")
	}
	if c.SweepBatch < 1 {
		return ora.Invalid("retention.sweep_batch", "must be positive")
	}
	return nil
}

// ledger returns the ledger's retention by kind.
func (c RetentionConfig) ledger() ora.Retention {
	r := ora.Retention{}
	if c.Facts > 0 {
		r[ora.KindObservedFact] = time.Duration(c.Facts)
	}
	if c.Packets > 0 {
		r[ora.KindOrientationPacket] = time.Duration(c.Packets)
	}
	return r
}

// startRetention runs the sweeper until Close: every SweepEvery it deletes
// the expired rows of the ledger (SQLite) and the engine store in bounded
// batches, going on at once while a batch comes back full, then the jobs
// files and offloaded bodies past their age. It runs beside the waves, never
// on their path: each batch is one short transaction on the store's one
// write connection.
func (r *Runtime) startRetention() {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	r.stopRetention = func() { stop(); <-done }
	c := r.cfg.Retention
	go func() {
		defer close(done)
		t := time.NewTicker(time.Duration(c.SweepEvery))
		defer t.Stop()
		// The folders are walked whole, so less often: every hundredth of
		// the shortest retention of files, at least every sweep.
		walkEvery := time.Duration(c.SweepEvery)
		if age := time.Duration(min(nonZero(c.Jobs), nonZero(max(c.Facts, c.Packets)))); age > 0 {
			walkEvery = max(walkEvery, age/100)
		}
		var walked time.Time
		for {
			r.sweepOnce(ctx, c, time.Now())
			if time.Since(walked) >= walkEvery && ctx.Err() == nil {
				r.expireFiles(c, time.Now())
				walked = time.Now()
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// sweepPause is the pause between two batches of one sweep.
const sweepPause = 20 * time.Millisecond

// sweepOnce sweeps each store until it has nothing more expired as of now.
func (r *Runtime) sweepOnce(ctx context.Context, c RetentionConfig, now time.Time) {
	o := sqlite.SweepOptions{Batch: c.SweepBatch, Executions: time.Duration(c.Executions)}
	for _, db := range []*sqlite.DB{r.ledgerDB, r.engineDB} {
		if db == nil {
			continue
		}
		for ctx.Err() == nil {
			s, err := db.Sweep(ctx, now, o)
			if err != nil {
				if ctx.Err() == nil {
					r.logger.Warn("retention sweep", "file", db.Path(), "err", err)
				}
				break
			}
			if !s.More(o.Batch) {
				break
			}
			// A pause between batches lets the waves' writes in.
			select {
			case <-ctx.Done():
			case <-time.After(sweepPause):
			}
		}
	}
}

// nonZero returns d, or the longest Duration for 0 (kept).
func nonZero(d Duration) Duration {
	if d == 0 {
		return Duration(1<<63 - 1)
	}
	return d
}

// expireFiles removes the jobs files and offloaded bodies past their age at now.
func (r *Runtime) expireFiles(c RetentionConfig, now time.Time) {
	if c.Jobs > 0 {
		if _, err := r.jobs().Expire(time.Duration(c.Jobs), now); err != nil {
			r.logger.Warn("expire old wave jobs", "err", err)
		}
	}
	// An offloaded body outlives every entry that refers to it by an hour.
	if age := max(c.Facts, c.Packets); age > 0 {
		if _, err := (bodystore.Folder{Root: r.cfg.Actions.Object.Root}).ExpireBodiesAfter(time.Duration(age)+time.Hour, now); err != nil {
			r.logger.Warn("expire old ledger bodies", "err", err)
		}
	}
}

// warnAutoVacuum says, once at start, when a SQLite file predates
// incremental vacuum and was too large for Open to convert: swept rows'
// pages are then reused, but the file does not shrink until it is rebuilt.
func (r *Runtime) warnAutoVacuum(ctx context.Context) {
	for _, db := range []*sqlite.DB{r.ledgerDB, r.engineDB} {
		if db == nil {
			continue
		}
		if mode, err := db.AutoVacuum(ctx); err == nil && mode != "incremental" {
			r.logger.Warn("this SQLite file was created before ora dev returned swept space to the disk: "+
				"expired records are still swept and their space reused, but the file will not shrink. "+
				"To convert it, stop ora dev and run: sqlite3 FILE 'PRAGMA auto_vacuum=INCREMENTAL; VACUUM;'",
				"file", db.Path(), "auto_vacuum", mode)
		}
	}
}
