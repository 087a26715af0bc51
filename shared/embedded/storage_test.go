package embedded

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Storage faults stop the start with a message naming the file, instead of
// a runtime that answers every webhook with 500.
func TestStartRefusesBrokenStorage(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		setup func(t *testing.T, cfg Config)
		want  []string // in the error; "$LEDGER", "$DIR" and "$ENGINE" stand for the paths
	}{
		{"a data dir that cannot be written", func(t *testing.T, cfg Config) {
			// Whoever runs the test (root too) cannot create this file.
			if err := os.Mkdir(filepath.Join(cfg.DataDir, RunningMarker+".probe"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, []string{"data dir $DIR is not writable", RunningMarker + ".probe"}},
		{"a ledger that cannot be opened for writing", func(t *testing.T, cfg Config) {
			if err := os.Mkdir(cfg.Store.SQLitePath+"-wal", 0o755); err != nil {
				t.Fatal(err)
			}
		}, []string{"$LEDGER", "folder writable"}},
		{"an empty ledger beside an engine store", func(t *testing.T, cfg Config) {
			startAndStop(t, cfg)
			if err := os.Truncate(cfg.Store.SQLitePath, 0); err != nil {
				t.Fatal(err)
			}
		}, []string{"ledger $LEDGER is empty", "$ENGINE", "Restore it from a backup"}},
		{"a damaged ledger after an unclean shutdown", func(t *testing.T, cfg Config) {
			startAndStop(t, cfg)
			damage(t, cfg.Store.SQLitePath)
			if err := os.WriteFile(filepath.Join(cfg.DataDir, RunningMarker), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, []string{"did not shut down cleanly", "$LEDGER is corrupt", "restore it from a backup"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(t, dir)
			tt.setup(t, cfg)
			rt, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
			if err == nil {
				rt.Close()
				t.Fatal("New started; want it refused")
			}
			for _, w := range tt.want {
				w = strings.NewReplacer("$LEDGER", cfg.Store.SQLitePath, "$DIR", dir, "$ENGINE", filepath.Join(dir, "engine.db")).Replace(w)
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// After an unclean shutdown sound files start as before; a clean shutdown
// leaves no marker.
func TestUncleanShutdownChecksFiles(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	startAndStop(t, cfg)
	marker := filepath.Join(cfg.DataDir, RunningMarker)
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("after a clean shutdown the marker is there (%v)", err)
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	startAndStop(t, cfg)
}

// /healthz answers 503 while the ledger cannot take a write (another
// process holds its write lock past the check's time).
func TestHealthzFailsWhenTheStoreCannotWrite(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	rt, err := New(context.Background(), cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rt.Handler())
	t.Cleanup(func() { srv.Close(); _ = rt.Close() })
	get := func() int {
		resp, err := http.Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != http.StatusOK {
		t.Fatalf("healthz of a sound store: %d", code)
	}
	// The runtime's own sweeper may hold the write lock for a moment: wait
	// for it rather than fail the test on SQLITE_BUSY.
	other, err := sql.Open("sqlite", "file:"+cfg.Store.SQLitePath+"?_txlock=immediate&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if code := get(); code != http.StatusServiceUnavailable {
		t.Errorf("healthz with the ledger's write lock held elsewhere: %d, want 503", code)
	}
	_ = tx.Rollback()
	if code := get(); code != http.StatusOK {
		t.Errorf("healthz once the lock is released: %d, want 200", code)
	}
}

// startAndStop runs a runtime on cfg and shuts it down cleanly.
func startAndStop(t *testing.T, cfg Config) {
	t.Helper()
	rt, err := New(context.Background(), cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
}

// damage overwrites the second page's first bytes of a SQLite file.
func damage(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 8192 {
		t.Fatalf("read %s: %d bytes, %v", path, len(b), err)
	}
	for i := 4096; i < 4096+200; i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
