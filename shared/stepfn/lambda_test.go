package stepfn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"
)

type lambdaEvent struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

type lambdaResult struct {
	Greeting string `json:"greeting"`
	HTML     string `json:"html"`
}

type customError struct{ msg string }

func (e *customError) Error() string { return e.msg }

// TestLambdaHandlerMatchesAWS runs each handler shape through LambdaHandler
// and through aws-lambda-go's lambda.NewHandler and wants the same bytes, or
// the same error type and message (what Retry and Catch see), from both.
func TestLambdaHandlerMatchesAWS(t *testing.T) {
	typed := func(ctx context.Context, in lambdaEvent) (lambdaResult, error) {
		if in.Name == "fail" {
			return lambdaResult{}, &customError{"told to fail"}
		}
		return lambdaResult{Greeting: fmt.Sprintf("hi %s x%d", in.Name, in.Count), HTML: "<b>&</b>"}, nil
	}
	raw := func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		if strings.Contains(string(in), "bad-out") {
			return json.RawMessage(`{"not json`), nil
		}
		if strings.Contains(string(in), "empty-out") {
			return json.RawMessage{}, nil
		}
		if strings.Contains(string(in), "nil-out") {
			return nil, nil
		}
		return json.RawMessage(fmt.Sprintf(`{ "echo" : %s }`, in)), nil
	}
	cases := []struct {
		name    string
		fn      any
		payload string
	}{
		{"typed", typed, `{"name":"ann","count":2}`},
		{"typed error", typed, `{"name":"fail"}`},
		{"typed bad type", typed, `{"name":3}`},
		{"typed not JSON", typed, `{"name":`},
		{"typed empty payload", typed, ``},
		{"typed trailing value", typed, `{"name":"a"} {"x":1}`},
		{"typed null", typed, `null`},
		{"raw", raw, ` {"a": [1, 2]} `},
		{"raw null", raw, `null`},
		{"raw not JSON", raw, `{"a":`},
		{"raw trailing value", raw, `{"a":1} 2`},
		{"raw invalid result", raw, `"bad-out"`},
		{"raw empty result", raw, `"empty-out"`},
		{"raw nil result", raw, `"nil-out"`},
		{"no event", func(ctx context.Context) (map[string]int, error) { return map[string]int{"b": 2, "a": 1}, nil }, `{"x":1}`},
		{"no context", func(in map[string]any) (map[string]any, error) { return in, nil }, `{"k":"<v>"}`},
		{"any event", func(in any) (string, error) { return fmt.Sprint(in), nil }, `[1,"two"]`},
		{"error only", func(ctx context.Context, in lambdaEvent) error { return errors.New("plain") }, `{}`},
		{"error only nil", func(ctx context.Context, in lambdaEvent) error { return nil }, `{}`},
		{"nothing", func() {}, `{}`},
		{"unencodable result", func() (float64, error) { var z float64; return 1 / z, nil }, `{}`},
		{"interface result", func() (any, error) { return map[string]bool{"ok": true}, nil }, `{}`},
		{"not a function", 42, `{}`},
		{"too many arguments", func(ctx context.Context, a, b int) error { return nil }, `{}`},
		{"first argument not context", func(a, b int) error { return nil }, `{}`},
		{"second result not error", func() (int, int) { return 1, 2 }, `{}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			want, wantErr := lambda.NewHandler(tc.fn).Invoke(ctx, []byte(tc.payload))
			want = append([]byte(nil), want...) // aws-lambda-go's buffer is pooled
			got, gotErr := LambdaHandler(tc.fn).Invoke(ctx, []byte(tc.payload))
			if (wantErr == nil) != (gotErr == nil) {
				t.Fatalf("error = %v, aws-lambda-go's = %v", gotErr, wantErr)
			}
			if wantErr != nil {
				if errorType(gotErr) != errorType(wantErr) || gotErr.Error() != wantErr.Error() {
					t.Fatalf("error = %s %q, aws-lambda-go's = %s %q", errorType(gotErr), gotErr, errorType(wantErr), wantErr)
				}
				return
			}
			if string(got) != string(want) {
				t.Fatalf("output = %s, aws-lambda-go's = %s", got, want)
			}
		})
	}
}

// TestLambdaHandlerFastPath checks that the common shapes take the
// reflection-once path, and the shapes it leaves to aws-lambda-go do not.
func TestLambdaHandlerFastPath(t *testing.T) {
	cases := []struct {
		name string
		fn   any
		fast bool
	}{
		{"typed", func(context.Context, lambdaEvent) (lambdaResult, error) { return lambdaResult{}, nil }, true},
		{"raw", func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }, true},
		{"interface result", func() (any, error) { return nil, nil }, false},
		{"reader result", func() (*strings.Reader, error) { return nil, nil }, false},
		{"bad signature", func(a, b int) error { return nil }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, fast := LambdaHandler(tc.fn).(fastHandler)
			if fast != tc.fast {
				t.Fatalf("fast path = %v, want %v", fast, tc.fast)
			}
		})
	}
	h := HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) { return p, nil })
	if got := LambdaHandler(h); reflect.ValueOf(got).Pointer() != reflect.ValueOf(h).Pointer() {
		t.Fatalf("a Handler is wrapped (%T), want it as it is", got)
	}
}

// TestLambdaHandlerConcurrent calls one handler from many goroutines: each
// must get its own output (aws-lambda-go's shared handler would not).
func TestLambdaHandlerConcurrent(t *testing.T) {
	h := LambdaHandler(func(ctx context.Context, in lambdaEvent) (lambdaResult, error) {
		return lambdaResult{Greeting: in.Name}, nil
	})
	var wg sync.WaitGroup
	outs := make([][]byte, 64)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := h.Invoke(context.Background(), []byte(fmt.Sprintf(`{"name":"n%d"}`, i)))
			if err != nil {
				t.Error(err)
			}
			outs[i] = out
		}()
	}
	wg.Wait()
	for i, out := range outs {
		if want := fmt.Sprintf(`{"greeting":"n%d","html":""}`, i); string(out) != want {
			t.Fatalf("call %d output = %s, want %s", i, out, want)
		}
	}
}
