package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/telemetry"
)

// startLoggingSecrets runs ora dev's runtime on cfg with its secrets
// registry, its log kept in logs (redacting as ora dev does), and an HTTP
// server on its handler; both are closed when the test ends.
func startLoggingSecrets(t *testing.T, cfg Config) (*Runtime, *httptest.Server, *syncBuffer) {
	t.Helper()
	secrets := cfg.Secrets()
	logs := &syncBuffer{}
	logger := telemetry.NewLogger(logs, "ora", func(o *telemetry.LogOptions) { o.Secrets, o.Registry = cfg.SecretValues(), secrets })
	r, err := New(context.Background(), cfg, func(o *Options) { o.Logger, o.Secrets = logger, secrets })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	srv := httptest.NewServer(r.Handler())
	t.Cleanup(srv.Close)
	return r, srv, logs
}

// leakSearch looks for canary values in everything ora wrote or answered,
// and keeps what it read so a test can show the search looked at something.
type leakSearch struct {
	canaries map[string]string // name -> value
	found    []string
	seen     bytes.Buffer
}

func (l *leakSearch) check(where string, b []byte) {
	l.seen.Write(b)
	for name, v := range l.canaries {
		if bytes.Contains(b, []byte(v)) {
			l.found = append(l.found, fmt.Sprintf("%s in %s", name, where))
		}
	}
}

// dataDir reads every file under dir (the SQLite files and their WAL, the
// objects folder, the inbox, the recordings).
func (l *leakSearch) dataDir(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(p)
		l.check(p, b)
		return nil
	})
}

// dynamoDB scans the ledger and idempotency tables of cfg's DynamoDB store.
func (l *leakSearch) dynamoDB(t *testing.T, cfg Config) {
	t.Helper()
	db := dynamotest.NewClient(cfg.Store.DynamoDB.Endpoint)
	for _, table := range []string{cfg.Store.DynamoDB.Table, cfg.Store.DynamoDB.IdempotencyTable} {
		var start map[string]types.AttributeValue
		for {
			out, err := db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: start})
			if err != nil {
				t.Fatalf("scan %s: %v", table, err)
			}
			for _, item := range out.Items {
				b, _ := json.Marshal(item)
				l.check("DynamoDB table "+table, b)
			}
			if start = out.LastEvaluatedKey; len(start) == 0 {
				break
			}
		}
	}
}

// entries reads a wave's ledger entries through the runtime's store, and in
// a signal the raw input it keeps (base64 in the entry, a webhook's body
// base64 again inside it), decoded.
func (l *leakSearch) entries(t *testing.T, r *Runtime, signalID string) []ora.Entry {
	t.Helper()
	es, err := r.ledger.Entries(context.Background(), signalID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		where := fmt.Sprintf("ledger entry %s/%s", signalID, e.Kind)
		l.check(where, e.Body)
		l.check(where+" meta", []byte(fmt.Sprint(e.Meta)))
		var s ora.NormalizedSignal
		if e.Kind != ora.KindSignalReceived || json.Unmarshal(e.Body, &s) != nil {
			continue
		}
		l.check(where+" raw", s.Raw)
		var d observe.Delivery
		if json.Unmarshal(s.Raw, &d) == nil {
			l.check(where+" raw body", d.Body)
		}
	}
	return es
}

// get reads path from the server at base with the bearer token.
func (l *leakSearch) get(t *testing.T, base, token, path string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %d %.200s", path, resp.StatusCode, b)
	}
	l.check("GET "+path, append([]byte(fmt.Sprint(resp.Header)), b...))
	return b
}

// report fails t with every canary found, after checking that the search
// read each of wants.
func (l *leakSearch) report(t *testing.T, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !bytes.Contains(l.seen.Bytes(), []byte(want)) {
			t.Errorf("nothing searched holds %q: the search looked at nothing", want)
		}
	}
	if len(l.found) > 0 {
		t.Errorf("canaries found (%d):\n%s", len(l.found), strings.Join(l.found, "\n"))
	}
}
