package awslambda

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-xray-sdk-go/xray"

	"github.com/ora-runtime/ora/shared/telemetry"
)

// TestTraceNestsSDKCalls runs a stage through telemetry.Task with Trace; the
// stage's DynamoDB call, made with an Instrumented config, is a subsegment of
// the stage's subsegment, which carries the wave id as an annotation. The
// segments are read from a UDP socket standing in for the X-Ray daemon.
func TestTraceNestsSDKCalls(t *testing.T) {
	daemon, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer daemon.Close()
	if err := xray.Configure(xray.Config{DaemonAddr: daemon.LocalAddr().String()}); err != nil {
		t.Fatal(err)
	}
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

	_ = daemon.SetReadDeadline(time.Now().Add(5 * time.Second))
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
	buf := make([]byte, 64<<10)
	for doc.Name != "ora-test" {
		n, _, err := daemon.ReadFrom(buf)
		if err != nil {
			t.Fatalf("no segment reached the daemon: %v", err)
		}
		// Each datagram is a header line, then the segment document.
		_, body, _ := strings.Cut(string(buf[:n]), "\n")
		_ = json.Unmarshal([]byte(body), &doc)
	}
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
