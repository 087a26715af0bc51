package dynamo

import (
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/ora-runtime/ora/shared/bodystore"
)

// BodiesFromEnv is the New option every Lambda function passes: the
// ledger's body store is the S3 bucket named by ORA_BODY_BUCKET, reached
// with cfg, or none when it is unset (entries over ora.MaxItemBytes are then
// refused).
func BodiesFromEnv(cfg aws.Config) func(*Options) {
	store := bodystore.FromEnv(os.Getenv, s3.NewFromConfig(cfg))
	return func(o *Options) { o.Bodies = store }
}
