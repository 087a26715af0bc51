package awslambda

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-xray-sdk-go/strategy/sampling"
	"github.com/aws/aws-xray-sdk-go/xray"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/telemetry"
)

// TestTraceNestsSDKCalls runs a stage through telemetry.Task with Trace; the
// stage's DynamoDB call, made with an Instrumented config, is a subsegment of
// the stage's subsegment, which carries the wave id as an annotation. The
// segments are read from a UDP socket standing in for the X-Ray daemon.
func TestTraceNestsSDKCalls(t *testing.T) {
	conn := listenDaemon(t)
	ddb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = io.WriteString(w, `{"TableNames":[]}`)
	}))
	defer ddb.Close()
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")}
	Instrument(&cfg)
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(ddb.URL) })

	handler := func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		if _, err := client.ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
			return nil, err
		}
		return json.RawMessage(`{}`), nil
	}
	task := telemetry.Task("plan", handler, slog.New(slog.NewTextHandler(io.Discard, nil)), telemetry.Discard,
		func(o *telemetry.TaskOptions) { o.Trace = Trace })
	ctx, root := xray.BeginSegment(context.Background(), "ora-test")
	if _, err := task.Invoke(ctx, []byte(`{"signal_id":"sig_trace_1"}`)); err != nil {
		t.Fatal(err)
	}
	root.Close(nil)

	var doc struct {
		Name        string `json:"name"`
		Subsegments []struct {
			Name        string         `json:"name"`
			Annotations map[string]any `json:"annotations"`
			Subsegments []struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
				AWS       struct {
					Operation string `json:"operation"`
				} `json:"aws"`
			} `json:"subsegments"`
		} `json:"subsegments"`
	}
	_ = json.Unmarshal([]byte(readSegment(t, conn, "ora-test")), &doc)
	if len(doc.Subsegments) != 1 || doc.Subsegments[0].Name != "plan" {
		t.Fatalf("subsegments %+v, want the plan stage", doc.Subsegments)
	}
	stage := doc.Subsegments[0]
	if stage.Annotations["wave_id"] != "sig_trace_1" || stage.Annotations["signal_id"] != "sig_trace_1" {
		t.Errorf("annotations %v, want wave_id and signal_id", stage.Annotations)
	}
	found := false
	for _, s := range stage.Subsegments {
		if s.Name == "DynamoDB" && s.Namespace == "aws" && s.AWS.Operation == "ListTables" {
			found = true
		}
	}
	if !found {
		t.Errorf("no DynamoDB ListTables subsegment under the stage: %+v", stage.Subsegments)
	}
}

// listenDaemon returns the UDP socket standing in for the X-Ray daemon,
// which the SDK sends to. It is made once per test binary: the SDK keeps the
// address it was first configured with.
func listenDaemon(t *testing.T) net.PacketConn {
	t.Helper()
	daemonOnce.Do(func() {
		daemon, daemonErr = net.ListenPacket("udp", "127.0.0.1:0")
		if daemonErr != nil {
			return
		}
		// Every segment is sampled (the default samples one a second).
		var all sampling.Strategy
		if all, daemonErr = sampling.NewLocalizedStrategyFromJSONBytes([]byte(`{"version":2,"default":{"fixed_target":0,"rate":1}}`)); daemonErr == nil {
			daemonErr = xray.Configure(xray.Config{DaemonAddr: daemon.LocalAddr().String(), SamplingStrategy: all})
		}
	})
	if daemonErr != nil {
		t.Fatal(daemonErr)
	}
	return daemon
}

var (
	daemonOnce sync.Once
	daemon     net.PacketConn
	daemonErr  error
)

// readSegment reads datagrams until the segment named name arrives and
// returns its document as sent.
func readSegment(t *testing.T, conn net.PacketConn, name string) string {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64<<10)
	for {
		n, _, err := conn.ReadFrom(buf)
		if err != nil {
			t.Fatalf("no segment %s reached the daemon: %v", name, err)
		}
		// Each datagram is a header line, then the segment document.
		_, body, _ := strings.Cut(string(buf[:n]), "\n")
		var doc struct {
			Name string `json:"name"`
		}
		if json.Unmarshal([]byte(body), &doc) == nil && doc.Name == name {
			return body
		}
	}
}

// TestTraceRedactsSecrets: a registered value in a correlation key (an
// annotation) or in the error a failed stage records reaches X-Ray as its
// marker.
func TestTraceRedactsSecrets(t *testing.T) {
	conn := listenDaemon(t)
	const secret = "ghp_xray-canary-0123456789"
	Secrets.Add("connection:github", secret)
	handler := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return nil, errors.New("request with " + secret + " refused")
	}
	task := telemetry.Task("act", handler, slog.New(slog.NewTextHandler(io.Discard, nil)), telemetry.Discard,
		func(o *telemetry.TaskOptions) { o.Trace = Trace })
	ctx, root := xray.BeginSegment(context.Background(), "ora-redact")
	_, _ = task.Invoke(ctx, []byte(`{"signal_id":"sig_1","decision_id":"`+secret+`"}`))
	root.Close(nil)
	doc := readSegment(t, conn, "ora-redact")
	if strings.Contains(doc, secret) {
		t.Errorf("the segment holds the secret:\n%s", doc)
	}
	if !strings.Contains(doc, ora.Marker("connection:github")) {
		t.Errorf("the segment holds no marker (the annotation or the error is missing):\n%s", doc)
	}
}
