package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/sqlite"
)

// A store that cannot be opened for writing says so at Open, naming the
// file (SQLite's own words were "unable to open database file (14)"), and
// Health fails while the store cannot take a write.
func TestStorageFaultsNameTheFile(t *testing.T) {
	ctx := context.Background()
	t.Run("the journal cannot be created beside the file", func(t *testing.T) {
		// A directory where SQLite's WAL file goes: the file cannot be
		// opened for writing, whoever runs the test (root included).
		path := filepath.Join(t.TempDir(), "ledger.db")
		if err := os.Mkdir(path+"-wal", 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := sqlite.Open(ctx, path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "folder writable") || strings.Contains(err.Error(), "debounce") {
			t.Fatalf("Open: %v, want an error naming %s and the likely cause", err, path)
		}
	})
	t.Run("health fails while another holds the write lock", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		db, err := sqlite.Open(ctx, path, func(o *sqlite.Options) { o.BusyTimeout = 50 * time.Millisecond })
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Health(ctx); err != nil {
			t.Fatalf("Health of a writable store: %v", err)
		}
		other, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate")
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		tx, err := other.Begin() // holds the write lock
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := db.Health(ctx); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("Health with the write lock held elsewhere: %v, want an error naming %s", err, path)
		}
	})
}

// QuickCheck passes a sound file and names a damaged one.
func TestQuickCheck(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.QuickCheck(ctx); err != nil {
		t.Errorf("QuickCheck of a sound file: %v", err)
	}
	db.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 8192 {
		t.Fatalf("the file has %d bytes; want several pages to damage one", len(b))
	}
	for i := 4096; i < 4096+200; i++ { // the second page's header and cells
		b[i] ^= 0xff
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err = sqlite.Open(ctx, path)
	if err == nil {
		err = db.QuickCheck(ctx)
		db.Close()
	}
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a damaged file: %v, want an error naming %s", err, path)
	}
}
