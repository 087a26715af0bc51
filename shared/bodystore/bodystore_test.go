package bodystore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/ora-runtime/ora/shared/ora"
)

func TestFolderRoundTripAndKeys(t *testing.T) {
	ctx := context.Background()
	f := Folder{Root: t.TempDir()}
	body := []byte(`{"big":"` + strings.Repeat("x", 1<<20) + `"}`)
	key := ora.BodyKey(ora.Digest(body))
	if err := f.PutBody(ctx, key, body); err != nil {
		t.Fatal(err)
	}
	if err := f.PutBody(ctx, key, body); err != nil { // content-addressed: a second put is harmless
		t.Fatal(err)
	}
	got, err := f.GetBody(ctx, key)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("GetBody: %d bytes, %v", len(got), err)
	}
	if _, err := f.GetBody(ctx, ora.BodyKey(ora.Digest([]byte("other")))); ora.ErrorCode(err) != ora.ENOTFOUND {
		t.Errorf("missing body: %v, want ENOTFOUND", err)
	}
	for _, bad := range []string{"", "ledger/bodies/sha256/", ora.ExpiringBodyPrefix, ora.ExpiringBodyPrefix + "../x", "ledger/bodies/other/abc", "actions/x", ora.BodyPrefix + "../../etc/passwd", ora.BodyPrefix + "a/b", ora.BodyPrefix + "a.b"} {
		if err := f.PutBody(ctx, bad, body); ora.ErrorCode(err) != ora.EINVALID {
			t.Errorf("PutBody(%q): %v, want EINVALID", bad, err)
		}
	}
	if err := (Folder{}).PutBody(ctx, key, body); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("no root: %v, want EINVALID", err)
	}
}

// ExpireBodies deletes expiring bodies older than ora.ExpiringBodyDays and
// nothing else: not a younger expiring body, not a kept one of any age.
func TestFolderExpireBodies(t *testing.T) {
	ctx := context.Background()
	f := Folder{Root: t.TempDir()}
	now := time.Now()
	old := now.Add(-time.Duration(ora.ExpiringBodyDays+1) * 24 * time.Hour)
	put := func(key string, mod time.Time) {
		t.Helper()
		if err := f.PutBody(ctx, key, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(f.Root, filepath.FromSlash(key)), mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	put(ora.ExpiringBodyPrefix+"old", old)
	put(ora.ExpiringBodyPrefix+"young", now.Add(-24*time.Hour))
	put(ora.BodyPrefix+"kept", old)
	n, err := f.ExpireBodies(now)
	if err != nil || n != 1 {
		t.Fatalf("ExpireBodies: %d, %v; want 1", n, err)
	}
	for key, want := range map[string]bool{ora.ExpiringBodyPrefix + "old": false, ora.ExpiringBodyPrefix + "young": true, ora.BodyPrefix + "kept": true} {
		_, err := f.GetBody(ctx, key)
		if got := err == nil; got != want {
			t.Errorf("%s present %v, want %v (%v)", key, got, want, err)
		}
	}
	if n, err := (Folder{Root: t.TempDir()}).ExpireBodies(now); n != 0 || err != nil {
		t.Errorf("an empty folder: %d, %v", n, err)
	}
}

// fakeS3 is an in-memory bucket that answers like S3 for a missing key.
type fakeS3 struct {
	objects map[string][]byte
	err     error
}

func (f *fakeS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if f.err != nil {
		return nil, f.err
	}
	b, _ := io.ReadAll(in.Body)
	f.objects[aws.ToString(in.Bucket)+"/"+aws.ToString(in.Key)] = b
	return &s3.PutObjectOutput{}, nil
}

func (f *fakeS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if f.err != nil {
		return nil, f.err
	}
	b, ok := f.objects[aws.ToString(in.Bucket)+"/"+aws.ToString(in.Key)]
	if !ok {
		return nil, &smithy.GenericAPIError{Code: "NoSuchKey", Message: "The specified key does not exist."}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(b))}, nil
}

// TestS3 checks the store's keys, bucket and error mapping (S3 itself does
// not run here; LocalStack or AWS do).
func TestS3(t *testing.T) {
	ctx := context.Background()
	fake := &fakeS3{objects: map[string][]byte{}}
	s := S3{Client: fake, Bucket: "ora-objects"}
	body := []byte(`{"a":1}`)
	key := ora.BodyKey(ora.Digest(body))
	if err := s.PutBody(ctx, key, body); err != nil {
		t.Fatal(err)
	}
	if _, ok := fake.objects["ora-objects/"+key]; !ok {
		t.Errorf("objects %v, want ora-objects/%s", fake.objects, key)
	}
	if got, err := s.GetBody(ctx, key); err != nil || !bytes.Equal(got, body) {
		t.Errorf("GetBody = %s, %v", got, err)
	}
	if _, err := s.GetBody(ctx, ora.BodyKey(ora.Digest(nil))); ora.ErrorCode(err) != ora.ENOTFOUND {
		t.Errorf("missing: %v, want ENOTFOUND", err)
	}
	fake.err = &smithy.GenericAPIError{Code: "SlowDown"}
	if err := s.PutBody(ctx, key, body); ora.ErrorCode(err) != ora.ETRANSIENT {
		t.Errorf("SlowDown: %v, want ETRANSIENT", err)
	}
	fake.err = errors.New("access denied")
	if err := s.PutBody(ctx, key, body); ora.ErrorCode(err) != ora.EINTERNAL {
		t.Errorf("other error: %v, want EINTERNAL", err)
	}
	if FromEnv(func(string) string { return "" }, fake) != nil {
		t.Error("FromEnv without ORA_BODY_BUCKET returned a store")
	}
	if st, ok := FromEnv(func(k string) string { return map[string]string{"ORA_BODY_BUCKET": "b"}[k] }, fake).(S3); !ok || st.Bucket != "b" {
		t.Errorf("FromEnv = %#v", st)
	}
}
