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
