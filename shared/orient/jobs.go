package orient

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/ora-runtime/ora/shared/ora"
)

// JobStore keeps a wave's planned jobs where the state machine's "Fetch
// observations" Distributed Map reads them (its ItemReader, s3:getObject):
// an S3 bucket on AWS, a local folder in ora dev. The jobs travel by
// reference, so a wave of 10,000 jobs stays far under Step Functions'
// 256 KiB payload limit.
type JobStore interface {
	// PutJobs writes body (a JSON array of jobs) under key and returns the
	// bucket it is read from. Writing the same key again replaces it (Plan
	// is deterministic per signal, so a retry writes the same bytes).
	// Errors: EINVALID (a bad key), ETRANSIENT.
	PutJobs(ctx context.Context, key string, body []byte) (bucket string, err error)
}

// JobsKey is the object key of a wave's jobs.
func JobsKey(signalID string) string { return "waves/" + signalID + "/jobs.json" }

// S3PutAPI is the part of the S3 API S3Jobs calls; *s3.Client satisfies it.
type S3PutAPI interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// S3Jobs is a JobStore over an S3 bucket (the jobs bucket on AWS: encrypted,
// its objects expire by a lifecycle rule).
type S3Jobs struct {
	Client S3PutAPI
	Bucket string
}

var _ JobStore = S3Jobs{}

// PutJobs puts the object as application/json.
func (s S3Jobs) PutJobs(ctx context.Context, key string, body []byte) (string, error) {
	_, err := s.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.Bucket), Key: aws.String(key), Body: bytes.NewReader(body),
		ContentType: aws.String("application/json"),
	})
	if err != nil {
		return "", ora.Errorf(ora.ETRANSIENT, "put s3://%s/%s: %v", s.Bucket, key, err)
	}
	return s.Bucket, nil
}

// S3HeadAPI is the part of the S3 API S3Staged calls; *s3.Client satisfies it.
type S3HeadAPI interface {
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

// S3Staged answers whether a wave's jobs object is still in the jobs bucket
// (its lifecycle rule expires objects after 7 days); the api function's
// operator asks before resuming a wave at Fetch observations. The caller
// needs s3:GetObject and s3:ListBucket on the bucket: without ListBucket, S3
// answers a missing key with 403, not 404.
type S3Staged struct {
	Client S3HeadAPI
	Bucket string
}

// Staged heads the object. Errors: ETRANSIENT.
func (s S3Staged) Staged(ctx context.Context, signalID string) (bool, error) {
	key := JobsKey(signalID)
	_, err := s.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)})
	if err == nil {
		return true, nil
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && (ae.ErrorCode() == "NotFound" || ae.ErrorCode() == "NoSuchKey") {
		return false, nil
	}
	return false, ora.Errorf(ora.ETRANSIENT, "head s3://%s/%s: %v", s.Bucket, key, err)
}

// JobFolder is a JobStore over a local folder, laid out as S3 is
// (Dir/bucket/key): ora dev's engine reads it back with GetObject, the
// ItemReader's s3:getObject.
type JobFolder struct {
	Dir    string
	Bucket string
}

var _ JobStore = JobFolder{}

// path returns the file of bucket/key, refusing names that leave Dir.
func (f JobFolder) path(bucket, key string) (string, error) {
	if bucket == "" || strings.ContainsAny(bucket, `/\`) || bucket == "." || bucket == ".." {
		return "", ora.Invalid("bucket", "%q is not a bucket name", bucket)
	}
	clean := filepath.Clean(filepath.FromSlash(key))
	if key == "" || filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", ora.Invalid("key", "%q is not an object key inside the bucket", key)
	}
	return filepath.Join(f.Dir, bucket, clean), nil
}

// PutJobs writes the file atomically (a temporary file renamed into place).
func (f JobFolder) PutJobs(_ context.Context, key string, body []byte) (string, error) {
	p, err := f.path(f.Bucket, key)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", ora.Errorf(ora.ETRANSIENT, "jobs folder: %v", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".jobs-*")
	if err != nil {
		return "", ora.Errorf(ora.ETRANSIENT, "jobs folder: %v", err)
	}
	_, werr := tmp.Write(body)
	cerr := tmp.Close()
	if werr == nil && cerr == nil {
		werr = os.Rename(tmp.Name(), p)
	}
	if werr != nil || cerr != nil {
		_ = os.Remove(tmp.Name())
		return "", ora.Errorf(ora.ETRANSIENT, "write %s: %v", p, errorsJoin(werr, cerr))
	}
	return f.Bucket, nil
}

// GetObject reads bucket/key back: the engine's ItemReader in ora dev.
func (f JobFolder) GetObject(_ context.Context, bucket, key string) ([]byte, error) {
	p, err := f.path(bucket, key)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return nil, ora.Errorf(ora.ENOTFOUND, "NoSuchKey: s3://%s/%s", bucket, key)
	}
	return b, err
}

// Staged reports whether the wave of signalID still has its jobs file (Expire
// removes it after the retention): the operator asks before resuming a wave
// at Fetch observations. Errors: EINVALID, ETRANSIENT.
func (f JobFolder) Staged(_ context.Context, signalID string) (bool, error) {
	p, err := f.path(f.Bucket, JobsKey(signalID))
	if err != nil {
		return false, err
	}
	_, err = os.Stat(p)
	switch {
	case err == nil:
		return true, nil
	case os.IsNotExist(err):
		return false, nil
	}
	return false, ora.Errorf(ora.ETRANSIENT, "jobs folder: %v", err)
}

// Expire removes the wave job files older than age, and the wave folders
// they leave empty: ora dev's counterpart of the jobs bucket's lifecycle
// rule. It returns how many files it removed.
func (f JobFolder) Expire(age time.Duration, now time.Time) (int, error) {
	n := 0
	root := filepath.Join(f.Dir, f.Bucket)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err == nil && now.Sub(info.ModTime()) > age {
			if os.Remove(p) == nil {
				n++
				// The wave's folder goes with its last file (a folder
				// takes a block of its own).
				_ = os.Remove(filepath.Dir(p))
			}
		}
		return nil
	})
	return n, err
}

func errorsJoin(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// Staged is what Plan hands the state machine (its result at $.plan): where
// the wave's jobs are, and how the Fetch Map runs them. The jobs themselves
// stay out of the execution's state.
type Staged struct {
	// JobsBucket and JobsKey locate the JSON array of jobs the ItemReader reads.
	JobsBucket string `json:"jobs_bucket"`
	JobsKey    string `json:"jobs_key"`
	// JobCount is how many jobs the array holds.
	JobCount int `json:"job_count"`
	// BatchSize is how many jobs one child execution runs, one after the
	// other (the Map's ItemBatcher.MaxItemsPerBatchPath): as many as fit in
	// the fetch budget at the profile's job timeout.
	BatchSize int `json:"batch_size"`
	// ToleratedFailurePercentage is the profile's tolerated_failure_percent
	// (the Map's ToleratedFailurePercentagePath).
	ToleratedFailurePercentage int `json:"tolerated_failure_percentage"`
	// MaxConcurrency is the profile's max_concurrency: the most child
	// executions (each running its batch one job at a time, so the most
	// jobs) the Map runs at once (its MaxConcurrencyPath).
	MaxConcurrency int `json:"max_concurrency"`
	// Drops counts the jobs Plan left out, by reason.
	Drops Drops `json:"drops,omitempty"`
	// Jobs are the jobs themselves when the fan-out is small enough to run
	// as an inline Map in an Express child (at most Options.InlineMaxJobs,
	// all at once under MaxConcurrency); nil for a Distributed Map. The jobs
	// are written to the job store either way (a resume at Fetch
	// observations reads them there).
	Jobs []Job `json:"jobs,omitempty"`
	// ToleratedFailures is how many of the inline jobs may fail: the
	// tolerated percentage of JobCount, rounded down, as the Distributed
	// Map applies it.
	ToleratedFailures int `json:"tolerated_failures"`
}

// DefaultInlineMaxJobs is the largest fan-out run inline by default: Step
// Functions runs at most 40 iterations of an inline Map at once.
const DefaultInlineMaxJobs = 40

// MaxInlineJobTimeout is the longest job timeout of a fan-out run inline:
// the inline Map runs in the reason child, whose 5-minute Express budget
// counts each inline Fetch at this bound (its TimeoutSeconds, a little
// more); slower jobs run in the Distributed Map.
const MaxInlineJobTimeout = 10 * time.Second

// MaxBatchSize is the most jobs one Fetch child execution runs.
const MaxBatchSize = 100

// DefaultFetchBudget is how long one Fetch invocation may spend on its batch
// by default: under the fetch Lambda's 60 s timeout, with room to write.
const DefaultFetchBudget = 50 * time.Second

// batchSize is how many jobs of timeout each fit in budget, 1..MaxBatchSize.
func batchSize(budget time.Duration, timeoutMS int) int {
	if timeoutMS <= 0 {
		timeoutMS = ora.DefaultJobTimeoutMS
	}
	return min(max(1, int(budget.Milliseconds())/timeoutMS), MaxBatchSize)
}

// Stage plans the wave (PlanWave) and writes its jobs to the job store, for
// the Fetch Map's ItemReader. Running it again for a signal writes the same
// jobs under the same key. Errors: EINVALID (no job store configured, or as
// PlanWave), ENOTFOUND, ECONFLICT, ETRANSIENT.
func (p *Planner) Stage(ctx context.Context, signalID string) (Staged, error) {
	if p.o.Jobs == nil {
		return Staged{}, ora.Invalid("jobs", "no job store is configured (the Fetch Map reads the jobs from it)")
	}
	wp, err := p.PlanWave(ctx, signalID)
	if err != nil {
		return Staged{}, err
	}
	jobs := wp.Jobs
	if jobs == nil {
		jobs = []Job{}
	}
	body, err := json.Marshal(jobs)
	if err != nil {
		return Staged{}, ora.Errorf(ora.EINTERNAL, "encode jobs: %v", err)
	}
	key := JobsKey(signalID)
	bucket, err := p.o.Jobs.PutJobs(ctx, key, body)
	if err != nil {
		return Staged{}, fmt.Errorf("orient: plan %s: write jobs: %w", signalID, err)
	}
	st := Staged{
		JobsBucket: bucket, JobsKey: key, JobCount: len(jobs),
		BatchSize:                  batchSize(p.o.FetchBudget, wp.Limits.JobTimeoutMS),
		ToleratedFailurePercentage: wp.Limits.ToleratedFailurePercent,
		MaxConcurrency:             cmp.Or(wp.Limits.MaxConcurrency, ora.DefaultMaxConcurrency),
		Drops:                      wp.Drops,
		ToleratedFailures:          len(jobs) * wp.Limits.ToleratedFailurePercent / 100,
	}
	// Inline only when every job runs at once and quickly: the child's time
	// budget counts one round of the inline Map at MaxInlineJobTimeout.
	if len(jobs) <= min(p.o.InlineMaxJobs, st.MaxConcurrency) &&
		time.Duration(cmp.Or(wp.Limits.JobTimeoutMS, ora.DefaultJobTimeoutMS))*time.Millisecond <= MaxInlineJobTimeout {
		st.Jobs = jobs
	}
	return st, nil
}
