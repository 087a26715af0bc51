// Package dynamostreams reads a DynamoDB table's stream through the Streams
// API (DescribeStream, GetShardIterator, GetRecords), as `ora dev` watches the
// user's tables: each record is delivered in the JSON form Lambda's event
// source mapping gives it, and the last sequence number delivered per shard is
// checkpointed, so a restart resumes after it: nothing lost, and what a crash
// re-reads the ledger answers as a duplicate.
package dynamostreams

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/ora-runtime/ora/shared/ora"
)

// Client is the part of the Streams API a Poller calls.
type Client interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// Tables finds a table's stream.
type Tables interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// Checkpoints keep the last sequence number delivered per stream shard.
type Checkpoints interface {
	// Checkpoint returns the shard's last delivered sequence number, "" when
	// none. Errors: ETRANSIENT.
	Checkpoint(ctx context.Context, stream, shard string) (string, error)
	// SaveCheckpoint records seq as delivered. Errors: ETRANSIENT.
	SaveCheckpoint(ctx context.Context, stream, shard, seq string) error
}

// DefaultInterval is how often a Poller reads its stream.
const DefaultInterval = time.Second

// Poller delivers the records of one table's stream.
type Poller struct {
	Streams     Client
	Tables      Tables
	Table       string // the table's name
	Checkpoints Checkpoints
	// Deliver receives each record (Lambda's JSON form). An error stops the
	// shard's pass; the next pass starts again after the last checkpoint.
	Deliver  func(ctx context.Context, record []byte) error
	Interval time.Duration // default DefaultInterval
	Logger   *slog.Logger  // default slog.Default()

	stream string
	iters  map[string]string // shard id -> next iterator
	closed map[string]bool   // shards read to their end
}

// Run polls every Interval until ctx ends; it returns ctx's error. Failures
// are logged and the next pass tries again.
func (p *Poller) Run(ctx context.Context) error {
	interval := p.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	logger := p.Logger
	if logger == nil {
		logger = slog.Default()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := p.Poll(ctx); err != nil && ctx.Err() == nil {
			logger.ErrorContext(ctx, "table stream poll failed", "table", p.Table, "error", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Poll reads every shard of the stream up to its newest record, parents
// before children, and returns how many records it delivered. Errors:
// EINVALID (the table has no stream), ETRANSIENT, and Deliver's.
func (p *Poller) Poll(ctx context.Context) (int, error) {
	if p.iters == nil {
		p.iters, p.closed = map[string]string{}, map[string]bool{}
	}
	if p.stream == "" {
		out, err := p.Tables.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(p.Table)})
		if err != nil {
			return 0, ora.Transient(err, "table %s: describe", p.Table)
		}
		if out.Table == nil || out.Table.LatestStreamArn == nil {
			return 0, ora.Invalid("tables.table", "table %s has no stream: enable one (NEW_AND_OLD_IMAGES)", p.Table)
		}
		p.stream = *out.Table.LatestStreamArn
	}
	shards, err := p.shards(ctx)
	if err != nil {
		return 0, err
	}
	present := map[string]bool{}
	for _, s := range shards {
		present[aws.ToString(s.ShardId)] = true
	}
	total := 0
	var errs []error
	for _, s := range shards {
		id := aws.ToString(s.ShardId)
		if p.closed[id] {
			continue
		}
		if parent := aws.ToString(s.ParentShardId); parent != "" && present[parent] && !p.closed[parent] {
			continue // the parent's records come first; the next pass reads this one
		}
		n, err := p.readShard(ctx, id)
		total += n
		if err != nil {
			errs = append(errs, fmt.Errorf("shard %s: %w", id, err))
		}
	}
	return total, errors.Join(errs...)
}

func (p *Poller) shards(ctx context.Context) ([]types.Shard, error) {
	var shards []types.Shard
	var start *string
	for {
		out, err := p.Streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(p.stream), ExclusiveStartShardId: start})
		if err != nil {
			return nil, ora.Transient(err, "table %s: describe stream", p.Table)
		}
		if out.StreamDescription == nil {
			return shards, nil
		}
		shards = append(shards, out.StreamDescription.Shards...)
		start = out.StreamDescription.LastEvaluatedShardId
		if start == nil {
			return shards, nil
		}
	}
}

// iterator returns the shard's iterator: the one the last read returned, or
// after the checkpoint, or from the oldest record the stream keeps.
func (p *Poller) iterator(ctx context.Context, shard string) (string, error) {
	if it, ok := p.iters[shard]; ok {
		return it, nil
	}
	seq, err := p.Checkpoints.Checkpoint(ctx, p.stream, shard)
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(p.stream), ShardId: aws.String(shard), ShardIteratorType: types.ShardIteratorTypeTrimHorizon}
	if seq != "" {
		in.ShardIteratorType, in.SequenceNumber = types.ShardIteratorTypeAfterSequenceNumber, aws.String(seq)
	}
	out, err := p.Streams.GetShardIterator(ctx, in)
	if err != nil {
		return "", ora.Transient(err, "get shard iterator")
	}
	return aws.ToString(out.ShardIterator), nil
}

func (p *Poller) readShard(ctx context.Context, shard string) (int, error) {
	it, err := p.iterator(ctx, shard)
	if err != nil {
		return 0, err
	}
	n := 0
	for it != "" {
		out, err := p.Streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it)})
		if err != nil {
			var expired *types.ExpiredIteratorException
			if errors.As(err, &expired) {
				delete(p.iters, shard) // the next pass starts after the checkpoint
			}
			return n, ora.Transient(err, "get records")
		}
		last := ""
		for _, r := range out.Records {
			b, err := recordJSON(r, p.stream)
			if err == nil {
				err = p.Deliver(ctx, b)
			}
			if err != nil {
				delete(p.iters, shard)
				if last != "" {
					if cerr := p.Checkpoints.SaveCheckpoint(ctx, p.stream, shard, last); cerr != nil {
						return n, errors.Join(err, cerr)
					}
				}
				return n, err
			}
			last = aws.ToString(r.Dynamodb.SequenceNumber)
			n++
		}
		if last != "" {
			if err := p.Checkpoints.SaveCheckpoint(ctx, p.stream, shard, last); err != nil {
				delete(p.iters, shard)
				return n, fmt.Errorf("checkpoint: %w", err)
			}
		}
		next := aws.ToString(out.NextShardIterator)
		if next == "" {
			p.closed[shard] = true
			delete(p.iters, shard)
			return n, nil
		}
		p.iters[shard] = next
		if len(out.Records) == 0 {
			return n, nil // caught up
		}
		it = next
	}
	return n, nil
}

// record is a stream record in the JSON form Lambda delivers.
type record struct {
	EventID        string       `json:"eventID"`
	EventName      string       `json:"eventName"`
	EventVersion   string       `json:"eventVersion,omitempty"`
	EventSource    string       `json:"eventSource"`
	AWSRegion      string       `json:"awsRegion,omitempty"`
	EventSourceARN string       `json:"eventSourceARN"`
	DynamoDB       streamRecord `json:"dynamodb"`
}

type streamRecord struct {
	ApproximateCreationDateTime float64        `json:"ApproximateCreationDateTime"`
	Keys                        map[string]any `json:"Keys,omitempty"`
	NewImage                    map[string]any `json:"NewImage,omitempty"`
	OldImage                    map[string]any `json:"OldImage,omitempty"`
	SequenceNumber              string         `json:"SequenceNumber"`
	SizeBytes                   int64          `json:"SizeBytes,omitempty"`
	StreamViewType              string         `json:"StreamViewType,omitempty"`
}

// recordJSON writes r as Lambda's event source mapping would deliver it.
func recordJSON(r types.Record, stream string) ([]byte, error) {
	if r.Dynamodb == nil {
		return nil, ora.Invalid("record.dynamodb", "missing")
	}
	d := r.Dynamodb
	out := record{
		EventID: aws.ToString(r.EventID), EventName: string(r.EventName), EventVersion: aws.ToString(r.EventVersion),
		EventSource: aws.ToString(r.EventSource), AWSRegion: aws.ToString(r.AwsRegion), EventSourceARN: stream,
		DynamoDB: streamRecord{
			Keys: item(d.Keys), NewImage: item(d.NewImage), OldImage: item(d.OldImage),
			SequenceNumber: aws.ToString(d.SequenceNumber), SizeBytes: aws.ToInt64(d.SizeBytes), StreamViewType: string(d.StreamViewType),
		},
	}
	if d.ApproximateCreationDateTime != nil {
		out.DynamoDB.ApproximateCreationDateTime = float64(d.ApproximateCreationDateTime.UnixMilli()) / 1000
	}
	return json.Marshal(out)
}

func item(m map[string]types.AttributeValue) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = attribute(v)
	}
	return out
}

// attribute writes an attribute value in DynamoDB JSON ({"S": "..."}).
func attribute(v types.AttributeValue) map[string]any {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": x.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": x.Value}
	case *types.AttributeValueMemberB:
		return map[string]any{"B": base64.StdEncoding.EncodeToString(x.Value)}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": x.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": x.Value}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": x.Value}
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": x.Value}
	case *types.AttributeValueMemberBS:
		bs := make([]string, len(x.Value))
		for i, b := range x.Value {
			bs[i] = base64.StdEncoding.EncodeToString(b)
		}
		return map[string]any{"BS": bs}
	case *types.AttributeValueMemberM:
		return map[string]any{"M": item(x.Value)}
	case *types.AttributeValueMemberL:
		l := make([]any, len(x.Value))
		for i, e := range x.Value {
			l[i] = attribute(e)
		}
		return map[string]any{"L": l}
	}
	return map[string]any{"NULL": true}
}
