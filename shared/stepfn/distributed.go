package stepfn

import (
	"context"
	"fmt"
	"strings"
)

// ObjectGetter is what a Distributed Map's ItemReader reads items from: S3's
// GetObject on AWS, a local object store in ora dev (Options.Objects).
type ObjectGetter interface {
	// GetObject returns the object's bytes. A missing object is an error.
	GetObject(ctx context.Context, bucket, key string) ([]byte, error)
}

// The ItemReader resource the engine supports.
const s3GetObject = "arn:aws:states:::s3:getObject"

// itemReader is a compiled ItemReader: s3:getObject of a JSON array (or
// JSONL: one value a line), at most maxItems items (0: all).
type itemReader struct {
	parameters   any
	inputType    string
	maxItems     int64
	maxItemsPath *path
}

// itemBatcher is a compiled ItemBatcher: each child gets {"Items": [...]}
// (plus "BatchInput" when set) of at most maxItems items and maxBytes bytes
// of items.
type itemBatcher struct {
	maxItems     int64
	maxItemsPath *path
	maxBytes     int64
	maxBytesPath *path
	batchInput   any
	hasInput     bool
}

// AWS's ceiling for MaxInputBytesPerBatch.
const maxBatchBytes = 256 * 1024

func compileItemReader(v any, bad func(string, ...any) error) (*itemReader, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, bad("ItemReader must be an object")
	}
	if err := onlyFields(m, "ItemReader", []string{"Resource", "ReaderConfig", "Parameters"}); err != nil {
		return nil, err
	}
	if r, _ := m["Resource"].(string); r != s3GetObject {
		return nil, bad("ItemReader.Resource %q is not supported (only %s)", m["Resource"], s3GetObject)
	}
	ir := &itemReader{inputType: "JSON"}
	var err error
	if ir.parameters, err = compileTemplate(m["Parameters"], "ItemReader.Parameters"); err != nil || m["Parameters"] == nil {
		return nil, bad("ItemReader.Parameters must give Bucket and Key")
	}
	if rc, ok := m["ReaderConfig"].(map[string]any); ok {
		if err := onlyFields(rc, "ItemReader.ReaderConfig", []string{"InputType", "MaxItems", "MaxItemsPath"}); err != nil {
			return nil, err
		}
		if t, ok := rc["InputType"].(string); ok {
			if t != "JSON" && t != "JSONL" {
				return nil, bad("ItemReader.ReaderConfig.InputType %q is not supported (JSON, JSONL)", t)
			}
			ir.inputType = t
		}
		if ir.maxItems, ir.maxItemsPath, err = countField(rc, "MaxItems", bad); err != nil {
			return nil, err
		}
	}
	return ir, nil
}

func compileItemBatcher(v any, bad func(string, ...any) error) (*itemBatcher, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, bad("ItemBatcher must be an object")
	}
	if err := onlyFields(m, "ItemBatcher", []string{"MaxItemsPerBatch", "MaxItemsPerBatchPath", "MaxInputBytesPerBatch", "MaxInputBytesPerBatchPath", "BatchInput"}); err != nil {
		return nil, err
	}
	b := &itemBatcher{}
	var err error
	if b.maxItems, b.maxItemsPath, err = countField(m, "MaxItemsPerBatch", bad); err != nil {
		return nil, err
	}
	if b.maxBytes, b.maxBytesPath, err = countField(m, "MaxInputBytesPerBatch", bad); err != nil {
		return nil, err
	}
	if b.maxItems == 0 && b.maxItemsPath == nil && b.maxBytes == 0 && b.maxBytesPath == nil {
		return nil, bad("ItemBatcher needs MaxItemsPerBatch or MaxInputBytesPerBatch")
	}
	if b.maxBytes > maxBatchBytes {
		return nil, bad("ItemBatcher.MaxInputBytesPerBatch must be at most %d", maxBatchBytes)
	}
	if in, ok := m["BatchInput"]; ok {
		if b.batchInput, err = compileTemplate(in, "ItemBatcher.BatchInput"); err != nil {
			return nil, bad("%v", err)
		}
		b.hasInput = true
	}
	return b, nil
}

// readItems runs the ItemReader: the object named by its Parameters, parsed
// as a JSON array or as JSONL, cut at MaxItems.
func (f *frame) readItems(ctx context.Context, ir *itemReader, eff, ctxObj any) ([]any, *stateError) {
	pv, serr := evalTemplate(ir.parameters, eff, ctxObj)
	if serr != nil {
		return nil, serr
	}
	p, _ := pv.(map[string]any)
	bucket, _ := p["Bucket"].(string)
	key, _ := p["Key"].(string)
	if bucket == "" || key == "" {
		return nil, runtimeErr("ItemReader.Parameters must resolve to a Bucket and a Key, got %s", compactJSON(pv))
	}
	objects := f.x.e.opts.Objects
	if objects == nil {
		return nil, &stateError{Name: "States.ItemReaderFailed", Cause: "no object store is configured for ItemReader"}
	}
	body, err := objects.GetObject(ctx, bucket, key)
	if err != nil {
		return nil, &stateError{Name: "States.ItemReaderFailed", Cause: fmt.Sprintf("s3://%s/%s: %v", bucket, key, err)}
	}
	var items []any
	if ir.inputType == "JSONL" {
		for i, line := range strings.Split(string(body), "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			v, err := parseJSON([]byte(line))
			if err != nil {
				return nil, &stateError{Name: "States.ItemReaderFailed", Cause: fmt.Sprintf("s3://%s/%s line %d is not JSON", bucket, key, i+1)}
			}
			items = append(items, v)
		}
	} else {
		v, err := parseJSON(body)
		arr, ok := v.([]any)
		if err != nil || !ok {
			return nil, &stateError{Name: "States.ItemReaderFailed", Cause: fmt.Sprintf("s3://%s/%s is not a JSON array", bucket, key)}
		}
		items = arr
	}
	max, serr := count(ir.maxItems, ir.maxItemsPath, eff, "MaxItemsPath")
	if serr != nil {
		return nil, serr
	}
	if max > 0 && int64(len(items)) > max {
		items = items[:max]
	}
	return items, nil
}

// batch groups the selected items into the children's inputs,
// {"BatchInput": ..., "Items": [...]}, each within the item and byte limits
// (a single item over the byte limit is a batch of its own).
func (f *frame) batch(b *itemBatcher, selected []any, eff, ctxObj any) ([]any, *stateError) {
	maxItems, serr := count(b.maxItems, b.maxItemsPath, eff, "MaxItemsPerBatchPath")
	if serr != nil {
		return nil, serr
	}
	maxBytes, serr := count(b.maxBytes, b.maxBytesPath, eff, "MaxInputBytesPerBatchPath")
	if serr != nil {
		return nil, serr
	}
	var batchInput any
	if b.hasInput {
		if batchInput, serr = evalTemplate(b.batchInput, eff, ctxObj); serr != nil {
			return nil, serr
		}
	}
	var out []any
	var cur []any
	size := int64(0)
	flush := func() {
		if len(cur) == 0 {
			return
		}
		in := map[string]any{"Items": cur}
		if b.hasInput {
			in["BatchInput"] = batchInput
		}
		out = append(out, in)
		cur, size = nil, 0
	}
	for _, it := range selected {
		n := int64(len(compactJSON(it)))
		if (maxItems > 0 && int64(len(cur)) >= maxItems) || (maxBytes > 0 && len(cur) > 0 && size+n > maxBytes) {
			flush()
		}
		cur = append(cur, it)
		size += n
	}
	flush()
	return out, nil
}

// distributed reports whether an ItemProcessor runs in DISTRIBUTED mode.
// The engine runs its children like inline iterations (each child's events
// stay in the parent's history); ExecutionType may be STANDARD or EXPRESS.
func distributed(proc map[string]any) bool {
	pc, _ := proc["ProcessorConfig"].(map[string]any)
	mode, _ := pc["Mode"].(string)
	return mode == "DISTRIBUTED"
}
