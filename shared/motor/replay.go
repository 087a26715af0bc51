package motor

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// GoldenWave is one recorded wave of the golden incidents set (seed 003 §17):
// the signal, the packet the reasoner saw, and what the wave decided and how
// it ended.
//
// An entry is either a decision wave (Signal, Packet; Expect.Action and
// Band) or a failure incident (Incident; Expect.Classification and
// Taxonomy): what the operator knew of a failure and how it must be
// classified.
type GoldenWave struct {
	Name     string                `json:"name"`
	Signal   ora.NormalizedSignal  `json:"signal,omitzero"`
	Packet   ora.OrientationPacket `json:"packet,omitzero"`
	Incident *IncidentFacts        `json:"incident,omitempty"`
	Expect   Expect                `json:"expect"`
}

// IncidentFacts are a golden incident's facts, as the classifier reads them
// (operate.Facts).
type IncidentFacts struct {
	Error              string `json:"error"`
	Cause              string `json:"cause,omitempty"`
	Stage              string `json:"stage"`
	Sources            int    `json:"sources,omitempty"`
	NewWithMotor       bool   `json:"new_with_motor,omitempty"`
	OtherProfilePassed bool   `json:"other_profile_passed,omitempty"`
}

// Expect is the recorded outcome a replay compares with.
type Expect struct {
	Action  string `json:"action,omitempty"`
	Band    string `json:"band,omitempty"`
	Verdict string `json:"verdict,omitempty"` // completed | escalated
	// Classification and Taxonomy: a golden incident's expected class.
	Classification string `json:"classification,omitempty"` // app | motor | mixed
	Taxonomy       string `json:"taxonomy,omitempty"`       // APP-SPEC, ...
}

// Change is one wave of a replay: what it decided then and now.
type Change struct {
	Name    string   `json:"name"`
	Want    Expect   `json:"want"`
	Got     Expect   `json:"got"`
	Changed []string `json:"changed,omitempty"` // decision | band | verdict | classification | error
	Error   string   `json:"error,omitempty"`
	// Validators says which check the bundle's validator settings would
	// fail the decision with (its verdict is then "failed").
	Validators []string `json:"validators,omitempty"`
}

// Report is a replay's result, wave by wave.
type Report struct {
	Motor   string   `json:"motor"`
	Waves   []Change `json:"waves"`
	Failing []string `json:"failing"`
}

//go:embed golden/*.json golden/incidents/*.json
var goldenFS embed.FS

// Golden returns the golden set that ships with ora.
func Golden() ([]GoldenWave, error) {
	sub, err := fs.Sub(goldenFS, "golden")
	if err != nil {
		return nil, err
	}
	return loadGolden(sub)
}

// LoadGolden reads a directory of exported waves (one JSON GoldenWave per
// .json file) and of incidents (in its incidents folder). Errors: EINVALID
// naming the file.
func LoadGolden(dir string) ([]GoldenWave, error) {
	return loadGolden(os.DirFS(dir))
}

// MaxGoldenBytes is the largest golden file read.
const MaxGoldenBytes = 4 << 20

// LoadGoldenFrom reads a golden set from an object store (a deployment's own
// set under an S3 prefix on AWS): every .json object directly under prefix
// and under prefix + "incidents/". Errors: EINVALID naming the object,
// ETRANSIENT.
func LoadGoldenFrom(ctx context.Context, r orient.ObjectReader, prefix string) ([]GoldenWave, error) {
	objs, err := r.List(ctx, prefix, 10000)
	if err != nil {
		return nil, fmt.Errorf("golden %s: %w", prefix, err)
	}
	files := map[string][]byte{}
	for _, o := range objs {
		rel := strings.TrimPrefix(o.Key, prefix)
		if !strings.HasSuffix(rel, ".json") || (strings.Contains(rel, "/") && path.Dir(rel) != "incidents") {
			continue
		}
		b, _, err := r.Get(ctx, o.Key, MaxGoldenBytes)
		if err != nil {
			return nil, fmt.Errorf("golden %s: %w", o.Key, err)
		}
		if len(b) > MaxGoldenBytes {
			return nil, ora.Invalid("golden/"+rel, "larger than %d bytes", MaxGoldenBytes)
		}
		files[rel] = b
	}
	return parseGolden(files)
}

func loadGolden(fsys fs.FS) ([]GoldenWave, error) {
	files := map[string][]byte{}
	for _, pattern := range []string{"*.json", "incidents/*.json"} {
		names, err := fs.Glob(fsys, pattern)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			b, err := fs.ReadFile(fsys, n)
			if err != nil {
				return nil, fmt.Errorf("golden %s: %w", n, err)
			}
			files[n] = b
		}
	}
	return parseGolden(files)
}

// parseGolden decodes golden files by name (incidents under incidents/),
// in name order. Errors: EINVALID naming the file.
func parseGolden(files map[string][]byte) ([]GoldenWave, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	if len(names) == 0 {
		return nil, ora.Invalid("golden", "no .json waves found")
	}
	sort.Strings(names)
	var out []GoldenWave
	for _, n := range names {
		var w GoldenWave
		if err := ora.DecodeJSON(files[n], &w); err != nil {
			return nil, ora.Invalid("golden/"+n, "not a golden wave: %v", err)
		}
		if w.Name == "" {
			w.Name = strings.TrimSuffix(path.Base(n), ".json")
		}
		incident := path.Dir(n) == "incidents"
		switch {
		case incident && w.Incident == nil:
			return nil, ora.Invalid("golden/"+n, "an incident needs its incident facts")
		case incident && (w.Incident.Error == "" || w.Incident.Stage == "" || w.Expect.Classification == "" || w.Expect.Taxonomy == ""):
			return nil, ora.Invalid("golden/"+n, "incident.error, incident.stage, expect.classification and expect.taxonomy are required")
		case !incident && (w.Incident != nil || w.Signal.ID == "" || w.Expect.Action == "" || w.Expect.Band == ""):
			return nil, ora.Invalid("golden/"+n, "signal.id, expect.action and expect.band are required (an incident goes in incidents/)")
		}
		out = append(out, w)
	}
	return out, nil
}

// verdictOf is how a wave of this band ends without a human: executed and
// validated (completed), or waiting for a human (escalated).
func verdictOf(band ora.ConfidenceBand) string {
	if band == ora.BandLow {
		return "escalated"
	}
	return "completed"
}
