package orient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

func TestPlanJobsCaps(t *testing.T) {
	dir := objectFolder(t, 30)
	sources := map[string]orient.Source{
		orient.FamilyLedger:  orient.Ledger{},
		orient.FamilyObjects: orient.Objects{Reader: orient.Folder{Dir: dir}},
	}
	tests := []struct {
		name      string
		edit      func(*ora.Profile)
		jobs      int
		drops     orient.Drops
		factLimit int
	}{
		{"no caps hit", func(*ora.Profile) {}, 4 + 30, orient.Drops{}, 50},
		{"rule quota", func(p *ora.Profile) { p.Rules[4].MaxJobs = 20 }, 4 + 20, orient.Drops{orient.DropRuleQuota: 10}, 50},
		{"source quota", func(p *ora.Profile) {
			p.Rules[4].MaxJobs = 20
			p.Limits.SourceQuotas = map[string]int{orient.FamilyObjects: 15}
		}, 4 + 15, orient.Drops{orient.DropRuleQuota: 10, orient.DropSourceQuota: 5}, 50},
		{"global cap", func(p *ora.Profile) { p.Limits.MaxJobs = 10 }, 10, orient.Drops{orient.DropGlobalCap: 24}, 50},
		{"fact cap lowers each job's limit", func(p *ora.Profile) { p.Limits.MaxFacts = 68 }, 34, orient.Drops{}, 2},
		{"disabled rule plans nothing", func(p *ora.Profile) { p.Rules[4].Enabled = false }, 4, orient.Drops{}, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := orient.DefaultProfile()
			p.Rules = append(p.Rules, objectsRule("weather/", 1))
			tt.edit(&p)
			drops := orient.Drops{}
			jobs, err := orient.PlanJobs(context.Background(), testSignal("s"), p, sources, drops)
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) != tt.jobs {
				t.Errorf("jobs: got %d, want %d", len(jobs), tt.jobs)
			}
			if fmt.Sprint(drops) != fmt.Sprint(tt.drops) {
				t.Errorf("drops: got %v, want %v", drops, tt.drops)
			}
			ids := map[string]bool{}
			total := 0
			for _, j := range jobs {
				if ids[j.ID] {
					t.Errorf("job id %s twice", j.ID)
				}
				ids[j.ID] = true
				if err := j.Validate(); err != nil {
					t.Errorf("job %s: %v", j.ID, err)
				}
				if j.TimeoutMS != p.Limits.JobTimeoutMS {
					t.Errorf("job %s timeout: got %d, want %d", j.ID, j.TimeoutMS, p.Limits.JobTimeoutMS)
				}
				total += j.Params.Limit
			}
			if total > p.Limits.MaxFacts {
				t.Errorf("job fact limits add up to %d, over max_facts %d", total, p.Limits.MaxFacts)
			}
			if len(jobs) > 0 && jobs[0].Params.Limit != tt.factLimit {
				t.Errorf("first job's fact limit: got %d, want %d", jobs[0].Params.Limit, tt.factLimit)
			}
		})
	}
	t.Run("unknown family fails closed", func(t *testing.T) {
		p := orient.DefaultProfile()
		p.Rules = append(p.Rules, objectsRule("weather/", 1))
		_, err := orient.PlanJobs(context.Background(), testSignal("s"), p, map[string]orient.Source{orient.FamilyLedger: orient.Ledger{}}, nil)
		if ora.ErrorField(err) != "rules.objects-weather.source_type" {
			t.Errorf("got %v, want EINVALID on rules.objects-weather.source_type", err)
		}
	})
	t.Run("malformed predicate fails closed", func(t *testing.T) {
		p := orient.DefaultProfile()
		p.Rules[0].Predicate = json.RawMessage(`{"query":"open-commitments","limit":5,"extra":1}`)
		_, err := orient.PlanJobs(context.Background(), testSignal("s"), p, sources, nil)
		if ora.ErrorField(err) != "rules.open-commitments.predicate" {
			t.Errorf("got %v, want EINVALID on rules.open-commitments.predicate", err)
		}
	})
}

func httpRule(urls ...string) ora.AttentionRule {
	pred, _ := json.Marshal(orient.HTTPPredicate{URLs: urls, MaxBytes: 64})
	return ora.AttentionRule{ID: "web", SourceType: orient.FamilyHTTP, Predicate: pred, Band: ora.BandSituational, PriorityWeight: 1, Enabled: true}
}

func TestHTTPSource(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			_, _ = w.Write([]byte(`{"temp":3}`))
		case "/redirect":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/big":
			_, _ = w.Write([]byte(strings.Repeat("x", 65)))
		case "/slow":
			time.Sleep(300 * time.Millisecond)
		case "/down":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/gone":
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	src := orient.HTTP{Allow: []string{srv.URL + "/"}}
	ctx := context.Background()

	t.Run("jobs only for URLs on both allow lists", func(t *testing.T) {
		drops := orient.Drops{}
		w := orient.Wave{SignalID: "s", AsOf: t0, Limits: ora.Limits{HTTPAllow: []string{srv.URL + "/ok"}}, Drops: drops}
		jobs, err := src.Jobs(ctx, w, httpRule(srv.URL+"/ok", srv.URL+"/big", "https://elsewhere.example/"))
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != 1 || jobs[0].Target != srv.URL+"/ok" || drops[orient.DropNotAllowed] != 2 {
			t.Errorf("got %d jobs, drops %v; want the one allowed URL and 2 not_allowed", len(jobs), drops)
		}
	})
	tests := []struct {
		path    string
		timeout int
		code    string
	}{
		{"/ok", 0, ""},
		{"/redirect", 0, ora.EINVALID},
		{"/big", 0, ora.EINVALID},
		{"/down", 0, ora.ETRANSIENT},
		{"/gone", 0, ora.EINVALID},
		{"/slow", 50, ora.ETRANSIENT},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			f := orient.NewFetcher(nil, func(o *orient.Options) { o.Sources = map[string]orient.Source{orient.FamilyHTTP: src} })
			job := orient.Job{ID: "web.00000", Family: orient.FamilyHTTP, Kind: "get", Target: srv.URL + tt.path, TimeoutMS: tt.timeout,
				Weights: &orient.Weights{Priority: 1}, Params: orient.Params{AsOf: t0, Limit: 1, MaxBytes: 64}}
			facts, err := f.Observe(ctx, "s", job)
			if got := ora.ErrorCode(err); got != tt.code {
				t.Fatalf("Observe %s: got %v, want code %q", tt.path, err, tt.code)
			}
			if tt.code == "" && (len(facts) != 1 || !strings.Contains(string(facts[0].Normalized), `"temp":3`) || facts[0].SourceType != orient.FamilyHTTP) {
				t.Errorf("facts: %+v", facts)
			}
		})
	}
	t.Run("a URL off the operator's list is refused at Fetch", func(t *testing.T) {
		f := orient.NewFetcher(nil, func(o *orient.Options) { o.Sources = map[string]orient.Source{orient.FamilyHTTP: src} })
		job := orient.Job{ID: "web.00000", Family: orient.FamilyHTTP, Kind: "get", Target: "http://169.254.169.254/latest", Params: orient.Params{AsOf: t0, Limit: 1}}
		if _, err := f.Observe(ctx, "s", job); ora.ErrorField(err) != "job.target" {
			t.Errorf("got %v, want EINVALID on job.target", err)
		}
	})
}

func TestObjectsSourceFacts(t *testing.T) {
	dir := objectFolder(t, 3)
	src := orient.Objects{Reader: orient.Folder{Dir: dir}}
	jobs, err := src.Jobs(context.Background(), orient.Wave{SignalID: "s", AsOf: t0}, objectsRule("weather/", 1))
	if err != nil || len(jobs) != 3 || jobs[0].Target != "weather/report-000.json" {
		t.Fatalf("Jobs: got %+v, %v", jobs, err)
	}
	t.Run("objects modified after the signal are not planned", func(t *testing.T) {
		jobs, _ := src.Jobs(context.Background(), orient.Wave{SignalID: "s", AsOf: t0.Add(-150 * time.Second)}, objectsRule("weather/", 1))
		if len(jobs) != 1 {
			t.Errorf("got %d jobs, want 1 (the one modified 3 minutes before t0)", len(jobs))
		}
	})
	facts, err := src.Observe(context.Background(), orient.Wave{SignalID: "s", AsOf: t0}, jobs[1])
	if err != nil || len(facts) != 1 || !strings.Contains(string(facts[0].Normalized), `"station":1`) {
		t.Errorf("Observe: got %+v, %v", facts, err)
	}
	if _, _, err := (orient.Folder{Dir: dir}).Get(context.Background(), "../etc/passwd", 10); ora.ErrorCode(err) != ora.EINVALID {
		t.Errorf("Get ../: got %v, want EINVALID", err)
	}
}

type countingMetrics struct{ adds map[string]float64 }

func (m *countingMetrics) Add(name string, d float64, labels ...string) {
	m.adds[name+fmt.Sprint(labels)] += d
}
func (m *countingMetrics) Observe(string, float64, ...string) {}

func TestFetchOutsideFailureIsADrop(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) }))
	defer srv.Close()
	m := &countingMetrics{adds: map[string]float64{}}
	f := orient.NewFetcher(openLedger(t), func(o *orient.Options) {
		o.Sources = map[string]orient.Source{orient.FamilyHTTP: orient.HTTP{Allow: []string{srv.URL + "/"}}}
		o.Metrics = m
	})
	job := orient.Job{ID: "web.00000", Family: orient.FamilyHTTP, Kind: "get", Target: srv.URL + "/x", Params: orient.Params{AsOf: t0, Limit: 1}}
	n, err := f.Fetch(context.Background(), "w1", job)
	if err != nil || n != 0 {
		t.Fatalf("Fetch: got %d, %v; want 0 facts and no error", n, err)
	}
	if m.adds[orient.MetricFactDrops+"[reason job_error]"] != 1 || m.adds[orient.MetricObservationJobs+"[source http status error]"] != 1 {
		t.Errorf("metrics: %v", m.adds)
	}
}
