package orient_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// A rule's risk_when marks the facts it holds on risky, and its risk_weight
// then moves them up the ranking: with no weight the newer object ranks
// first; with risk_weight 5 the older, failed one does.
func TestRiskWeightChangesTheOrder(t *testing.T) {
	dir := t.TempDir()
	objects := map[string]struct {
		body string
		age  time.Duration
	}{
		"alerts/build-41.json": {`{"status":"failed","job":"build"}`, 3 * time.Hour},
		"alerts/build-42.json": {`{"status":"ok","job":"build"}`, 10 * time.Minute},
	}
	for key, o := range objects {
		p := filepath.Join(dir, key)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(o.body), 0o644); err != nil {
			t.Fatal(err)
		}
		at := t0.Add(-o.age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	rank := func(riskWeight float64) (order []string, risky map[string]bool) {
		f := orient.NewFetcher(nil, func(o *orient.Options) {
			o.Sources = map[string]orient.Source{orient.FamilyObjects: orient.Objects{Reader: orient.Folder{Dir: dir}}}
		})
		w := &orient.Weights{Priority: 1, Risk: riskWeight, HalfLifeSeconds: 3600,
			RiskWhen: []ora.RiskMatch{{Path: "body.status", In: []string{"failed", "error"}}}}
		var facts []ora.Fact
		for i, key := range []string{"alerts/build-41.json", "alerts/build-42.json"} {
			job := orient.Job{ID: "obj.0000" + string(rune('0'+i)), Family: orient.FamilyObjects, Kind: "get", Target: key, Weights: w,
				Params: orient.Params{AsOf: t0, Limit: 1}}
			got, err := f.Observe(context.Background(), "s", job)
			if err != nil {
				t.Fatal(err)
			}
			facts = append(facts, got...)
		}
		sort.SliceStable(facts, func(a, b int) bool { return facts[a].Utility > facts[b].Utility })
		risky = map[string]bool{}
		for _, x := range facts {
			order = append(order, x.Provenance["key"])
			risky[x.Provenance["key"]] = x.Provenance["risk"] == "high"
		}
		return order, risky
	}
	order, risky := rank(0)
	if order[0] != "alerts/build-42.json" || !risky["alerts/build-41.json"] || risky["alerts/build-42.json"] {
		t.Fatalf("risk_weight 0: order %v, risky %v; want the newer first and only the failed one marked", order, risky)
	}
	if order, _ = rank(5); order[0] != "alerts/build-41.json" {
		t.Errorf("risk_weight 5: order %v, want the failed one first", order)
	}
}

func TestRiskWhenValidates(t *testing.T) {
	for _, tt := range []struct {
		name  string
		match []ora.RiskMatch
		field string
	}{
		{"a match", []ora.RiskMatch{{Path: "body.status", In: []string{"failed"}}}, ""},
		{"no path", []ora.RiskMatch{{In: []string{"failed"}}}, "rules[0].risk_when[0]"},
		{"no values", []ora.RiskMatch{{Path: "status"}}, "rules[0].risk_when[0]"},
		{"too many", make([]ora.RiskMatch, ora.MaxRiskMatches+1), "rules[0].risk_when"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := orient.DefaultProfile()
			p.Rules[0].RiskWhen = tt.match
			if got := ora.ErrorField(p.Validate()); got != tt.field {
				t.Errorf("Validate: field %q, want %q", got, tt.field)
			}
		})
	}
}
