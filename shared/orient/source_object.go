package orient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// FamilyObjects is the source family that reads objects under a key prefix:
// S3 on AWS, a local folder in ora dev.
const FamilyObjects = "objects"

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Key      string    `json:"key"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
	ETag     string    `json:"etag,omitempty"`
}

// ObjectReader is what the objects family needs of an object store.
type ObjectReader interface {
	// List returns the objects under prefix in key order, at most limit.
	// Errors: EINVALID, ETRANSIENT.
	List(ctx context.Context, prefix string, limit int) ([]ObjectInfo, error)
	// Get returns an object's first maxBytes+1 bytes at most and its info.
	// Errors: ENOTFOUND, EINVALID, ETRANSIENT.
	Get(ctx context.Context, key string, maxBytes int64) ([]byte, ObjectInfo, error)
}

// ObjectPredicate is an objects rule's predicate: the key prefix, how many
// objects (one job each) and the largest body carried inline.
type ObjectPredicate struct {
	Prefix string `json:"prefix"`
	Limit  int    `json:"limit"`
	// InlineBytes is the largest object carried inline (default 1024);
	// a larger one becomes a reference (its digest and size).
	InlineBytes int `json:"inline_bytes,omitempty"`
}

// Objects is the objects source family.
type Objects struct {
	Reader ObjectReader
}

var _ Source = Objects{}

// MaxObjectBytes is the most of one object a job reads.
const MaxObjectBytes = 1 << 20

// Jobs lists the objects under the prefix modified no later than the
// signal, one job per object (Target the key), in key order.
func (o Objects) Jobs(ctx context.Context, w Wave, r ora.AttentionRule) ([]Job, error) {
	var p ObjectPredicate
	if err := predicate(r, &p); err != nil {
		return nil, err
	}
	if p.Limit < 1 || p.Limit > ora.DefaultMaxJobs {
		return nil, ora.Invalid("rules."+r.ID+".predicate.limit", "%d is outside 1..%d", p.Limit, ora.DefaultMaxJobs)
	}
	if o.Reader == nil {
		return nil, ora.Invalid("rules."+r.ID+".source_type", "no object store is configured")
	}
	infos, err := o.Reader.List(ctx, p.Prefix, p.Limit)
	if err != nil {
		return nil, err
	}
	jobs := make([]Job, 0, len(infos))
	for _, in := range infos {
		if in.Modified.After(w.AsOf) {
			continue
		}
		jobs = append(jobs, Job{Kind: "object", Target: in.Key, Params: Params{AsOf: w.AsOf, Limit: 1, InlineBytes: p.InlineBytes}})
	}
	return jobs, nil
}

// Observe reads one object into one fact.
func (o Objects) Observe(ctx context.Context, _ Wave, j Job) ([]ora.Fact, error) {
	if j.Target == "" {
		return nil, ora.Invalid("job.target", "required")
	}
	body, info, err := o.Reader.Get(ctx, j.Target, MaxObjectBytes)
	if err != nil {
		return nil, err
	}
	inline := j.Params.InlineBytes
	if inline == 0 {
		inline = 1024
	}
	n := map[string]any{"key": info.Key, "size": info.Size, "modified": info.Modified.UTC(), "etag": info.ETag}
	switch {
	case len(body) <= inline && json.Valid(body):
		n["body"] = json.RawMessage(body)
	case len(body) <= inline:
		n["text"] = string(body)
	default:
		n["body_digest"], n["body_bytes"] = ora.Digest(body), info.Size
	}
	nb, err := json.Marshal(n)
	if err != nil {
		return nil, ora.Errorf(ora.EINTERNAL, "encode fact: %v", err)
	}
	return []ora.Fact{{
		SourceRef:  "object:" + info.Key,
		Provenance: map[string]string{"store": "objects", "key": info.Key, "etag": info.ETag, "digest": ora.Digest(body)},
		Normalized: nb,
		DedupeKey:  "object:" + info.Key + "@" + info.ETag,
		CreatedAt:  info.Modified.UTC(),
	}}, nil
}

// Folder is an ObjectReader over a local directory (ora dev's object store):
// keys are slash-separated paths under Dir.
type Folder struct{ Dir string }

var _ ObjectReader = Folder{}

// List walks Dir in key order.
func (f Folder) List(ctx context.Context, prefix string, limit int) ([]ObjectInfo, error) {
	if strings.Contains(prefix, "..") {
		return nil, ora.Invalid("prefix", "%q must not contain ..", prefix)
	}
	var out []ObjectInfo
	err := filepath.WalkDir(f.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(f.Dir, path)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, ObjectInfo{Key: key, Size: fi.Size(), Modified: fi.ModTime().UTC(), ETag: etag(fi)})
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, ora.Errorf(ora.ETRANSIENT, "list %s: %v", prefix, err)
	}
	slices.SortFunc(out, func(a, b ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Get reads one file.
func (f Folder) Get(_ context.Context, key string, maxBytes int64) ([]byte, ObjectInfo, error) {
	if key == "" || strings.Contains(key, "..") || strings.HasPrefix(key, "/") {
		return nil, ObjectInfo{}, ora.Invalid("key", "%q is not a relative key", key)
	}
	file, err := os.Open(filepath.Join(f.Dir, filepath.FromSlash(key)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ObjectInfo{}, ora.Errorf(ora.ENOTFOUND, "object %s", key)
	}
	if err != nil {
		return nil, ObjectInfo{}, ora.Errorf(ora.ETRANSIENT, "open %s: %v", key, err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, ObjectInfo{}, ora.Errorf(ora.ETRANSIENT, "stat %s: %v", key, err)
	}
	b, err := io.ReadAll(io.LimitReader(file, maxBytes+1))
	if err != nil {
		return nil, ObjectInfo{}, ora.Errorf(ora.ETRANSIENT, "read %s: %v", key, err)
	}
	return b, ObjectInfo{Key: key, Size: fi.Size(), Modified: fi.ModTime().UTC(), ETag: etag(fi)}, nil
}

// etag stands in for S3's ETag on a file: its size and modification time.
func etag(fi fs.FileInfo) string { return fmt.Sprintf("%x-%x", fi.Size(), fi.ModTime().UnixNano()) }
