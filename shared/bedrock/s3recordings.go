package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/ora-runtime/ora/shared/ora"
)

// S3API is the part of the S3 API S3Recordings calls; *s3.Client
// satisfies it.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// MaxRecordingBytes bounds a recording read back from a store.
const MaxRecordingBytes = 4 << 20

// S3Recordings keeps recordings as objects s3://Bucket/<Prefix><digest>.json
// (the golden prefix's recordings/ on AWS), in the format DirRecordings
// writes, so the api function's gate reads them as it reads a synced
// folder.
type S3Recordings struct {
	Client S3API
	Bucket string
	Prefix string
}

var (
	_ RecordingStore   = S3Recordings{}
	_ RecordingCreator = S3Recordings{}
)

// Recording reads <Prefix><digest>.json. Errors: ENOTFOUND, EINVALID,
// ETRANSIENT.
func (s S3Recordings) Recording(ctx context.Context, digest string) (Recording, error) {
	if !validDigest(digest) {
		return Recording{}, ora.Invalid("digest", "%q is not a sha256 digest", digest)
	}
	out, err := s.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(s.Prefix + digest + ".json")})
	if err != nil {
		return Recording{}, s3Error(err, "recording %s", digest)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, MaxRecordingBytes+1))
	if err != nil {
		return Recording{}, ora.Transient(err, "recording %s", digest)
	}
	return ParseRecording(digest, b)
}

// Object reads <Prefix><name>, another file of the recordings folder (the
// MCP servers' tool lists), at most MaxRecordingBytes. Errors: ENOTFOUND,
// EINVALID (too large), ETRANSIENT.
func (s S3Recordings) Object(ctx context.Context, name string) ([]byte, error) {
	out, err := s.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(s.Prefix + name)})
	if err != nil {
		return nil, s3Error(err, "recordings %s", name)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, MaxRecordingBytes+1))
	if err != nil {
		return nil, ora.Transient(err, "recordings %s", name)
	}
	if len(b) > MaxRecordingBytes {
		return nil, ora.Invalid(name, "more than %d bytes", MaxRecordingBytes)
	}
	return b, nil
}

// Keep writes r, replacing what is there. Errors: EINVALID, ETRANSIENT.
func (s S3Recordings) Keep(ctx context.Context, r Recording) error { return s.put(ctx, r, false) }

// Create writes r only where no object is (If-None-Match: *). Errors:
// ECONFLICT (a recording exists), EINVALID, ETRANSIENT.
func (s S3Recordings) Create(ctx context.Context, r Recording) error { return s.put(ctx, r, true) }

func (s S3Recordings) put(ctx context.Context, r Recording, once bool) error {
	if !validDigest(r.Digest) {
		return ora.Invalid("digest", "%q is not a sha256 digest", r.Digest)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return ora.Errorf(ora.EINTERNAL, "recording %s: %v", r.Digest, err)
	}
	in := &s3.PutObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(s.Prefix + r.Digest + ".json"),
		Body: bytes.NewReader(append(b, '\n')), ContentType: aws.String("application/json")}
	if once {
		in.IfNoneMatch = aws.String("*")
	}
	if _, err := s.Client.PutObject(ctx, in); err != nil {
		return s3Error(err, "put recording %s", r.Digest)
	}
	return nil
}

// s3Error maps S3's answers onto ora's codes: a missing key is ENOTFOUND, a
// lost If-None-Match ECONFLICT, throttling and server errors ETRANSIENT.
func s3Error(err error, format string, args ...any) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return ora.Errorf(ora.ENOTFOUND, format+": not found", args...)
		case "PreconditionFailed", "ConditionalRequestConflict":
			return ora.Errorf(ora.ECONFLICT, format+": exists", args...)
		case "SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout":
			return ora.Transient(err, format, args...)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ora.Transient(err, format, args...)
	}
	return ora.Errorf(ora.EINTERNAL, format+": %v", append(args, err)...)
}
