// Package bodystore holds ledger entry bodies too large for a ledger item
// (ora.BodyStore): Folder writes them under ora dev's local object folder,
// S3 into the stack's bucket. Keys are content addresses (ora.BodyKey), so a
// write is idempotent and a read is checked against the entry's digest by the
// ledger (ora.LoadBody).
package bodystore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/ora-runtime/ora/shared/ora"
)

// checkKey refuses keys outside ora.BodyPrefix and ora.ExpiringBodyPrefix
// or with path segments that could climb out of them.
func checkKey(key string) error {
	rest, ok := strings.CutPrefix(key, ora.BodyPrefix)
	if !ok {
		rest, ok = strings.CutPrefix(key, ora.ExpiringBodyPrefix)
	}
	if !ok || rest == "" || strings.ContainsAny(rest, "/\\.") {
		return ora.Invalid("key", "%q is not a body key (%s<sha256> or %s<sha256>)", key, ora.BodyPrefix, ora.ExpiringBodyPrefix)
	}
	return nil
}

// ExpireBodies deletes the bodies under ora.ExpiringBodyPrefix last written
// more than ora.ExpiringBodyDays before now, as the stack's bucket's
// lifecycle rule does on AWS; it returns how many it deleted.
func (f Folder) ExpireBodies(now time.Time) (int, error) {
	return f.ExpireBodiesAfter(time.Duration(ora.ExpiringBodyDays)*24*time.Hour, now)
}

// ExpireBodiesAfter is ExpireBodies for bodies last written more than age
// before now: ora dev's sweeper passes its longest retention of facts and
// packets, plus a margin, so a body outlives every entry that refers to it.
func (f Folder) ExpireBodiesAfter(age time.Duration, now time.Time) (int, error) {
	if f.Root == "" {
		return 0, ora.Invalid("root", "required")
	}
	dir := filepath.Join(f.Root, filepath.FromSlash(ora.ExpiringBodyPrefix))
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil && now.Sub(info.ModTime()) > age && os.Remove(p) == nil {
			n++
		}
		return nil
	})
	return n, err
}

// Folder is an ora.BodyStore over a local folder (ora dev's object folder,
// actions.object.root): a body lives at Root/<key>.
type Folder struct{ Root string }

var _ ora.BodyStore = Folder{}

func (f Folder) file(key string) (string, error) {
	if f.Root == "" {
		return "", ora.Invalid("root", "required")
	}
	if err := checkKey(key); err != nil {
		return "", err
	}
	return filepath.Join(f.Root, filepath.FromSlash(key)), nil
}

// PutBody writes body through a temporary file and a rename, so a reader
// never sees a partial body.
func (f Folder) PutBody(_ context.Context, key string, body []byte) error {
	name, err := f.file(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return fmt.Errorf("body store: mkdir for %s: %w", key, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), ".put-*")
	if err != nil {
		return fmt.Errorf("body store: put %s: %w", key, err)
	}
	_, werr := tmp.Write(body)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("body store: put %s: %w", key, err)
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("body store: put %s: %w", key, err)
	}
	return nil
}

// GetBody reads Root/key. Errors: ENOTFOUND, EINVALID for a bad key.
func (f Folder) GetBody(_ context.Context, key string) ([]byte, error) {
	name, err := f.file(key)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ora.Errorf(ora.ENOTFOUND, "body %s not found under %s", key, f.Root)
	}
	if err != nil {
		return nil, fmt.Errorf("body store: get %s: %w", key, err)
	}
	return b, nil
}

// S3API is the part of the S3 API the S3 body store calls; *s3.Client
// satisfies it.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// S3 is an ora.BodyStore over a bucket: a body lives at s3://Bucket/<key>.
type S3 struct {
	Client S3API
	Bucket string
}

var _ ora.BodyStore = S3{}

// PutBody writes body to s3://Bucket/key.
func (s S3) PutBody(ctx context.Context, key string, body []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	_, err := s.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.Bucket), Key: aws.String(key),
		Body: bytes.NewReader(body), ContentType: aws.String("application/json"),
	})
	if err != nil {
		return translate(err, "put s3://%s/%s", s.Bucket, key)
	}
	return nil
}

// GetBody reads s3://Bucket/key. Errors: ENOTFOUND, ETRANSIENT.
func (s S3) GetBody(ctx context.Context, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	out, err := s.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)})
	if err != nil {
		return nil, translate(err, "get s3://%s/%s", s.Bucket, key)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, ora.Transient(err, "read s3://%s/%s", s.Bucket, key)
	}
	return b, nil
}

// translate maps S3's answers onto ora's codes: a missing key is ENOTFOUND,
// throttling and server errors ETRANSIENT, the rest stay as they are.
func translate(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return ora.Errorf(ora.ENOTFOUND, "%s: not found", what)
		case "SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout":
			return ora.Transient(err, "%s", what)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ora.Transient(err, "%s", what)
	}
	return fmt.Errorf("body store: %s: %w", what, err)
}

// FromEnv returns the S3 body store named by ORA_BODY_BUCKET (the Lambda
// functions' environment), or nil when it is unset: then entries over the
// item limit are refused rather than stored by reference.
func FromEnv(getenv func(string) string, client S3API) ora.BodyStore {
	if b := getenv("ORA_BODY_BUCKET"); b != "" {
		return S3{Client: client, Bucket: b}
	}
	return nil
}
