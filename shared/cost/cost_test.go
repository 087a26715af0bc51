package cost

import (
	"math"
	"testing"
	"time"
)

func TestPer1000(t *testing.T) {
	p, err := Table()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		u    Usage
		want Breakdown
	}{
		{"one wave of 18 transitions", Usage{Waves: 1, Transitions: 18},
			Breakdown{StepFunctions: 1000 * 18 * p.StandardPerTransition}},
		{"per wave, not per measurement", Usage{Waves: 4, Transitions: 72, APIRequests: 4},
			Breakdown{StepFunctions: 1000 * 18 * p.StandardPerTransition, API: 1000 * p.HTTPAPIPerRequest}},
		{"lambda requests and GB-s", Usage{Waves: 2, LambdaInvocations: 30, LambdaGBSeconds: 3},
			Breakdown{Lambda: 500 * (30*p.LambdaPerRequest + 3*p.LambdaPerGBSecond)}},
		{"express requests and GB-s", Usage{Waves: 4, Transitions: 36, ExpressRequests: 8, ExpressGBSeconds: 0.5},
			Breakdown{StepFunctions: 250 * (36*p.StandardPerTransition + 8*p.ExpressPerRequest + 0.5*p.ExpressPerGBSecond)}},
		{"dynamodb units", Usage{Waves: 10, ReadUnits: 100, WriteUnits: 400, DynamoDBCalls: 200},
			Breakdown{DynamoDB: 100 * (100*p.DynamoDBPerReadUnit + 400*p.DynamoDBPerWriteUnit)}},
		{"s3 requests", Usage{Waves: 2, S3Puts: 6, S3Gets: 20},
			Breakdown{S3: 500 * (6*p.S3PerPut + 20*p.S3PerGet)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.Per1000(tc.u)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range [][2]float64{{got.StepFunctions, tc.want.StepFunctions}, {got.Lambda, tc.want.Lambda}, {got.DynamoDB, tc.want.DynamoDB}, {got.API, tc.want.API}} {
				if math.Abs(c[0]-c[1]) > 1e-12 {
					t.Errorf("got %+v, want %+v", got, tc.want)
					break
				}
			}
		})
	}
	if _, err := p.Per1000(Usage{}); err == nil {
		t.Error("no waves priced without an error")
	}
	// Standard bills $0.025 per 1,000 transitions: 18 per wave is $0.45 per 1,000 waves.
	if b, _ := p.Per1000(Usage{Waves: 1, Transitions: 18}); math.Abs(b.Total()-0.45) > 1e-9 {
		t.Errorf("18 transitions per wave = $%.4f per 1,000, want $0.45", b.Total())
	}
	for _, c := range []struct {
		d    time.Duration
		want float64
	}{{0, 0.00625}, {time.Millisecond, 0.00625}, {100 * time.Millisecond, 0.00625}, {101 * time.Millisecond, 0.0125}, {time.Second, 0.0625}} {
		if got := ExpressGBSeconds(c.d); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("ExpressGBSeconds(%v) = %v, want %v (64 MB in 100 ms steps)", c.d, got, c.want)
		}
	}
	if got := Line(Breakdown{StepFunctions: 0.123}, Breakdown{DynamoDB: 0.05}); got != "cost: busy $0.12, light $0.05 per 1,000 signals (model tokens excluded)" {
		t.Errorf("Line = %q", got)
	}
}

func TestModelPrices(t *testing.T) {
	p, err := Table()
	if err != nil {
		t.Fatal(err)
	}
	const sonnet, haiku = "anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic.claude-haiku-4-5-20251001-v1:0"
	for _, m := range []string{sonnet, haiku} {
		g, us := p.Models["global."+m], p.Models["us."+m]
		t.Run(m, func(t *testing.T) {
			for _, c := range [][3]float64{{us.Input, g.Input}, {us.Output, g.Output}, {us.CacheRead, g.CacheRead}, {us.CacheWrite, g.CacheWrite}} {
				if math.Abs(c[0]-1.1*c[1]) > 1e-9 {
					t.Errorf("us. %v, global %v: want the us. profile at 1.1x", c[0], c[1])
				}
			}
			if math.Abs(g.CacheRead-0.1*g.Input) > 1e-9 || math.Abs(g.CacheWrite-1.25*g.Input) > 1e-9 {
				t.Errorf("cache read %v, write %v for input %v: want 0.1x and 1.25x", g.CacheRead, g.CacheWrite, g.Input)
			}
		})
	}
	calls := []Call{{Input: 100, CacheWrite: 10000, Output: 300}, {Input: 500, CacheRead: 10000, Output: 300}}
	cached, uncached, err := p.Decision("global."+sonnet, calls)
	if err != nil {
		t.Fatal(err)
	}
	// (100*3 + 10000*3.75 + 300*15) + (500*3 + 10000*0.3 + 300*15), per million
	if want := (300 + 37500 + 4500 + 1500 + 3000 + 4500) / 1e6; math.Abs(cached-want) > 1e-12 {
		t.Errorf("cached = %v, want %v", cached, want)
	}
	if want := (20600*3 + 600*15) / 1e6; math.Abs(uncached-want) > 1e-12 {
		t.Errorf("uncached = %v, want %v", uncached, want)
	}
	if _, _, err := p.Decision("no-such-model", calls); err == nil {
		t.Error("a model without a price was priced")
	}
	for _, c := range []struct {
		cap, per float64
		want     int
	}{{50, 0.05, 1000}, {50, 0.051, 980}, {0, 0.05, 0}, {50, 0, 0}} {
		if got := CapDecisions(c.cap, c.per); got != c.want {
			t.Errorf("CapDecisions(%v, %v) = %d, want %d", c.cap, c.per, got, c.want)
		}
	}
	if got := ModelLine("m", calls, 0.0553, 0.0708, 50); got != "model m, 2 stage(s): input 600, cache write 10000, cache read 10000, output 600 tokens: $0.0553 per decision ($0.0708 without caching); a $50 daily cap allows 904" {
		t.Errorf("ModelLine = %q", got)
	}
}

func TestLatencyTable(t *testing.T) {
	l, err := LatencyTable()
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Sources) < 8 {
		t.Errorf("%d sources, want one per figure", len(l.Sources))
	}
}

func TestP50(t *testing.T) {
	l := Latencies{APIGateway: 10, LambdaInvoke: 20, DynamoDBCall: 8, StandardTransition: 30, ExpressSyncChild: 100, S3Put: 30, S3Get: 20, DistributedMapRun: 1000}
	cases := []struct {
		name string
		u    Usage
		want time.Duration
	}{
		{"a call of each kind", Usage{Waves: 1, APIRequests: 1, LambdaInvocations: 1, DynamoDBCalls: 1, Transitions: 1, ExpressRequests: 1, S3Puts: 1, S3Gets: 1},
			218 * time.Millisecond},
		{"per wave, not per measurement", Usage{Waves: 2, LambdaInvocations: 20, DynamoDBCalls: 50}, 400 * time.Millisecond},
		{"a Map Run costs its second", Usage{Waves: 1, Transitions: 5, MapRuns: 1}, 1150 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := l.P50(tc.u)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("P50 = %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := l.P50(Usage{}); err == nil {
		t.Error("no waves estimated without an error")
	}
}
