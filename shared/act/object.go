package act

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/ora-runtime/ora/shared/ora"
)

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Key     string `json:"key"`
	Digest  string `json:"digest"` // sha256 of the content, hex
	Size    int64  `json:"size"`
	Version string `json:"version,omitempty"`
}

// ObjectStore stores objects: a local folder (Folder) or an S3 bucket (S3).
type ObjectStore interface {
	// PutObject writes body at key. Errors: ETRANSIENT, or the store's error.
	PutObject(ctx context.Context, key string, body []byte, contentType string) (ObjectInfo, error)
	// HeadObject describes the object at key. Errors: ENOTFOUND, ETRANSIENT.
	HeadObject(ctx context.Context, key string) (ObjectInfo, error)
}

// Folder is an ObjectStore over a local folder: keys are relative paths. It
// never writes or reads through a symbolic link: a key whose path under Root
// holds one is refused (CheckLinks), and every file operation goes through
// an os.Root, which refuses a path that resolves outside Root even when a
// link appears between the check and the write.
type Folder struct{ Root string }

var _ ObjectStore = Folder{}

// CheckLinks refuses a key whose path under Root goes through a symbolic
// link (to anywhere: inside Root it would dodge the allowed prefixes, outside
// it would escape). Errors: EINVALID (a bad key), EFORBIDDEN (a link).
func (f Folder) CheckLinks(key string) error {
	if f.Root == "" {
		return ora.Invalid("object.root", "required")
	}
	clean, err := cleanKey(key)
	if err != nil {
		return err
	}
	p := f.Root
	for _, seg := range strings.Split(clean, "/") {
		p = filepath.Join(p, seg)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // created by the write, as a real folder or file
		}
		if err != nil {
			return fmt.Errorf("object: check %s: %w", key, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return ora.Errorf(ora.EFORBIDDEN, "object.put: key %q goes through a symbolic link (%s): refused", key, seg)
		}
	}
	return nil
}

func (f Folder) open(key string) (*os.Root, string, error) {
	if err := f.CheckLinks(key); err != nil {
		return nil, "", err
	}
	clean, _ := cleanKey(key)
	if err := os.MkdirAll(f.Root, 0o755); err != nil {
		return nil, "", fmt.Errorf("object: mkdir %s: %w", f.Root, err)
	}
	root, err := os.OpenRoot(f.Root)
	if err != nil {
		return nil, "", fmt.Errorf("object: open %s: %w", f.Root, err)
	}
	return root, filepath.FromSlash(clean), nil
}

// PutObject writes body to Root/key through a temporary file and a rename.
func (f Folder) PutObject(_ context.Context, key string, body []byte, _ string) (ObjectInfo, error) {
	root, name, err := f.open(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	defer root.Close()
	if dir := filepath.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return ObjectInfo{}, fmt.Errorf("object: mkdir for %s: %w", key, err)
		}
	}
	tmpName := filepath.Join(filepath.Dir(name), fmt.Sprintf(".put-%d-%d", os.Getpid(), time.Now().UnixNano()))
	tmp, err := root.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("object: put %s: %w", key, err)
	}
	if _, err := tmp.Write(body); err != nil {
		tmp.Close()
		root.Remove(tmpName)
		return ObjectInfo{}, fmt.Errorf("object: put %s: %w", key, err)
	}
	if err := tmp.Close(); err != nil {
		root.Remove(tmpName)
		return ObjectInfo{}, fmt.Errorf("object: put %s: %w", key, err)
	}
	if err := root.Rename(tmpName, name); err != nil {
		root.Remove(tmpName)
		return ObjectInfo{}, fmt.Errorf("object: put %s: %w", key, err)
	}
	return ObjectInfo{Key: key, Digest: ora.Digest(body), Size: int64(len(body))}, nil
}

// HeadObject reads Root/key and reports its digest and size.
func (f Folder) HeadObject(_ context.Context, key string) (ObjectInfo, error) {
	root, name, err := f.open(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	defer root.Close()
	b, err := root.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return ObjectInfo{}, ora.Errorf(ora.ENOTFOUND, "object %q not found", key)
	}
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("object: head %s: %w", key, err)
	}
	return ObjectInfo{Key: key, Digest: ora.Digest(b), Size: int64(len(b))}, nil
}

// S3API is the part of the S3 API the S3 object store calls; *s3.Client
// satisfies it.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

// S3 is an ObjectStore over an S3 bucket. The content's sha256 travels in the
// object's metadata (key "ora-sha256") so HeadObject can report it.
type S3 struct {
	Client S3API
	Bucket string
}

var _ ObjectStore = S3{}

const digestMeta = "ora-sha256"

// PutObject writes body to s3://Bucket/key.
func (s S3) PutObject(ctx context.Context, key string, body []byte, contentType string) (ObjectInfo, error) {
	d := ora.Digest(body)
	in := &s3.PutObjectInput{
		Bucket:   aws.String(s.Bucket),
		Key:      aws.String(key),
		Body:     strings.NewReader(string(body)),
		Metadata: map[string]string{digestMeta: d},
	}
	if contentType != "" {
		in.ContentType = aws.String(contentType)
	}
	out, err := s.Client.PutObject(ctx, in)
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("object: put s3://%s/%s: %w", s.Bucket, key, err)
	}
	return ObjectInfo{Key: key, Digest: d, Size: int64(len(body)), Version: aws.ToString(out.VersionId)}, nil
}

// HeadObject describes s3://Bucket/key.
func (s S3) HeadObject(ctx context.Context, key string) (ObjectInfo, error) {
	out, err := s.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && (ae.ErrorCode() == "NotFound" || ae.ErrorCode() == "NoSuchKey") {
			return ObjectInfo{}, ora.Errorf(ora.ENOTFOUND, "object s3://%s/%s not found", s.Bucket, key)
		}
		return ObjectInfo{}, fmt.Errorf("object: head s3://%s/%s: %w", s.Bucket, key, err)
	}
	return ObjectInfo{Key: key, Digest: out.Metadata[digestMeta], Size: aws.ToInt64(out.ContentLength), Version: aws.ToString(out.VersionId)}, nil
}

// cleanKey refuses absolute keys and keys with "." or ".." segments, so a key
// cannot climb out of its prefix.
func cleanKey(key string) (string, error) {
	if key == "" {
		return "", ora.Invalid(TypeObjectPut+".parameters.key", "required")
	}
	if strings.HasPrefix(key, "/") || strings.Contains(key, "\\") {
		return "", ora.Invalid(TypeObjectPut+".parameters.key", "%q must be a relative key with forward slashes", key)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "." || seg == ".." || seg == "" {
			return "", ora.Invalid(TypeObjectPut+".parameters.key", "%q has an empty, '.' or '..' segment", key)
		}
	}
	return path.Clean(key), nil
}

// ObjectParams are the parameters of the object.put action. Body is stored as
// it is when it is a JSON string, else as its JSON encoding.
type ObjectParams struct {
	Key         string          `json:"key"`
	Body        json.RawMessage `json:"body"`
	ContentType string          `json:"content_type,omitempty"`
}

// ObjectPut writes objects under allowed prefixes.
type ObjectPut struct {
	store    ObjectStore
	prefixes []string
	now      func() time.Time
}

// NewObjectPut returns the object.put action over store, limited to keys under
// allowedPrefixes.
func NewObjectPut(store ObjectStore, allowedPrefixes []string) *ObjectPut {
	return &ObjectPut{store: store, prefixes: allowedPrefixes, now: time.Now}
}

func (o *ObjectPut) parse(params json.RawMessage) (ObjectParams, error) {
	var p ObjectParams
	if err := decodeParams(TypeObjectPut, params, &p); err != nil {
		return p, err
	}
	key, err := cleanKey(p.Key)
	if err != nil {
		return p, err
	}
	p.Key = key
	if l, ok := o.store.(interface{ CheckLinks(key string) error }); ok {
		if err := l.CheckLinks(key); err != nil {
			return p, err
		}
	}
	for _, pre := range o.prefixes {
		if pre != "" && strings.HasPrefix(key, pre) {
			return p, nil
		}
	}
	return p, ora.Errorf(ora.EFORBIDDEN, "object.put: key %q is not under an allowed prefix", key)
}

// Check validates the key and its prefix; the target is the key. Errors:
// EINVALID, EFORBIDDEN.
func (o *ObjectPut) Check(params json.RawMessage) ([]string, error) {
	p, err := o.parse(params)
	if err != nil {
		return nil, err
	}
	return []string{p.Key}, nil
}

// Run writes the object. Errors: EINVALID, EFORBIDDEN, the store's errors.
func (o *ObjectPut) Run(ctx context.Context, params json.RawMessage) (Receipt, error) {
	p, err := o.parse(params)
	if err != nil {
		return Receipt{}, err
	}
	var body []byte
	var s string
	if json.Unmarshal(p.Body, &s) == nil {
		body = []byte(s)
	} else {
		body = p.Body
	}
	info, err := o.store.PutObject(ctx, p.Key, body, p.ContentType)
	if err != nil {
		return Receipt{Type: TypeObjectPut, Target: p.Key, At: o.now().UTC()}, err
	}
	return Receipt{Type: TypeObjectPut, Target: p.Key, ID: info.Version, Digest: info.Digest, At: o.now().UTC()}, nil
}
