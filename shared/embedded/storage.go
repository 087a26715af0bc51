package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ora-runtime/ora/shared/sqlite"
)

// RunningMarker is the file `ora dev` keeps in its data dir while it runs
// and removes when it shuts down cleanly. Found at start, it says the last
// run ended without shutting down (killed, crashed, the machine lost
// power): the start checks the SQLite files (PRAGMA quick_check) before
// using them.
const RunningMarker = "ora-dev.running"

// checkDataDir refuses a data dir this process cannot write, naming the
// folder and the file it tried to create.
func checkDataDir(dir string) error {
	probe := filepath.Join(dir, RunningMarker+".probe")
	if err := os.WriteFile(probe, []byte("ora dev write check\n"), 0o644); err != nil {
		return fmt.Errorf("embedded: the data dir %s is not writable (creating %s): %w", dir, probe, err)
	}
	if err := os.Remove(probe); err != nil {
		return fmt.Errorf("embedded: the data dir %s is not writable (removing %s): %w", dir, probe, err)
	}
	return nil
}

// checkStoresAgree refuses a ledger file that is empty (zero bytes) beside an
// engine store that is not: a truncated or replaced ledger would start as a
// new, empty one while the engine resumes waves it has no record of.
func checkStoresAgree(cfg Config) error {
	if cfg.Store.Kind != "sqlite" {
		return nil
	}
	engine := filepath.Join(cfg.DataDir, "engine.db")
	lf, err := os.Stat(cfg.Store.SQLitePath)
	if err != nil || lf.Size() > 0 {
		return nil // missing (a first run, or a new ledger path) or holding data
	}
	ef, err := os.Stat(engine)
	if err != nil || ef.Size() == 0 {
		return nil
	}
	return fmt.Errorf("embedded: the ledger %s is empty (0 bytes) but the engine store %s holds %d bytes of waves: "+
		"the ledger was truncated or replaced. Restore it from a backup, or move both files away to start afresh",
		cfg.Store.SQLitePath, engine, ef.Size())
}

// markRunning writes the running marker and reports whether one was there
// already (the last run did not shut down cleanly).
func markRunning(dir string) (unclean bool, err error) {
	path := filepath.Join(dir, RunningMarker)
	if _, err := os.Stat(path); err == nil {
		unclean = true
	}
	stamp := fmt.Sprintf("pid %d since %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339))
	if err := os.WriteFile(path, []byte(stamp), 0o644); err != nil {
		return unclean, fmt.Errorf("embedded: write %s: %w", path, err)
	}
	return unclean, nil
}

// quickCheck checks each SQLite file after an unclean shutdown.
func quickCheck(ctx context.Context, dbs ...*sqlite.DB) error {
	var errs []error
	for _, db := range dbs {
		if db != nil {
			errs = append(errs, db.QuickCheck(ctx))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("embedded: the last run did not shut down cleanly, and a check of its files failed: %w", err)
	}
	return nil
}

// health checks that the stores take a write (GET /healthz).
func (r *Runtime) health(ctx context.Context) error {
	var errs []error
	for _, db := range []*sqlite.DB{r.ledgerDB, r.engineDB} {
		if db != nil {
			errs = append(errs, db.Health(ctx))
		}
	}
	return errors.Join(errs...)
}
