package awslambda

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLevel(t *testing.T) {
	tests := []struct {
		lambda, ora string
		want        slog.Level
	}{
		{"", "", slog.LevelInfo},
		{"DEBUG", "", slog.LevelDebug},
		{"TRACE", "", slog.LevelDebug},
		{"WARN", "DEBUG", slog.LevelWarn},
		{"ERROR", "", slog.LevelError},
		{"FATAL", "", slog.LevelError},
		{"", "debug", slog.LevelDebug},
	}
	for _, tt := range tests {
		t.Run(tt.lambda+"/"+tt.ora, func(t *testing.T) {
			env := map[string]string{"AWS_LAMBDA_LOG_LEVEL": tt.lambda, "ORA_LOG_LEVEL": tt.ora}
			if got := Level(func(k string) string { return env[k] }); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestService(t *testing.T) {
	if got := service(func(string) string { return "" }); got != Service {
		t.Errorf("got %q, want %q", got, Service)
	}
	if got := service(func(string) string { return "billing" }); got != "billing" {
		t.Errorf("got %q, want billing", got)
	}
}

// TestEveryFunctionStartsThroughTelemetry checks each functions/*/main.go
// starts its handler with Start, so every function logs JSON lines and
// records its stage metrics.
func TestEveryFunctionStartsThroughTelemetry(t *testing.T) {
	mains, err := filepath.Glob("../../../functions/*/main.go")
	if err != nil || len(mains) == 0 {
		t.Fatalf("no functions found: %v", err)
	}
	for _, path := range mains {
		name := filepath.Base(filepath.Dir(path))
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			src := string(b)
			if !strings.Contains(src, `awslambda.Start("`+name+`", `) {
				t.Errorf("%s does not call awslambda.Start(%q, ...)", path, name)
			}
			if strings.Contains(src, "config.LoadDefaultConfig") && !strings.Contains(src, "awslambda.Instrument(&") {
				t.Errorf("%s builds AWS clients without awslambda.Instrument", path)
			}
			if strings.Contains(strings.ReplaceAll(src, "awslambda.Start", ""), "lambda.Start(") {
				t.Errorf("%s calls lambda.Start directly", path)
			}
		})
	}
}
