package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

func TestSfnAddr(t *testing.T) {
	tests := []struct{ in, want string }{
		{"8083", "127.0.0.1:8083"},
		{":8083", "127.0.0.1:8083"},
		{"127.0.0.1:0", "127.0.0.1:0"},
		{"0.0.0.0:8083", "0.0.0.0:8083"},
		{"[::1]:8083", "[::1]:8083"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := sfnAddr(tt.in); got != tt.want {
				t.Errorf("sfnAddr(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestDevServesStepFunctionsAPI runs `ora dev --sfn-listen` and lists ora's
// own state machines through AWS's client at the address it prints.
func TestDevServesStepFunctionsAPI(t *testing.T) {
	dir := t.TempDir()
	path := writeCLIConfig(t, fmt.Sprintf("listen: 127.0.0.1:0\ndata_dir: %s\nwatch: {dir: %s/inbox}\nsources:\n  - {name: demo, type: hmac, secret: sfn-demo-secret, header: X-Ora-Signature}\n", dir, dir))
	ctx, cancel := context.WithCancel(context.Background())
	var stderr strings.Builder
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- runDev(ctx, []string{"--config", path, "--no-preflight", "--sfn-listen", "127.0.0.1:0"}, pw, &stderr)
		pw.Close()
	}()
	lines := make(chan string, 1)
	go func() {
		b := make([]byte, 64<<10)
		var seen []byte
		for {
			n, err := pr.Read(b)
			seen = append(seen, b[:n]...)
			if m := regexp.MustCompile(`Step Functions API on (http://[0-9.:]+)`).FindSubmatch(seen); m != nil {
				lines <- string(m[1])
				_, _ = io.Copy(io.Discard, pr)
				return
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	var url string
	select {
	case url = <-lines:
	case <-time.After(30 * time.Second):
		t.Fatal("ora dev printed no Step Functions API address")
	}
	if url == "" {
		t.Fatalf("ora dev stopped with status %d before serving the API: %s", <-done, stderr.String())
	}
	c := sfn.New(sfn.Options{BaseEndpoint: aws.String(url), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")})
	out, err := c.ListStateMachines(context.Background(), &sfn.ListStateMachinesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.StateMachines) == 0 || aws.ToString(out.StateMachines[0].Name) != "ora-wave" {
		t.Errorf("state machines = %+v, want ora-wave first", out.StateMachines)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("ora dev exit status %d, want 0 after Ctrl-C", code)
	}
}
