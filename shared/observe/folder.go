package observe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// DefaultPollInterval is how often a Watcher scans its folder.
const DefaultPollInterval = time.Second

// Watcher polls a local folder and reports each file created, modified or
// deleted to an Observer: the embedded runtime's stand-in for S3
// notifications. A change is "modify" when a file's size or mtime differs from
// the previous scan. Files present at the first scan are the baseline and are
// not reported.
type Watcher struct {
	obs      *Observer
	root     string
	interval time.Duration
	folder   FolderConfig

	mu    sync.Mutex
	known map[string]fileState // nil until the baseline scan
}

type fileState struct {
	size  int64
	mtime time.Time
}

// NewWatcher returns a Watcher of root polling every interval (0: the default).
// Errors: EINVALID when root is not a directory.
func NewWatcher(obs *Observer, root string, interval time.Duration) (*Watcher, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, ora.Invalid("watch.folder", "%v", err)
	}
	root = abs
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return nil, ora.Invalid("watch.folder", "%s is not a directory", root)
	}
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	return &Watcher{obs: obs, root: root, interval: interval}, nil
}

// FolderConfig is one named watched folder: its changes become object
// signals whose source.bucket is Name (the local stand-in for a bucket),
// kept when the path (slash-separated, relative to Dir) has one of
// Prefixes and one of Suffixes (empty: any).
type FolderConfig struct {
	Name     string   `json:"name" yaml:"name"`
	Dir      string   `json:"dir" yaml:"dir"`
	Prefixes []string `json:"prefixes,omitempty" yaml:"prefixes,omitempty"`
	Suffixes []string `json:"suffixes,omitempty" yaml:"suffixes,omitempty"`
}

// Validate checks the name. Errors: EINVALID.
func (c FolderConfig) Validate() error {
	if !sourceName.MatchString(c.Name) {
		return ora.Invalid("watch.folders.name", "%q must be 1-64 letters, digits, '.', '-' or '_'", c.Name)
	}
	if c.Dir == "" {
		return ora.Invalid("watch.folders.dir", "folder %s: required", c.Name)
	}
	return nil
}

// Matches reports whether path passes the prefix and suffix filters.
func (c FolderConfig) Matches(path string) bool {
	return affixed(path, c.Prefixes, strings.HasPrefix) && affixed(path, c.Suffixes, strings.HasSuffix)
}

func affixed(s string, affixes []string, has func(string, string) bool) bool {
	if len(affixes) == 0 {
		return true
	}
	for _, a := range affixes {
		if has(s, a) {
			return true
		}
	}
	return false
}

// NewFolderWatcher returns a Watcher of the named folder c, polling every
// interval (0: the default). Errors: EINVALID.
func NewFolderWatcher(obs *Observer, c FolderConfig, interval time.Duration) (*Watcher, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	w, err := NewWatcher(obs, c.Dir, interval)
	if err != nil {
		return nil, err
	}
	w.folder = c
	return w, nil
}

// Run scans the folder every interval until ctx is done; it returns ctx's
// error. Capture failures are logged and retried at the next scan.
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		if _, err := w.Scan(ctx); err != nil {
			w.obs.opts.Logger.ErrorContext(ctx, "watched folder scan failed", "folder", w.root, "error", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Scan compares the folder with the previous scan and captures each change,
// in path order. The first scan only records the baseline. A change whose
// capture fails is not recorded as seen, so the next scan tries again; the
// first such error is returned after the others were tried.
func (w *Watcher) Scan(ctx context.Context) ([]Receipt, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.obs.opts.Now().UTC()
	current := map[string]fileState{}
	err := filepath.WalkDir(w.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, err := filepath.Rel(w.root, path)
		if err != nil {
			return err
		}
		if !w.folder.Matches(filepath.ToSlash(rel)) {
			return nil
		}
		current[filepath.ToSlash(rel)] = fileState{size: info.Size(), mtime: info.ModTime().UTC()}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", w.root, err)
	}
	if w.known == nil {
		w.known = current
		return nil, nil
	}
	var changes []FolderEvent
	for p, st := range current {
		old, ok := w.known[p]
		switch {
		case !ok:
			changes = append(changes, FolderEvent{Path: p, Event: "create", Size: st.size, ModTime: st.mtime})
		case old != st:
			changes = append(changes, FolderEvent{Path: p, Event: "modify", Size: st.size, ModTime: st.mtime})
		}
	}
	for p, st := range w.known {
		if _, ok := current[p]; !ok {
			changes = append(changes, FolderEvent{Path: p, Event: "delete", Size: st.size, ModTime: st.mtime})
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	var receipts []Receipt
	var firstErr error
	for _, ch := range changes {
		ch.EventSource, ch.Root, ch.ObservedAt, ch.Name = EventSourceFolder, w.root, now, w.folder.Name
		raw, _ := json.Marshal(ch)
		r, err := w.obs.Object(ctx, raw)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("watch %s: %s %s: %w", w.root, ch.Event, ch.Path, err)
			}
			continue
		}
		receipts = append(receipts, r)
		if ch.Event == "delete" {
			delete(w.known, ch.Path)
		} else {
			w.known[ch.Path] = fileState{size: ch.Size, mtime: ch.ModTime}
		}
	}
	return receipts, firstErr
}
