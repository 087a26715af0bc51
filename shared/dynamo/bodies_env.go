package dynamo

import (
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/ora-runtime/ora/shared/bodystore"
	"github.com/ora-runtime/ora/shared/ora"
)

// FromEnv is the New option every Lambda function passes: the ledger's body
// store is the S3 bucket named by ORA_BODY_BUCKET, reached with cfg (none
// when it is unset: entries over ora.MaxItemBytes are then refused), and its
// retention is ora.EnvRetention's (unset: ora.DefaultRetention). Errors:
// EINVALID when ora.EnvRetention cannot be read.
func FromEnv(cfg aws.Config) (func(*Options), error) {
	store := bodystore.FromEnv(os.Getenv, s3.NewFromConfig(cfg))
	retention := ora.DefaultRetention()
	if s, ok := os.LookupEnv(ora.EnvRetention); ok {
		r, err := ora.ParseRetention(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ora.EnvRetention, err)
		}
		retention = r
	}
	return func(o *Options) { o.Bodies, o.Retention = store, retention }, nil
}

// MustFromEnv is FromEnv for a function's start, where a bad environment is
// a deployment's mistake: it panics with FromEnv's error.
func MustFromEnv(cfg aws.Config) func(*Options) {
	opt, err := FromEnv(cfg)
	if err != nil {
		panic(err)
	}
	return opt
}
