package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/embedded"
	"github.com/ora-runtime/ora/shared/stepfn"
)

// sfnAddr is the address --sfn-listen takes: a bare port ("8083", ":8083")
// listens on loopback only; a host given explicitly is used as it is.
func sfnAddr(v string) string {
	if !strings.Contains(v, ":") {
		v = ":" + v
	}
	if strings.HasPrefix(v, ":") {
		return "127.0.0.1" + v
	}
	return v
}

// serveStepFunctions serves rt's Step Functions API on addr until ctx ends
// or stop is called; it prints where it listens.
func serveStepFunctions(ctx context.Context, rt *embedded.Runtime, addr, tasksFile string, functions map[string]string, stdout io.Writer, logger *slog.Logger) (stop func(), err error) {
	script := stepfn.TaskScript{}
	if tasksFile != "" {
		b, err := os.ReadFile(tasksFile)
		if err != nil {
			return nil, fmt.Errorf("--sfn-tasks: %w", err)
		}
		if script, err = stepfn.ParseTaskScript(b); err != nil {
			return nil, fmt.Errorf("--sfn-tasks %s: %w", tasksFile, err)
		}
	}
	l, err := net.Listen("tcp", sfnAddr(addr))
	if err != nil {
		return nil, fmt.Errorf("--sfn-listen: %w", err)
	}
	handler, closeEngine := rt.StepFunctionsAPI(script, functions)
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("the Step Functions API stopped", "addr", l.Addr().String(), "err", err)
		}
	}()
	fmt.Fprintf(stdout, "ora dev: Step Functions API on http://%s (aws stepfunctions --endpoint-url http://%s ...)\n", l.Addr(), l.Addr())
	return func() {
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
		_ = closeEngine()
	}, nil
}
