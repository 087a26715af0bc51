package sqlite

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Writers never checkpoint: the WAL is copied into the database file by
// the checkpointing connection, in the background. About 400 WAL frames of entries are
// fewer than SQLite's automatic checkpoint waits for (1,000), so without the
// background checkpoint they would stay in the WAL; with it they reach the
// database file. Left to SQLite (CheckpointEvery < 0), they stay in the WAL.
func TestCheckpointsInTheBackground(t *testing.T) {
	for _, c := range []struct {
		name  string
		every time.Duration
		moved bool
	}{{"background", 5 * time.Millisecond, true}, {"sqlite's", -1, false}} {
		t.Run(c.name, func(t *testing.T) {
			db := openDB(t, func(o *Options) { o.CheckpointEvery = c.every })
			var auto int
			if err := db.w.QueryRow("PRAGMA wal_autocheckpoint").Scan(&auto); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 0, false: 1000}[c.moved]; auto != want {
				t.Fatalf("the writer's wal_autocheckpoint is %d, want %d", auto, want)
			}
			body := fmt.Sprintf(`{"pad":%q}`, strings.Repeat("p", 6000))
			for i := range 100 {
				e, err := ora.NewEntry(fmt.Sprintf("s-cp-%d", i), ora.KindObservedFact, "f", map[string]string{"pad": body})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := db.Append(context.Background(), e); err != nil {
					t.Fatal(err)
				}
			}
			size := func() int64 {
				fi, err := os.Stat(db.Path())
				if err != nil {
					t.Fatal(err)
				}
				return fi.Size()
			}
			const want = 512 << 10 // the entries' bodies, ~0.6 MB
			if !c.moved {
				time.Sleep(50 * time.Millisecond) // ten of the other case's periods
				if got := size(); got >= want {
					t.Fatalf("the database file is %d bytes with checkpoints left to SQLite, want the entries still in the WAL", got)
				}
				return
			}
			deadline := time.Now().Add(30 * time.Second)
			for size() < want {
				if time.Now().After(deadline) {
					t.Fatalf("the database file is %d bytes after 30 s, want the entries checkpointed into it (>= %d)", size(), want)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
