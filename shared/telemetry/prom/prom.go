// Package prom is the telemetry.Metrics adapter that keeps ora's metrics in
// memory and writes them in the Prometheus text exposition format (version
// 0.0.4): `ora dev` serves it at GET /metrics.
package prom

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ora-runtime/ora/shared/telemetry"
)

var _ telemetry.Metrics = (*Registry)(nil)

// Buckets are the histogram upper bounds, by the metric's unit.
var Buckets = map[string][]float64{
	"Seconds":      {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	"Count":        {100, 250, 500, 1000, 2000, 4000, 8000, 16000, 32000},
	"None":         {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1},
	"Milliseconds": {1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000},
}

// Registry holds the metrics recorded so far. The zero value is not usable;
// call New.
type Registry struct {
	mu     sync.Mutex
	series map[string]map[string]*series // name -> label string -> series
	funcs  map[string]func() float64     // gauges read at scrape time
}

type series struct {
	labels string
	value  float64   // counter, gauge; histogram sum
	count  uint64    // histogram
	counts []uint64  // histogram, per bucket (not cumulative)
	bounds []float64 // histogram
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{series: map[string]map[string]*series{}, funcs: map[string]func() float64{}}
}

// GaugeFunc makes the gauge name (unlabelled) read f at each scrape.
func (r *Registry) GaugeFunc(name string, f func() float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.funcs[name] = f
}

// labelString renders key, value pairs sorted by key: {a="1",b="2"}.
func labelString(labels []string) string {
	if len(labels) < 2 {
		return ""
	}
	pairs := make([]string, 0, len(labels)/2)
	for i := 0; i+1 < len(labels); i += 2 {
		pairs = append(pairs, labels[i]+`="`+escape(labels[i+1])+`"`)
	}
	sort.Strings(pairs)
	return "{" + strings.Join(pairs, ",") + "}"
}

func escape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// get returns the series, or nil when name is not in the catalog of the
// right kind, or the labels do not match it.
func (r *Registry) get(name string, kind telemetry.Kind, labels []string) *series {
	def, ok := telemetry.Lookup(name)
	if !ok || def.Kind != kind || telemetry.CheckLabels(def, labels) != nil {
		return nil
	}
	ls := labelString(labels)
	m := r.series[name]
	if m == nil {
		m = map[string]*series{}
		r.series[name] = m
	}
	s := m[ls]
	if s == nil {
		s = &series{labels: ls}
		if kind == telemetry.Histogram {
			s.bounds = Buckets[def.Unit]
			s.counts = make([]uint64, len(s.bounds))
		}
		m[ls] = s
	}
	return s
}

// Add adds delta to a counter; negative or NaN deltas are dropped.
func (r *Registry) Add(name string, delta float64, labels ...string) {
	if delta < 0 || math.IsNaN(delta) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.get(name, telemetry.Counter, labels); s != nil {
		s.value += delta
	}
}

// Observe records one value of a histogram.
func (r *Registry) Observe(name string, value float64, labels ...string) {
	if math.IsNaN(value) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.get(name, telemetry.Histogram, labels)
	if s == nil {
		return
	}
	s.value += value
	s.count++
	if i := sort.SearchFloat64s(s.bounds, value); i < len(s.bounds) {
		s.counts[i]++
	}
}

// Set sets a gauge.
func (r *Registry) Set(name string, value float64, labels ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.get(name, telemetry.Gauge, labels); s != nil {
		s.value = value
	}
}

// Value returns the sum over all label sets of a counter or gauge whose
// labels include the pairs given (a histogram: its count), for the console.
func (r *Registry) Value(name string, labels ...string) float64 {
	r.mu.Lock()
	f := r.funcs[name]
	var total float64
	for _, s := range r.series[name] {
		if !hasLabels(s.labels, labels) {
			continue
		}
		if s.bounds != nil {
			total += float64(s.count)
		} else {
			total += s.value
		}
	}
	r.mu.Unlock()
	if f != nil {
		return f()
	}
	return total
}

// Sample is one labelled value of a metric, for the console.
type Sample struct {
	Labels string
	Value  float64 // counter, gauge; histogram: the count
	Sum    float64 // histogram
}

// Samples returns every labelled value of name, sorted by labels.
func (r *Registry) Samples(name string) []Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Sample
	for _, s := range r.series[name] {
		if s.bounds != nil {
			out = append(out, Sample{Labels: s.labels, Value: float64(s.count), Sum: s.value})
		} else {
			out = append(out, Sample{Labels: s.labels, Value: s.value})
		}
	}
	slices.SortFunc(out, func(a, b Sample) int { return strings.Compare(a.Labels, b.Labels) })
	return out
}

func hasLabels(ls string, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		if !strings.Contains(ls, labels[i]+`="`+escape(labels[i+1])+`"`) {
			return false
		}
	}
	return true
}

func num(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// withLabel adds k="v" to a rendered label string.
func withLabel(ls, k, v string) string {
	p := k + `="` + v + `"`
	if ls == "" {
		return "{" + p + "}"
	}
	return ls[:len(ls)-1] + "," + p + "}"
}

// WriteTo writes every catalogued metric in the text exposition format:
// HELP and TYPE for each, then its samples (histograms as cumulative
// _bucket lines with le, _sum and _count).
func (r *Registry) WriteTo(w io.Writer) (int64, error) {
	funcs := map[string]float64{}
	r.mu.Lock()
	fs := make(map[string]func() float64, len(r.funcs))
	for k, f := range r.funcs {
		fs[k] = f
	}
	r.mu.Unlock()
	for name, f := range fs {
		funcs[name] = f() // outside the lock: f may read the ledger
	}
	var b strings.Builder
	r.mu.Lock()
	for _, def := range telemetry.Catalog {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", def.Name, def.Help, def.Name, def.Kind)
		if v, ok := funcs[def.Name]; ok {
			fmt.Fprintf(&b, "%s %s\n", def.Name, num(v))
			continue
		}
		m := r.series[def.Name]
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s := m[k]
			if s.bounds == nil {
				fmt.Fprintf(&b, "%s%s %s\n", def.Name, k, num(s.value))
				continue
			}
			var cum uint64
			for i, ub := range s.bounds {
				cum += s.counts[i]
				fmt.Fprintf(&b, "%s_bucket%s %d\n", def.Name, withLabel(k, "le", num(ub)), cum)
			}
			fmt.Fprintf(&b, "%s_bucket%s %d\n", def.Name, withLabel(k, "le", "+Inf"), s.count)
			fmt.Fprintf(&b, "%s_sum%s %s\n%s_count%s %d\n", def.Name, k, num(s.value), def.Name, k, s.count)
		}
	}
	r.mu.Unlock()
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

// ServeHTTP answers GET /metrics.
func (r *Registry) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = r.WriteTo(w)
}
