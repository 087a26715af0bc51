package stepfn_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ora-runtime/ora/shared/stepfn"
)

// objects is an in-memory object store for ItemReader.
type objects map[string]string

func (o objects) GetObject(_ context.Context, bucket, key string) ([]byte, error) {
	b, ok := o[bucket+"/"+key]
	if !ok {
		return nil, errors.New("NoSuchKey")
	}
	return []byte(b), nil
}

func distributedMap(fields string) string {
	return `{"StartAt":"M","States":{"M":{"Type":"Map",` + fields + `,
	  "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"EXPRESS"},"StartAt":"T",
	    "States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:echo","End":true}}},
	  "End":true}}}`
}

func TestDistributedMap(t *testing.T) {
	store := objects{
		"jobs/wave-1.json":  `[{"id":"a"},{"id":"b"},{"id":"c"},{"id":"d"},{"id":"e"},{"id":"f"},{"id":"g"}]`,
		"jobs/wave-1.jsonl": "{\"id\":\"a\"}\n{\"id\":\"b\"}\n\n{\"id\":\"c\"}\n",
	}
	reader := `"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","Parameters":{"Bucket":"jobs","Key.$":"$.key"}}`
	tests := []struct {
		name, fields, input, want string
	}{
		{"ItemReader reads the array, ItemSelector sees $$.Map.Item",
			reader + `,"ItemSelector":{"i.$":"$$.Map.Item.Index","v.$":"$$.Map.Item.Value.id","w.$":"$.wave"}`,
			`{"key":"wave-1.json","wave":"w1"}`,
			`[{"i":0,"v":"a","w":"w1"},{"i":1,"v":"b","w":"w1"},{"i":2,"v":"c","w":"w1"},{"i":3,"v":"d","w":"w1"},{"i":4,"v":"e","w":"w1"},{"i":5,"v":"f","w":"w1"},{"i":6,"v":"g","w":"w1"}]`},
		{"MaxItems cuts the items",
			`"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"JSON","MaxItems":2},"Parameters":{"Bucket":"jobs","Key":"wave-1.json"}}`,
			`{}`, `[{"id":"a"},{"id":"b"}]`},
		{"JSONL, one item a line",
			`"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"JSONL"},"Parameters":{"Bucket":"jobs","Key":"wave-1.jsonl"}}`,
			`{}`, `[{"id":"a"},{"id":"b"},{"id":"c"}]`},
		{"ItemBatcher: MaxItemsPerBatch and BatchInput",
			reader + `,"ItemSelector":{"v.$":"$$.Map.Item.Value.id"},"ItemBatcher":{"MaxItemsPerBatch":3,"BatchInput":{"wave.$":"$.wave"}}`,
			`{"key":"wave-1.json","wave":"w1"}`,
			`[{"BatchInput":{"wave":"w1"},"Items":[{"v":"a"},{"v":"b"},{"v":"c"}]},{"BatchInput":{"wave":"w1"},"Items":[{"v":"d"},{"v":"e"},{"v":"f"}]},{"BatchInput":{"wave":"w1"},"Items":[{"v":"g"}]}]`},
		{"ItemBatcher: MaxInputBytesPerBatch (each item is 10 bytes)",
			reader + `,"ItemBatcher":{"MaxInputBytesPerBatch":25}`,
			`{"key":"wave-1.json"}`,
			`[{"Items":[{"id":"a"},{"id":"b"}]},{"Items":[{"id":"c"},{"id":"d"}]},{"Items":[{"id":"e"},{"id":"f"}]},{"Items":[{"id":"g"}]}]`},
		{"ItemBatcher over ItemsPath",
			`"ItemsPath":"$.jobs","ItemBatcher":{"MaxItemsPerBatchPath":"$.per"}`,
			`{"jobs":[1,2,3,4,5],"per":2}`,
			`[{"Items":[1,2]},{"Items":[3,4]},{"Items":[5]}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, func(o *stepfn.Options) { o.Objects = store })
			e.RegisterHandler("echo", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) { return p, nil }))
			_, x := run(t, e, distributedMap(tt.fields), tt.input)
			if x.Status != stepfn.StatusSucceeded {
				t.Fatalf("status %s: %s %s", x.Status, x.Error, x.Cause)
			}
			jsonEq(t, x.Output, tt.want)
		})
	}
	t.Run("a missing object fails the state with States.ItemReaderFailed", func(t *testing.T) {
		e := newEngine(t, func(o *stepfn.Options) { o.Objects = store })
		e.RegisterHandler("echo", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) { return p, nil }))
		_, x := run(t, e, distributedMap(reader), `{"key":"nope.json"}`)
		if x.Status != stepfn.StatusFailed || x.Error != "States.ItemReaderFailed" {
			t.Errorf("got %s %s %s", x.Status, x.Error, x.Cause)
		}
	})
}

func TestDistributedMapToleratedFailures(t *testing.T) {
	tests := []struct {
		name, tolerance string
		status          string
	}{
		// 10 items in batches of 2: 5 children; items 0 and 1 fail together, one child of 5 (20%).
		{"20% of children failed, 20% tolerated", `"ToleratedFailurePercentage":20`, stepfn.StatusSucceeded},
		{"20% of children failed, 10% tolerated", `"ToleratedFailurePercentage":10`, stepfn.StatusFailed},
		{"one child failed, one tolerated", `"ToleratedFailureCount":1`, stepfn.StatusSucceeded},
		{"one child failed, none tolerated", `"ToleratedFailureCount":0`, stepfn.StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t)
			e.RegisterHandler("echo", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) {
				if strings.Contains(string(p), `"Items":[0,`) {
					return nil, errors.New("boom")
				}
				return p, nil
			}))
			_, x := run(t, e, distributedMap(`"ItemsPath":"$.jobs","ItemBatcher":{"MaxItemsPerBatch":2},`+tt.tolerance), `{"jobs":[0,1,2,3,4,5,6,7,8,9]}`)
			if x.Status != tt.status {
				t.Fatalf("status %s (%s %s), want %s", x.Status, x.Error, x.Cause, tt.status)
			}
			if x.Status == stepfn.StatusFailed && x.Error != "States.ExceedToleratedFailureThreshold" {
				t.Errorf("error %s, want States.ExceedToleratedFailureThreshold", x.Error)
			}
		})
	}
}

// TestDistributedMapConcurrency runs 10,000 trivial items with MaxConcurrency
// 128 and measures the most children in flight at once.
func TestDistributedMapConcurrency(t *testing.T) {
	var items []string
	for i := range 10000 {
		items = append(items, fmt.Sprint(i))
	}
	e := newEngine(t)
	var inFlight, most atomic.Int64
	var mu sync.Mutex
	e.RegisterHandler("echo", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) {
		n := inFlight.Add(1)
		mu.Lock()
		if n > most.Load() {
			most.Store(n)
		}
		mu.Unlock()
		defer inFlight.Add(-1)
		return []byte(`1`), nil
	}))
	_, x := run(t, e, distributedMap(`"ItemsPath":"$.jobs","MaxConcurrency":128,"ResultSelector":{"n.$":"States.ArrayLength($)"}`), `{"jobs":[`+strings.Join(items, ",")+`]}`)
	if x.Status != stepfn.StatusSucceeded {
		t.Fatalf("status %s: %s %s", x.Status, x.Error, x.Cause)
	}
	jsonEq(t, x.Output, `{"n":10000}`)
	if m := most.Load(); m > 128 || m < 1 {
		t.Errorf("most children in flight: %d, want 1..128", m)
	}
	t.Logf("most children in flight: %d", most.Load())
}

func TestDistributedMapDefinitionErrors(t *testing.T) {
	tests := []struct{ name, def, want string }{
		{"ItemReader in an INLINE map", `{"StartAt":"M","States":{"M":{"Type":"Map","ItemReader":{"Resource":"arn:aws:states:::s3:getObject","Parameters":{"Bucket":"b","Key":"k"}},"ItemProcessor":{"ProcessorConfig":{"Mode":"INLINE"},"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`, "DISTRIBUTED"},
		{"unsupported reader", distributedMap(`"ItemReader":{"Resource":"arn:aws:states:::s3:listObjectsV2","Parameters":{"Bucket":"b"}}`), "not supported"},
		{"batcher without limits", distributedMap(`"ItemsPath":"$.x","ItemBatcher":{"BatchInput":{}}`), "MaxItemsPerBatch"},
		{"batch bytes over 256 KiB", distributedMap(`"ItemsPath":"$.x","ItemBatcher":{"MaxInputBytesPerBatch":300000}`), "at most"},
		{"unknown reader field", distributedMap(`"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","Parameters":{"Bucket":"b","Key":"k"},"Colour":1}`), "Colour"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newEngine(t).CreateStateMachine("sm", []byte(tt.def))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error about %q", err, tt.want)
			}
		})
	}
}
