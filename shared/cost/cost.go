// Package cost prices a wave's use of AWS from the checked-in price table
// (prices.json: us-east-1 list prices and Bedrock's model prices, with the
// date they were read). `make cost` measures the usage (shared/embedded's
// BenchmarkCost for the infrastructure, shared/reason's BenchmarkModelCost
// for the model's tokens) and prints the dollars this package computes.
package cost

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"time"
)

//go:embed prices.json
var pricesJSON []byte

// Prices are list prices in dollars per unit.
type Prices struct {
	Region                string  `json:"region"`
	Read                  string  `json:"read"`
	Note                  string  `json:"note"`
	StandardPerTransition float64 `json:"step_functions_standard_per_transition"`
	ExpressPerRequest     float64 `json:"step_functions_express_per_request"`
	ExpressPerGBSecond    float64 `json:"step_functions_express_per_gb_second"`
	LambdaPerRequest      float64 `json:"lambda_per_request"`
	LambdaPerGBSecond     float64 `json:"lambda_arm64_per_gb_second"`
	DynamoDBPerWriteUnit  float64 `json:"dynamodb_per_write_unit"`
	DynamoDBPerReadUnit   float64 `json:"dynamodb_per_read_unit"`
	HTTPAPIPerRequest     float64 `json:"http_api_per_request"`
	S3PerPut              float64 `json:"s3_per_put"`
	S3PerGet              float64 `json:"s3_per_get"`
	// Models are Bedrock's on-demand prices by model id (inference profile).
	Models map[string]ModelPrice `json:"models"`
	// Sources names, for each price, the page it was read from and when.
	Sources map[string]Source `json:"sources"`
}

// Source is where a price was read, when, and what the page says.
type Source struct {
	URL  string `json:"url"`
	Read string `json:"read"`
	Says string `json:"says"`
}

// Table returns the checked-in price table.
func Table() (Prices, error) {
	var p Prices
	if err := json.Unmarshal(pricesJSON, &p); err != nil {
		return Prices{}, fmt.Errorf("cost: prices.json: %w", err)
	}
	if p.Read == "" || p.StandardPerTransition <= 0 || p.LambdaPerGBSecond <= 0 || p.DynamoDBPerWriteUnit <= 0 || p.S3PerPut <= 0 || p.S3PerGet <= 0 || len(p.Models) == 0 {
		return Prices{}, fmt.Errorf("cost: prices.json lacks a date or a price")
	}
	for id, m := range p.Models {
		if m.Input <= 0 || m.Output <= 0 || m.CacheRead <= 0 || m.CacheWrite <= 0 {
			return Prices{}, fmt.Errorf("cost: prices.json: model %s lacks a price", id)
		}
	}
	var all map[string]json.RawMessage
	_ = json.Unmarshal(pricesJSON, &all)
	for key := range all {
		if key == "region" || key == "read" || key == "note" || key == "sources" {
			continue
		}
		if src := p.Sources[key]; src.URL == "" || src.Read == "" {
			return Prices{}, fmt.Errorf("cost: prices.json: %s has no source (url and date read)", key)
		}
	}
	return p, nil
}

// Usage is what some number of waves used.
type Usage struct {
	Waves             int     // waves (= signals) measured
	Transitions       int     // state transitions Step Functions Standard bills (the parent's)
	ExpressRequests   int     // Express executions started (the wave's children)
	ExpressGBSeconds  float64 // Express duration: 64 MB x each child's duration in 100 ms steps
	LambdaInvocations int     // function invocations (the webhook's included)
	LambdaGBSeconds   float64 // memory (GB) x duration (s), per invocation
	DynamoDBCalls     int     // API calls to DynamoDB
	ReadUnits         float64 // read capacity units consumed
	WriteUnits        float64 // write capacity units consumed
	APIRequests       int     // HTTP API requests
	S3Puts            int     // S3 PUT requests (ledger bodies by reference, the wave's jobs)
	S3Gets            int     // S3 GET requests (the same, read back)
	MapRuns           int     // Distributed Map Runs (a fan-out too large to run inline)
}

// Add returns u plus v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		Waves: u.Waves + v.Waves, Transitions: u.Transitions + v.Transitions,
		ExpressRequests: u.ExpressRequests + v.ExpressRequests, ExpressGBSeconds: u.ExpressGBSeconds + v.ExpressGBSeconds,
		LambdaInvocations: u.LambdaInvocations + v.LambdaInvocations, LambdaGBSeconds: u.LambdaGBSeconds + v.LambdaGBSeconds,
		DynamoDBCalls: u.DynamoDBCalls + v.DynamoDBCalls, ReadUnits: u.ReadUnits + v.ReadUnits,
		WriteUnits: u.WriteUnits + v.WriteUnits, APIRequests: u.APIRequests + v.APIRequests,
		S3Puts: u.S3Puts + v.S3Puts, S3Gets: u.S3Gets + v.S3Gets, MapRuns: u.MapRuns + v.MapRuns,
	}
}

// Breakdown is the dollars of some usage, by service.
type Breakdown struct {
	StepFunctions, Lambda, DynamoDB, API, S3 float64
}

// Total is the sum of the parts.
func (b Breakdown) Total() float64 { return b.StepFunctions + b.Lambda + b.DynamoDB + b.API + b.S3 }

// Per1000 prices u per 1,000 waves (signals).
func (p Prices) Per1000(u Usage) (Breakdown, error) {
	if u.Waves < 1 {
		return Breakdown{}, fmt.Errorf("cost: no waves measured")
	}
	scale := 1000 / float64(u.Waves)
	return Breakdown{
		StepFunctions: scale * (float64(u.Transitions)*p.StandardPerTransition +
			float64(u.ExpressRequests)*p.ExpressPerRequest + u.ExpressGBSeconds*p.ExpressPerGBSecond),
		Lambda:   scale * (float64(u.LambdaInvocations)*p.LambdaPerRequest + u.LambdaGBSeconds*p.LambdaPerGBSecond),
		DynamoDB: scale * (u.ReadUnits*p.DynamoDBPerReadUnit + u.WriteUnits*p.DynamoDBPerWriteUnit),
		API:      scale * float64(u.APIRequests) * p.HTTPAPIPerRequest,
		S3:       scale * (float64(u.S3Puts)*p.S3PerPut + float64(u.S3Gets)*p.S3PerGet),
	}, nil
}

// ExpressGBSeconds is what Step Functions bills for one Express execution
// of duration d: its memory (billed at least 64 MB, the figure used here: a
// wave's state is a few KB) times d rounded up to the next 100 ms.
func ExpressGBSeconds(d time.Duration) float64 {
	steps := math.Ceil(float64(d) / float64(100*time.Millisecond))
	if steps < 1 {
		steps = 1
	}
	return 64.0 / 1024 * steps * 0.1
}

// Line is make cost's summary line.
func Line(busy, light Breakdown) string {
	return fmt.Sprintf("cost: busy $%.2f, light $%.2f per 1,000 signals (model tokens excluded)", busy.Total(), light.Total())
}

// ModelPrice is what a model costs, in USD per million tokens of each kind.
type ModelPrice struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read"`
	CacheWrite float64 `json:"cache_write"`
}

// Call is one model call's tokens: uncached input, input written to and
// read from the prompt cache, and output.
type Call struct {
	Input, CacheWrite, CacheRead, Output int
}

// Cost is what c costs at p, in USD.
func (p ModelPrice) Cost(c Call) float64 {
	return (float64(c.Input)*p.Input + float64(c.CacheWrite)*p.CacheWrite + float64(c.CacheRead)*p.CacheRead + float64(c.Output)*p.Output) / 1e6
}

// Uncached is what c would cost with no prompt caching: every input token
// at the input price.
func (p ModelPrice) Uncached(c Call) float64 {
	return p.Cost(Call{Input: c.Input + c.CacheWrite + c.CacheRead, Output: c.Output})
}

// Decision is what one decision's calls (its stages) cost on model, with
// and without prompt caching. Errors: the model has no price.
func (p Prices) Decision(model string, calls []Call) (cached, uncached float64, err error) {
	mp, ok := p.Models[model]
	if !ok {
		return 0, 0, fmt.Errorf("cost: no price for model %q", model)
	}
	for _, c := range calls {
		cached += mp.Cost(c)
		uncached += mp.Uncached(c)
	}
	return cached, uncached, nil
}

// CapDecisions is how many decisions of perDecision USD a daily spend cap
// of capUSD allows (0 when either is not positive).
func CapDecisions(capUSD, perDecision float64) int {
	if capUSD <= 0 || perDecision <= 0 {
		return 0
	}
	return int(capUSD / perDecision)
}

// ModelLine is make cost's line for one model and chain length: the tokens
// of the decision's calls, its cost with and without caching, and how many
// such decisions the daily cap allows.
func ModelLine(model string, calls []Call, cached, uncached, capUSD float64) string {
	var sum Call
	for _, c := range calls {
		sum.Input += c.Input
		sum.CacheWrite += c.CacheWrite
		sum.CacheRead += c.CacheRead
		sum.Output += c.Output
	}
	return fmt.Sprintf("model %s, %d stage(s): input %d, cache write %d, cache read %d, output %d tokens: $%.4f per decision ($%.4f without caching); a $%.0f daily cap allows %d",
		model, len(calls), sum.Input, sum.CacheWrite, sum.CacheRead, sum.Output, cached, uncached, capUSD, CapDecisions(capUSD, cached))
}
