// Package emf is the telemetry.Metrics adapter for Lambda: it writes each
// measurement as one line in CloudWatch's embedded metric format to the
// function's log stream, where CloudWatch turns it into a metric of the
// namespace Ora with the measurement's labels as its dimensions.
package emf

import (
	"encoding/json"
	"io"
	"math"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/telemetry"
)

// Namespace is the CloudWatch namespace of ora's metrics.
const Namespace = "Ora"

var _ telemetry.Metrics = (*Writer)(nil)

// Writer writes EMF lines to W.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	now     func() time.Time
	secrets *ora.Secrets
}

// Options tune a Writer.
type Options struct {
	// Secrets are redacted from every dimension value (a label should never
	// hold one; the registry catches one that does). Optional.
	Secrets *ora.Secrets
}

// New returns a Writer writing to w (a Lambda's stdout).
func New(w io.Writer, opts ...func(*Options)) *Writer {
	var o Options
	for _, f := range opts {
		f(&o)
	}
	return &Writer{w: w, now: time.Now, secrets: o.Secrets}
}

type metricDef struct {
	Name string `json:"Name"`
	Unit string `json:"Unit,omitempty"`
}

type directive struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []metricDef `json:"Metrics"`
}

type meta struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

// write emits one line; names outside the catalog, labels that do not match
// it, and non-finite values are dropped.
func (e *Writer) write(name string, kind telemetry.Kind, value float64, labels []string) {
	def, ok := telemetry.Lookup(name)
	if !ok || def.Kind != kind || telemetry.CheckLabels(def, labels) != nil || math.IsNaN(value) || math.IsInf(value, 0) {
		return
	}
	doc := map[string]any{}
	dims := []string{}
	for i := 0; i+1 < len(labels); i += 2 {
		dims = append(dims, labels[i])
		doc[labels[i]] = e.secrets.RedactString(labels[i+1])
	}
	doc[name] = value
	doc["_aws"] = meta{
		Timestamp: e.now().UnixMilli(),
		CloudWatchMetrics: []directive{{
			Namespace: Namespace, Dimensions: [][]string{dims},
			Metrics: []metricDef{{Name: name, Unit: def.Unit}},
		}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.w.Write(append(b, '\n'))
}

// Add writes a counter increment; CloudWatch sums them.
func (e *Writer) Add(name string, delta float64, labels ...string) {
	if delta < 0 {
		return
	}
	e.write(name, telemetry.Counter, delta, labels)
}

// Observe writes one value of a distribution (CloudWatch keeps percentiles).
func (e *Writer) Observe(name string, value float64, labels ...string) {
	e.write(name, telemetry.Histogram, value, labels)
}

// Set writes a gauge's current value.
func (e *Writer) Set(name string, value float64, labels ...string) {
	e.write(name, telemetry.Gauge, value, labels)
}
