package orient

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/ora-runtime/ora/shared/ora"
)

// S3API is the part of the S3 API the S3 object reader calls; *s3.Client
// satisfies it.
type S3API interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// S3 is an ObjectReader over an S3 bucket (the objects family on AWS).
type S3 struct {
	Client S3API
	Bucket string
}

var _ ObjectReader = S3{}

// List pages through ListObjectsV2 (which returns keys in order).
func (s S3) List(ctx context.Context, prefix string, limit int) ([]ObjectInfo, error) {
	var out []ObjectInfo
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.Bucket), Prefix: aws.String(prefix)}
	for len(out) < limit {
		page, err := s.Client.ListObjectsV2(ctx, in)
		if err != nil {
			return nil, ora.Errorf(ora.ETRANSIENT, "list s3://%s/%s: %v", s.Bucket, prefix, err)
		}
		for _, o := range page.Contents {
			if len(out) == limit {
				break
			}
			out = append(out, ObjectInfo{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), Modified: aws.ToTime(o.LastModified).UTC(), ETag: strings.Trim(aws.ToString(o.ETag), `"`)})
		}
		if !aws.ToBool(page.IsTruncated) {
			break
		}
		in.ContinuationToken = page.NextContinuationToken
	}
	return out, nil
}

// Get reads at most maxBytes+1 bytes of one object.
func (s S3) Get(ctx context.Context, key string, maxBytes int64) ([]byte, ObjectInfo, error) {
	out, err := s.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && (ae.ErrorCode() == "NotFound" || ae.ErrorCode() == "NoSuchKey") {
			return nil, ObjectInfo{}, ora.Errorf(ora.ENOTFOUND, "object s3://%s/%s not found", s.Bucket, key)
		}
		return nil, ObjectInfo{}, ora.Errorf(ora.ETRANSIENT, "get s3://%s/%s: %v", s.Bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, maxBytes+1))
	if err != nil {
		return nil, ObjectInfo{}, ora.Errorf(ora.ETRANSIENT, "read s3://%s/%s: %v", s.Bucket, key, err)
	}
	return b, ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), Modified: aws.ToTime(out.LastModified).UTC(), ETag: strings.Trim(aws.ToString(out.ETag), `"`)}, nil
}
