package dynamostreams_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/dynamostreams"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observe/observetest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/sqlite"
)

// ticketsTable creates a user table with a NEW_AND_OLD_IMAGES stream on
// DynamoDB Local.
func ticketsTable(t *testing.T, db *dynamodb.Client) string {
	t.Helper()
	name := dynamotest.TableName("tickets")
	_, err := db.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
	})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

func putTicket(t *testing.T, db *dynamodb.Client, table, id, status string) {
	t.Helper()
	_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		"id": &types.AttributeValueMemberS{Value: id}, "status": &types.AttributeValueMemberS{Value: status},
		"priority": &types.AttributeValueMemberN{Value: "2"},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// ledgers are the two stores `ora dev` keeps checkpoints in.
func ledgers(t *testing.T, db *dynamodb.Client) map[string]ora.Ledger {
	t.Helper()
	lite, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ora.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lite.Close() })
	table := dynamotest.TableName("ledger")
	if err := dynamo.CreateLedgerTable(context.Background(), db, table); err != nil {
		t.Fatal(err)
	}
	return map[string]ora.Ledger{"sqlite": lite, "dynamodb": dynamo.New(db, table)}
}

// failing counts the records a poller delivered and fails one call.
type failing struct {
	obs   *observe.Observer
	cfg   observe.TableConfig
	calls int
	fail  int // the call that fails (1-based; 0: none)
	seen  [][]byte
}

func (f *failing) deliver(ctx context.Context, rec []byte) error {
	f.calls++
	if f.calls == f.fail {
		return ora.Transient(errors.New("process killed"), "deliver")
	}
	if !f.cfg.Matches(rec) {
		return nil
	}
	f.seen = append(f.seen, rec)
	_, err := f.obs.UserTableChange(ctx, f.cfg.Name, rec)
	return err
}

// A user table's stream read through the Streams API, with the process
// stopped in the middle (a delivery fails, the poller is dropped, a new one
// starts from the ledger's checkpoint): every change becomes exactly one
// signal and one wave. The same records delivered as Lambda would on AWS
// (observe-table with the stream in ora:tables) are the same signals.
func TestStreamSurvivesRestart(t *testing.T) {
	endpoint := dynamotest.Endpoint(t)
	db := dynamotest.NewClient(endpoint)
	cfgAWS := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}
	streams := dynamodbstreams.NewFromConfig(cfgAWS, func(o *dynamodbstreams.Options) { o.BaseEndpoint = aws.String(endpoint) })
	for name, ledger := range ledgers(t, db) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			table := ticketsTable(t, db)
			waves := &observetest.Waves{}
			obs, err := observe.New(ledger, waves, nil, func(o *observe.Options) { o.Debouncer = &observetest.Debouncer{} })
			if err != nil {
				t.Fatal(err)
			}
			cfg := observe.TableConfig{Name: "tickets", Events: []string{"INSERT"}, NewImage: map[string]any{"status": map[string]any{"S": []any{"open"}}}}
			checkpoints := observe.LedgerCheckpoints{Ledger: ledger}
			poller := func(f *failing) *dynamostreams.Poller {
				return &dynamostreams.Poller{Streams: streams, Tables: db, Table: table, Checkpoints: checkpoints, Deliver: f.deliver}
			}

			putTicket(t, db, table, "T-1", "open")
			putTicket(t, db, table, "T-2", "closed") // filtered out
			putTicket(t, db, table, "T-3", "open")
			first := &failing{obs: obs, cfg: cfg}
			if n, err := poller(first).Poll(ctx); err != nil || n != 3 {
				t.Fatalf("first poll: %d records, %v; want 3", n, err)
			}
			putTicket(t, db, table, "T-4", "open")
			putTicket(t, db, table, "T-1", "pending") // a MODIFY: filtered out
			putTicket(t, db, table, "T-5", "open")
			// The process dies delivering T-1's MODIFY (the second record of
			// this pass): T-4 was captured and checkpointed, the rest not.
			dying := &failing{obs: obs, cfg: cfg, fail: 2}
			if _, err := poller(dying).Poll(ctx); ora.ErrorCode(err) != ora.ETRANSIENT {
				t.Fatalf("dying poll: %v, want the delivery's transient error", err)
			}
			restarted := &failing{obs: obs, cfg: cfg}
			if n, err := poller(restarted).Poll(ctx); err != nil || n != 2 {
				t.Fatalf("after the restart: %d records, %v; want 2 (the MODIFY and T-5, after the checkpoint)", n, err)
			}
			if n, err := poller(&failing{obs: obs, cfg: cfg}).Poll(ctx); err != nil || n != 0 {
				t.Fatalf("a second restart: %d records, %v; want none (nothing repeated)", n, err)
			}

			var got []string
			for _, id := range waves.Started() {
				entries, err := ledger.Entries(ctx, id)
				if err != nil || len(entries) != 1 {
					t.Fatalf("signal %s: %v, %v", id, entries, err)
				}
				var sig ora.NormalizedSignal
				if err := json.Unmarshal(entries[0].Body, &sig); err != nil {
					t.Fatal(err)
				}
				var p struct {
					Keys map[string]any `json:"keys"`
					New  map[string]any `json:"new"`
				}
				if err := json.Unmarshal(sig.Payload, &p); err != nil {
					t.Fatal(err)
				}
				if sig.Source.Name != "tickets" || sig.Source.Table != table || sig.Source.Event != "insert" || p.New["priority"] != float64(2) {
					t.Errorf("signal %s: source %+v new %v; want tickets/%s insert with plain JSON images", id, sig.Source, p.New, table)
				}
				got = append(got, fmt.Sprint(p.Keys["id"]))
			}
			sort.Strings(got)
			if want := []string{"T-1", "T-3", "T-4", "T-5"}; !slices.Equal(got, want) {
				t.Errorf("signals of tickets %v, want %v (each open INSERT once)", got, want)
			}
			if waves.Calls() != 4 {
				t.Errorf("%d wave starts, want 4", waves.Calls())
			}

			// The AWS home: the same records, delivered by Lambda's event
			// source mapping to observe-table, are the same signals.
			var arn string
			var records []json.RawMessage
			for _, f := range [][][]byte{first.seen, dying.seen, restarted.seen} {
				for _, rec := range f {
					var r struct {
						ARN string `json:"eventSourceARN"`
					}
					_ = json.Unmarshal(rec, &r)
					arn = r.ARN
					records = append(records, rec)
				}
			}
			onAWS, err := observe.New(ledger, waves, nil, func(o *observe.Options) {
				o.Tables = []observe.TableConfig{{Name: "tickets", StreamARN: arn}}
			})
			if err != nil {
				t.Fatal(err)
			}
			batch, _ := json.Marshal(map[string]any{"Records": records})
			outcomes, err := onAWS.TableChanges(ctx, batch)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range outcomes {
				if o.Err != nil || !o.Receipt.Duplicate {
					t.Errorf("record %s through observe-table: %+v; want the signal the local stream captured", o.Ref, o)
				}
			}
		})
	}
}
