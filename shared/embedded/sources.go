package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/ora-runtime/ora/shared/dynamostreams"
	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
)

// completeSources validates the user's tables and named watched folders.
func (c *Config) completeSources() error {
	names := map[string]bool{}
	for i := range c.Tables {
		t := &c.Tables[i]
		if err := t.Validate(); err != nil {
			return fmt.Errorf("tables[%d]: %w", i, err)
		}
		if t.Table == "" || t.Endpoint == "" {
			return ora.Invalid(fmt.Sprintf("tables[%d]", i), "table %s: table and endpoint are required (e.g. http://127.0.0.1:8000 for DynamoDB Local)", t.Name)
		}
		if t.Region == "" {
			t.Region = "us-east-1"
		}
		if names[t.Name] {
			return ora.Invalid(fmt.Sprintf("tables[%d].name", i), "%q is configured twice", t.Name)
		}
		names[t.Name] = true
	}
	folders := map[string]bool{}
	for i, f := range c.Watch.Folders {
		if err := f.Validate(); err != nil {
			return fmt.Errorf("watch.folders[%d]: %w", i, err)
		}
		if folders[f.Name] {
			return ora.Invalid(fmt.Sprintf("watch.folders[%d].name", i), "%q is configured twice", f.Name)
		}
		folders[f.Name] = true
	}
	return nil
}

// streamClients returns the Streams and DynamoDB clients of a table's
// endpoint. A loopback endpoint (DynamoDB Local) takes placeholder static
// credentials, which the emulator accepts; any other (AWS) the default
// credential chain, as store.kind dynamodb does. Errors: the AWS config's.
func streamClients(ctx context.Context, t observe.TableConfig) (*dynamodbstreams.Client, *dynamodb.Client, error) {
	cfg := aws.Config{Region: t.Region, Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}
	if u, err := url.Parse(t.Endpoint); err != nil || !loopback(net.JoinHostPort(u.Hostname(), "0")) {
		loaded, err := config.LoadDefaultConfig(ctx, config.WithRegion(t.Region))
		if err != nil {
			return nil, nil, fmt.Errorf("table %s: load the AWS config: %w", t.Name, err)
		}
		cfg = loaded
	}
	return dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) {
			o.BaseEndpoint = aws.String(t.Endpoint)
		}), dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
			o.BaseEndpoint = aws.String(t.Endpoint)
			o.DisableValidateResponseChecksum = true
		}), nil
}

// tablePoller returns the poller of the user's table t, delivering its
// records that pass t's filter to the observer and checkpointing in the
// ledger. Errors: streamClients'.
func (r *Runtime) tablePoller(ctx context.Context, t observe.TableConfig) (*dynamostreams.Poller, error) {
	streams, tables, err := streamClients(ctx, t)
	if err != nil {
		return nil, err
	}
	return &dynamostreams.Poller{
		Streams: streams, Tables: tables, Table: t.Table,
		Checkpoints: observe.LedgerCheckpoints{Ledger: r.ledger},
		Deliver: func(ctx context.Context, rec []byte) error {
			if !t.Matches(rec) {
				return nil
			}
			_, err := r.observer.UserTableChange(ctx, t.Name, rec)
			if ora.ErrorCode(err) == ora.EINVALID {
				r.logger.Error("table record dropped", "table", t.Name, "error", err)
				return nil
			}
			return err
		},
		Interval: time.Duration(r.cfg.Watch.Interval),
		Logger:   r.logger,
	}, nil
}

// startSources runs the table pollers and the named watched folders until
// ctx ends.
func (r *Runtime) startSources(ctx context.Context) error {
	for _, t := range r.cfg.Tables {
		p, err := r.tablePoller(ctx, t)
		if err != nil {
			return fmt.Errorf("embedded: %w", err)
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if err := p.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				r.logger.Error("table stream stopped", "table", t.Name, "err", err)
			}
		}()
	}
	for _, f := range r.cfg.Watch.Folders {
		if err := os.MkdirAll(f.Dir, 0o755); err != nil {
			return fmt.Errorf("embedded: watched folder %s: %w", f.Name, err)
		}
		w, err := observe.NewFolderWatcher(r.observer, f, time.Duration(r.cfg.Watch.Interval))
		if err != nil {
			return fmt.Errorf("embedded: watched folder %s: %w", f.Name, err)
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if err := w.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				r.logger.Error("watched folder stopped", "folder", f.Name, "err", err)
			}
		}()
	}
	return nil
}

// eventsAnswer is POST /events's answer, after PutEvents': the count of
// entries that failed, and per entry its event id and signal.
type eventsAnswer struct {
	FailedEntryCount int                    `json:"FailedEntryCount"`
	Entries          []observe.EventReceipt `json:"Entries"`
}

// postEvents is POST /events: AWS events, signed as the events source.
func (r *Runtime) postEvents(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, r.cfg.BodyLimit+1))
	if err != nil {
		writeEventsError(w, ora.Invalid("body", "cannot read: %v", err))
		return
	}
	recs, err := r.observer.PostEvents(req.Context(), req.Header, body)
	if err != nil {
		if code := ora.ErrorCode(err); code == ora.EINTERNAL || code == ora.ETRANSIENT {
			r.logger.Error("events not captured", "error", err)
		}
		writeEventsError(w, err)
		return
	}
	ans := eventsAnswer{Entries: recs}
	status := http.StatusOK // every entry a duplicate
	for _, e := range recs {
		if e.Error != "" {
			ans.FailedEntryCount++
		} else if !e.Duplicate {
			status = http.StatusAccepted
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(ans)
}

func writeEventsError(w http.ResponseWriter, err error) {
	status := httpapi.Status(ora.ErrorCode(err))
	var tl *observe.TooLargeError
	if errors.As(err, &tl) {
		status = http.StatusRequestEntityTooLarge
	}
	msg := err.Error()
	if status >= 500 {
		msg = "internal error"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
