package embedded

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
)

// POST /events takes an AWS event signed as the events source, answers as
// PutEvents does, and the event becomes an event signal with its wave.
func TestPostEventsRoute(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	r, err := New(context.Background(), cfg, func(o *Options) { o.Logger = discard() })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	body, err := os.ReadFile(filepath.Join("..", "..", "events", "event", "cloudwatch-alarm-state-change.json"))
	if err != nil {
		t.Fatal(err)
	}
	post := func(h http.Header) (int, eventsAnswer) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/events", strings.NewReader(string(body)))
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a eventsAnswer
		_ = json.NewDecoder(resp.Body).Decode(&a)
		return resp.StatusCode, a
	}
	h, err := observe.SignDelivery(cfg.Events, body, time.Now(), "alarm-1")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		header http.Header
		status int
		dup    bool
	}{
		{"first", h, http.StatusAccepted, false},
		{"replayed", h, http.StatusOK, true},
		{"unsigned", http.Header{"Content-Type": {"application/json"}}, http.StatusUnauthorized, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, a := post(tt.header)
			if status != tt.status {
				t.Fatalf("status %d, want %d", status, tt.status)
			}
			if status >= 400 {
				return
			}
			if len(a.Entries) != 1 || a.FailedEntryCount != 0 || a.Entries[0].Duplicate != tt.dup || a.Entries[0].EventID != "6f1d3a2e-8c4b-4f6e-9a51-0d2b7c9e4a13" {
				t.Fatalf("answer %+v", a)
			}
			entries, err := r.ledger.Entries(context.Background(), a.Entries[0].SignalID)
			if err != nil || entries[0].Kind != ora.KindSignalReceived {
				t.Fatalf("entries %v, %v", entries, err)
			}
		})
	}
}

// `ora dev` watches a user table on DynamoDB Local and keeps its place in
// the ledger: a change made while it is stopped is captured after the
// restart, and nothing captured before is captured again.
func TestTablesSurviveRestart(t *testing.T) {
	endpoint := dynamotest.Endpoint(t)
	db := dynamotest.NewClient(endpoint)
	ctx := context.Background()
	table := dynamotest.TableName("tickets")
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
	}); err != nil {
		t.Fatal(err)
	}
	put := func(id string) {
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: id}, "title": &types.AttributeValueMemberS{Value: "printer on fire"},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig(t, t.TempDir())
	cfg.Listen = "127.0.0.1:0"
	cfg.Watch.Interval = Duration(50 * time.Millisecond)
	cfg.Tables = []observe.TableConfig{{Name: "tickets", Table: table, Endpoint: endpoint, Region: "us-east-1", Events: []string{"INSERT"}}}
	if err := cfg.completeSources(); err != nil {
		t.Fatal(err)
	}
	// signals lists the tickets signals captured so far.
	signals := func(r *Runtime) map[string]bool {
		entries, err := r.ledger.Recent(ctx, ora.KindSignalReceived, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), 0)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, e := range entries {
			if e.Meta["source"] == "tickets" {
				out[e.SignalID] = true
			}
		}
		return out
	}
	run := func(want int) {
		r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
		if err != nil {
			t.Fatal(err)
		}
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- r.Serve(sctx, nil) }()
		deadline := time.Now().Add(30 * time.Second)
		for len(signals(r)) < want && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
		<-done
		if got := len(signals(r)); got != want {
			t.Errorf("tickets signals %d, want %d", got, want)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	put("T-1")
	put("T-2")
	run(2)
	put("T-3") // while ora dev is stopped
	run(3)
}

// The keys of docs/sources.md load; their mistakes are named.
func TestSourcesConfig(t *testing.T) {
	base := "sources: [{name: demo, type: hmac, secret: s3cr3t-value}]\n"
	tests := []struct {
		name, yaml, wantErr string
	}{
		{"all keys", `events: {secret: ev-secret, header: X-Ora-Signature}
tables:
  - name: tickets
    table: tickets
    endpoint: http://127.0.0.1:8000
    events: [INSERT]
    new_image:
      status: {S: [open]}
watch:
  folders:
    - {name: acme-invoices, dir: ./invoices, prefixes: [incoming/], suffixes: [.pdf]}
`, ""},
		{"table without endpoint", "tables: [{name: tickets, table: tickets}]\n", "endpoint"},
		{"bad stream event", "tables: [{name: t, table: t, endpoint: 'http://x', events: [UPSERT]}]\n", "UPSERT"},
		{"folder twice", "watch: {folders: [{name: a, dir: x}, {name: a, dir: y}]}\n", "configured twice"},
		{"events of another type", "events: {secret: x, type: github}\n", "events"},
		{"unknown key", "tables: [{name: t, tabel: t}]\n", "tabel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "ora.yaml")
			if err := os.WriteFile(p, []byte(base+tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := LoadConfig(p)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("LoadConfig: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("LoadConfig: %v, want an error naming %q", err, tt.wantErr)
			case tt.wantErr == "":
				if c.Events.Name != "events" || c.Tables[0].Region != "us-east-1" || c.Tables[0].Pattern() == nil || c.Watch.Folders[0].Suffixes[0] != ".pdf" {
					t.Errorf("config %+v %+v %+v", c.Events, c.Tables, c.Watch.Folders)
				}
			}
		})
	}
	if c, err := LoadConfig(""); err != nil || c.Events.Secret == "" {
		t.Errorf("the default config: events %+v, %v; want the development events source", c.Events, err)
	}
}

// A table on DynamoDB Local is read with placeholder credentials; a table on
// AWS with the default credential chain (here the environment's keys).
func TestStreamClientsCredentials(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	tests := []struct {
		name, endpoint, wantKey string
	}{
		{"DynamoDB Local", "http://127.0.0.1:8000", "local"},
		{"localhost", "http://localhost:8000", "local"},
		{"AWS", "https://dynamodb.us-east-1.amazonaws.com", "AKIAIOSFODNN7EXAMPLE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := observe.TableConfig{Name: "tickets", Table: "tickets", Endpoint: tt.endpoint, Region: "us-east-1"}
			streams, tables, err := streamClients(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			for name, creds := range map[string]aws.CredentialsProvider{"streams": streams.Options().Credentials, "tables": tables.Options().Credentials} {
				got, err := creds.Retrieve(context.Background())
				if err != nil || got.AccessKeyID != tt.wantKey {
					t.Errorf("%s client: access key %q (%v), want %q", name, got.AccessKeyID, err, tt.wantKey)
				}
			}
		})
	}
}
