package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/cost"
	"github.com/ora-runtime/ora/shared/dynamo"
	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/stepfn"
	"github.com/ora-runtime/ora/statemachines"
)

// functionMemoryMB is each function's memory on AWS (infra/stack.go's sizes;
// 256 MB otherwise), for GB-seconds.
var functionMemoryMB = map[string]float64{"reason": 512, "compile": 512}

// meter counts DynamoDB calls and the capacity they consume (asking each call
// for ReturnConsumedCapacity TOTAL), and Lambda invocations and GB-seconds.
type meter struct {
	dynamo.Client
	mu     sync.Mutex
	usage  cost.Usage
	detail map[string]*[2]float64 // ORA_COST_DETAIL: calls and units by operation and key shape
}

// note adds a call of shape what (ORA_COST_DETAIL only).
func (m *meter) note(what string, units float64) {
	if m.detail == nil {
		return
	}
	m.mu.Lock()
	d := m.detail[what]
	if d == nil {
		d = new([2]float64)
		m.detail[what] = d
	}
	d[0]++
	d[1] += units
	m.mu.Unlock()
}

// shape names a key by its kind: the text before the first '#' after the
// prefix, so SIGNAL#x and ENTRY#kind#q read SIGNAL and ENTRY#kind.
func shape(item map[string]types.AttributeValue) string {
	var parts []string
	for _, k := range []string{"PK", "SK"} {
		if v, ok := item[k].(*types.AttributeValueMemberS); ok {
			f := strings.SplitN(v.Value, "#", 3)
			if k == "SK" && len(f) > 1 {
				parts = append(parts, f[0]+"#"+f[1])
			} else {
				parts = append(parts, f[0])
			}
		}
	}
	if _, ok := item["SK"]; ok && len(item) > 2 {
		// A write's items: its size, in the KB a write unit is billed by,
		// and its largest attribute.
		big, bigN := "", 0
		for k, v := range item {
			if n := dynamotest.ItemSize(map[string]types.AttributeValue{k: v}); n > bigN {
				big, bigN = k, n
			}
		}
		parts = append(parts, fmt.Sprintf("(%d KB; %s)", (dynamotest.ItemSize(item)+1023)/1024, big))
	}
	return strings.Join(parts, " ")
}

func (m *meter) add(f func(u *cost.Usage)) {
	m.mu.Lock()
	f(&m.usage)
	m.mu.Unlock()
}

func (m *meter) take() cost.Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.usage
	m.usage = cost.Usage{}
	return u
}

// count adds one call and its consumed capacity (TOTAL reports
// CapacityUnits: read units for reads, write units for writes).
func (m *meter) count(read bool, cs ...*types.ConsumedCapacity) { m.countAs("", read, cs...) }

func (m *meter) countAs(what string, read bool, cs ...*types.ConsumedCapacity) {
	var units float64
	for _, c := range cs {
		if c != nil {
			units += aws.ToFloat64(c.CapacityUnits)
		}
	}
	if what != "" {
		m.note(what, units)
	}
	m.add(func(u *cost.Usage) {
		u.DynamoDBCalls++
		if read {
			u.ReadUnits += units
		} else {
			u.WriteUnits += units
		}
	})
}

var total = types.ReturnConsumedCapacityTotal

func (m *meter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := m.Client.GetItem(ctx, in, o...)
	if err == nil {
		m.countAs("GetItem "+shape(in.Key)+fmt.Sprintf(" consistent=%v", aws.ToBool(in.ConsistentRead)), true, out.ConsumedCapacity)
	} else {
		m.count(true)
	}
	return out, err
}

func (m *meter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := m.Client.PutItem(ctx, in, o...)
	if err == nil {
		m.countAs("PutItem "+shape(in.Item)+" "+aws.ToString(in.TableName), false, out.ConsumedCapacity)
	} else {
		m.count(false, &types.ConsumedCapacity{CapacityUnits: aws.Float64(1)}) // a failed condition still costs a write
	}
	return out, err
}

func (m *meter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := m.Client.UpdateItem(ctx, in, o...)
	if err == nil {
		m.countAs("UpdateItem "+shape(in.Key), false, out.ConsumedCapacity)
	} else {
		m.count(false, &types.ConsumedCapacity{CapacityUnits: aws.Float64(1)})
	}
	return out, err
}

func (m *meter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := m.Client.DeleteItem(ctx, in, o...)
	if err == nil {
		m.count(false, out.ConsumedCapacity)
	} else {
		m.count(false)
	}
	return out, err
}

func (m *meter) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := m.Client.Query(ctx, in, o...)
	if err == nil {
		var vals []string
		for _, v := range in.ExpressionAttributeValues {
			if s, ok := v.(*types.AttributeValueMemberS); ok {
				vals = append(vals, strings.SplitN(s.Value, "#", 2)[0])
			}
		}
		sort.Strings(vals)
		if in.IndexName == nil && m.detail != nil {
			pcs := make([]uintptr, 20)
			n := runtime.Callers(2, pcs)
			fr := runtime.CallersFrames(pcs[:n])
			var chain []string
			for {
				f, more := fr.Next()
				if strings.Contains(f.Function, "ora/shared/") && !strings.Contains(f.Function, "shared/dynamo.") {
					chain = append(chain, f.Function[strings.LastIndex(f.Function, "/")+1:])
				}
				if !more || len(chain) == 2 {
					break
				}
			}
			m.note("caller "+strings.Join(chain, " < "), 0)
		}
		m.countAs(fmt.Sprintf("Query %s %s consistent=%v", aws.ToString(in.IndexName), strings.Join(vals, ","), aws.ToBool(in.ConsistentRead)), true, out.ConsumedCapacity)
	} else {
		m.count(true)
	}
	return out, err
}

func (m *meter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := m.Client.BatchGetItem(ctx, in, o...)
	if err == nil {
		cs := make([]*types.ConsumedCapacity, len(out.ConsumedCapacity))
		for i := range out.ConsumedCapacity {
			cs[i] = &out.ConsumedCapacity[i]
		}
		reported := 0.0
		for _, c := range cs {
			reported += aws.ToFloat64(c.CapacityUnits)
		}
		if reported == 0 {
			cs = nil
			// DynamoDB Local reports no capacity for BatchGetItem; DynamoDB
			// bills each key read, found or not, at least one unit strongly
			// consistent (half eventually), per 4 KB: the keys read here
			// (a fetch job's facts, keys only) are small items.
			var units float64
			for _, ka := range in.RequestItems {
				per := 0.5
				if aws.ToBool(ka.ConsistentRead) {
					per = 1
				}
				units += per * float64(len(ka.Keys))
			}
			cs = append(cs, &types.ConsumedCapacity{CapacityUnits: aws.Float64(units)})
		}
		m.countAs(fmt.Sprintf("BatchGetItem %d keys", func() (n int) {
			for _, ka := range in.RequestItems {
				n += len(ka.Keys)
			}
			return
		}()), true, cs...)
	} else {
		m.count(true)
	}
	return out, err
}

func (m *meter) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := m.Client.BatchWriteItem(ctx, in, o...)
	if err == nil {
		cs := make([]*types.ConsumedCapacity, len(out.ConsumedCapacity))
		for i := range out.ConsumedCapacity {
			cs[i] = &out.ConsumedCapacity[i]
		}
		what := "BatchWriteItem"
		for _, ws := range in.RequestItems {
			if len(ws) > 0 && ws[0].PutRequest != nil {
				what += fmt.Sprintf(" %d x %s", len(ws), shape(ws[0].PutRequest.Item))
			}
		}
		m.countAs(what, false, cs...)
	} else {
		m.count(false)
	}
	return out, err
}

func (m *meter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := m.Client.TransactWriteItems(ctx, in, o...)
	if err == nil {
		cs := make([]*types.ConsumedCapacity, len(out.ConsumedCapacity))
		for i := range out.ConsumedCapacity {
			cs[i] = &out.ConsumedCapacity[i]
		}
		// A transaction bills two write units per KB of each item (and of
		// each index item); DynamoDB Local reports less for some: take the
		// larger of its figure and the items' own.
		floor := 0.0
		for _, ti := range in.TransactItems {
			if ti.Put != nil {
				floor += 2 * math.Ceil(float64(dynamotest.ItemSize(ti.Put.Item))/1024)
			}
		}
		reported := 0.0
		for _, c := range cs {
			reported += aws.ToFloat64(c.CapacityUnits)
		}
		if floor > reported {
			cs = []*types.ConsumedCapacity{{CapacityUnits: aws.Float64(floor)}}
		}
		what := "TransactWriteItems"
		for _, ti := range in.TransactItems {
			switch {
			case ti.Put != nil:
				what += " put " + shape(ti.Put.Item)
			case ti.Update != nil:
				what += " update " + shape(ti.Update.Key)
			case ti.ConditionCheck != nil:
				what += " check " + shape(ti.ConditionCheck.Key)
			}
		}
		m.countAs(what, false, cs...)
	} else {
		m.count(false, &types.ConsumedCapacity{CapacityUnits: aws.Float64(float64(2 * len(in.TransactItems)))})
	}
	return out, err
}

// s3Bodies counts the ledger body store's requests as S3 requests.
type s3Bodies struct {
	inner ora.BodyStore
	m     *meter
}

func (b s3Bodies) PutBody(ctx context.Context, key string, body []byte) error {
	b.m.add(func(u *cost.Usage) { u.S3Puts++ })
	b.m.note("S3 PUT body", 0)
	return b.inner.PutBody(ctx, key, body)
}

// GetBody counts an S3 GET: make cost turns the ledger's body cache off, so
// each read of a body is one, as in a Lambda function whose cache does not
// hold it yet (an upper bound: warm functions keep recent bodies).
func (b s3Bodies) GetBody(ctx context.Context, key string) ([]byte, error) {
	b.m.add(func(u *cost.Usage) { u.S3Gets++ })
	b.m.note("S3 GET body", 0)
	return b.inner.GetBody(ctx, key)
}

// timed is a task handler whose invocations the meter counts, billed as
// Lambda bills: memory x duration rounded up to the millisecond.
type timed struct {
	inner stepfn.Handler
	name  string
	m     *meter
}

func (h timed) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	start := time.Now()
	out, err := h.inner.Invoke(ctx, payload)
	h.m.bill(h.name, time.Since(start))
	return out, err
}

func (m *meter) bill(function string, d time.Duration) {
	mb, ok := functionMemoryMB[function]
	if !ok {
		mb = 256
	}
	ms := math.Ceil(float64(d) / float64(time.Millisecond))
	m.add(func(u *cost.Usage) { u.LambdaInvocations++; u.LambdaGBSeconds += mb / 1024 * ms / 1000 })
}

// BenchmarkCost is `make cost`: high-confidence waves through the embedded
// runtime on DynamoDB Local, light (an empty ledger) and busy (after enough
// waves that orientation's look-back windows hold about 150 facts), each
// wave's usage counted (Standard transitions from the engine's history,
// function invocations and GB-seconds, DynamoDB calls and consumed capacity,
// one API request) and priced per 1,000 signals from shared/cost's table.
// Durations here run against DynamoDB Local, slower than DynamoDB: GB-seconds
// are an upper estimate. ORA_COST_WARMUP and ORA_COST_WAVES change the counts.
func BenchmarkCost(b *testing.B) {
	warmup, waves := 60, 10
	if v := os.Getenv("ORA_COST_WARMUP"); v != "" {
		fmt.Sscan(v, &warmup)
	}
	if v := os.Getenv("ORA_COST_WAVES"); v != "" {
		fmt.Sscan(v, &waves)
	}
	prices, err := cost.Table()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	dir := b.TempDir()
	cfg := DefaultConfig()
	cfg.DataDir = dir
	onDynamoDBLocal(b, &cfg, "cost")
	cfg.Watch.Dir = filepath.Join(dir, "inbox")
	cfg.Actions.Object.Root = filepath.Join(dir, "objects")
	m := &meter{}
	r, err := New(ctx, cfg, func(o *Options) {
		o.Logger = discard()
		o.WrapDynamoDB = func(c dynamo.Client) dynamo.Client { m.Client = c; return m }
		o.WrapBodies = func(b ora.BodyStore) ora.BodyStore { return s3Bodies{inner: b, m: m} }
		o.DynamoDBLedger = func(d *dynamo.Options) { d.BodyCacheBytes = -1 }
	})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	hs, err := r.taskHandlers(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for name, h := range hs {
		r.registerHandler(name, timed{inner: h, name: name, m: m})
	}
	// Each Express child: one request, and its duration at 64 MB.
	r.engine.RegisterIntegration(statemachines.StartExecutionSync("aws"), stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) {
		start := time.Now()
		out, err := r.children.Invoke(ctx, p)
		d := time.Since(start)
		m.add(func(u *cost.Usage) { u.ExpressRequests++; u.ExpressGBSeconds += cost.ExpressGBSeconds(d) })
		return out, err
	}))
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	src, _ := cfg.Source("demo")

	n := 0
	wave := func() cost.Usage {
		n++
		body := []byte(fmt.Sprintf(`{"confidence":"high","n":%d}`, n))
		t0 := time.Now()
		h, _ := observe.SignDelivery(src, body, t0, fmt.Sprintf("cost-%d", n))
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/demo", strings.NewReader(string(body)))
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusAccepted {
			b.Fatalf("webhook: %v %v", resp, err)
		}
		var rec observe.Receipt
		_ = json.NewDecoder(resp.Body).Decode(&rec)
		resp.Body.Close()
		m.bill("observe-webhook", time.Since(t0))
		arn := fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", region, account, stateMachine, rec.WaveID)
		ex, err := r.engine.Wait(ctx, arn)
		if err != nil || ex.Status != stepfn.StatusSucceeded {
			b.Fatalf("wave %s: %+v %v", rec.WaveID, ex, err)
		}
		hist, err := r.engine.GetExecutionHistory(ctx, arn)
		if err != nil {
			b.Fatal(err)
		}
		u := m.take()
		u.Waves, u.APIRequests = 1, 1
		// Plan put the wave's jobs in the jobs bucket: one PUT of S3 on AWS;
		// a Distributed Map's ItemReader reads them back (one GET, and a
		// Map Run), an inline Map has them in its input.
		if _, err := os.Stat(filepath.Join(cfg.DataDir, "jobs", JobsBucket, "waves", rec.WaveID, "jobs.json")); err == nil {
			u.S3Puts++
		}
		for _, ev := range hist {
			// Standard bills each state the parent enters; the children's
			// states are Express (requests and duration, counted above).
			if strings.HasSuffix(ev.Type, "StateEntered") {
				u.Transitions++
			}
			if d := ev.StateEnteredEventDetails; d != nil && d.Name == "Fetch observations" {
				u.S3Gets++
				u.MapRuns++
			}
		}
		return u
	}
	measure := func(k int) (cost.Usage, cost.Breakdown) {
		var sum cost.Usage
		for i := 0; i < k; i++ {
			sum = sum.Add(wave())
		}
		per, err := prices.Per1000(sum)
		if err != nil {
			b.Fatal(err)
		}
		return sum, per
	}
	report := func(name string, u cost.Usage, p cost.Breakdown) {
		w := float64(u.Waves)
		fmt.Printf("%-5s per wave: %.1f Standard transitions, %.1f Express requests (%.3f GB-s), %.1f Map Runs, %.1f invocations, %.3f GB-s, %.1f DynamoDB calls, %.1f RCU, %.1f WCU, %.1f S3 PUT, %.1f S3 GET; per 1,000 signals: Step Functions $%.3f, Lambda $%.3f, DynamoDB $%.3f, S3 $%.3f, API $%.3f = $%.3f\n",
			name, float64(u.Transitions)/w, float64(u.ExpressRequests)/w, u.ExpressGBSeconds/w, float64(u.MapRuns)/w, float64(u.LambdaInvocations)/w, u.LambdaGBSeconds/w, float64(u.DynamoDBCalls)/w,
			u.ReadUnits/w, u.WriteUnits/w, float64(u.S3Puts)/w, float64(u.S3Gets)/w, p.StepFunctions, p.Lambda, p.DynamoDB, p.S3, p.API, p.Total())
	}
	// ORA_COST_DETAIL prints, for the light and the busy waves, each call
	// shape's calls and units per wave, largest first: where the units go.
	detail := os.Getenv("ORA_COST_DETAIL") != ""
	resetDetail := func() {
		if detail {
			m.mu.Lock()
			m.detail = map[string]*[2]float64{}
			m.mu.Unlock()
		}
	}
	printDetail := func(name string) {
		if !detail {
			return
		}
		var keys []string
		for k := range m.detail {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return m.detail[keys[i]][1] > m.detail[keys[j]][1] })
		for _, k := range keys {
			fmt.Printf("detail %-5s %6.1f calls %8.1f units per wave  %s\n", name, m.detail[k][0]/float64(waves), m.detail[k][1]/float64(waves), k)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resetDetail()
		lightU, light := measure(waves)
		printDetail("light")
		for j := 0; j < warmup; j++ {
			wave()
		}
		resetDetail()
		busyU, busy := measure(waves)
		printDetail("busy")
		fmt.Printf("prices: %s list prices read %s (shared/cost/prices.json)\n", prices.Region, prices.Read)
		report("light", lightU, light)
		report("busy", busyU, busy)
		fmt.Println(cost.Line(busy, light))
		lat, err := cost.LatencyTable()
		if err != nil {
			b.Fatal(err)
		}
		busyP50, err1 := lat.P50(busyU)
		lightP50, err2 := lat.P50(lightU)
		if err1 != nil || err2 != nil {
			b.Fatal(err1, err2)
		}
		fmt.Println(cost.LatencyLine(busyP50, lightP50))
	}
}
