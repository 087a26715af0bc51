package observe_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observe/observetest"
	"github.com/ora-runtime/ora/shared/ora"
)

// Named watched folders stand in for buckets: a signal carries the folder's
// name as source.bucket, the filters keep only matching paths, and the same
// file in two folders is two signals.
func TestNamedFolders(t *testing.T) {
	ctx := context.Background()
	ledger := &observetest.Ledger{}
	obs, err := observe.New(ledger, &observetest.Waves{}, nil, func(o *observe.Options) { o.Now = func() time.Time { return now } })
	if err != nil {
		t.Fatal(err)
	}
	invoices := observe.FolderConfig{Name: "invoices", Dir: t.TempDir(), Prefixes: []string{"incoming/"}, Suffixes: []string{".pdf"}}
	reports := observe.FolderConfig{Name: "reports", Dir: t.TempDir()}
	var watchers []*observe.Watcher
	for _, c := range []observe.FolderConfig{invoices, reports} {
		w, err := observe.NewFolderWatcher(obs, c, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Scan(ctx); err != nil { // the baseline
			t.Fatal(err)
		}
		watchers = append(watchers, w)
	}
	write := func(dir, rel string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("%PDF-1.7"), 0o644); err != nil {
			t.Fatal(err)
		}
		mtime := time.Date(2026, 11, 20, 11, 0, 0, 0, time.UTC)
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	write(invoices.Dir, "incoming/INV-1.pdf")
	write(invoices.Dir, "incoming/notes.txt") // suffix filtered
	write(invoices.Dir, "archive/INV-0.pdf")  // prefix filtered
	write(reports.Dir, "incoming/INV-1.pdf")  // the same path, another folder
	var got []ora.Source
	for _, w := range watchers {
		recs, err := w.Scan(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			got = append(got, signal(t, ledger, r.SignalID).Source)
		}
	}
	want := []ora.Source{
		{Type: ora.SourceObject, Name: observe.NameFolder, Bucket: "invoices", Path: "incoming/INV-1.pdf", Event: "create"},
		{Type: ora.SourceObject, Name: observe.NameFolder, Bucket: "reports", Path: "incoming/INV-1.pdf", Event: "create"},
	}
	if len(got) != len(want) {
		t.Fatalf("signals %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("signal %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if err := (observe.FolderConfig{Name: "bad name!", Dir: "x"}).Validate(); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("a bad name: %v, want EINVALID", err)
	}
}
