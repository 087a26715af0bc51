package motor

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/rules"
)

// GoldenWave is one recorded wave of the golden incidents set (seed 003 §17):
// the signal, the packet the reasoner saw, and what the wave decided and how
// it ended.
type GoldenWave struct {
	Name   string                `json:"name"`
	Signal ora.NormalizedSignal  `json:"signal"`
	Packet ora.OrientationPacket `json:"packet,omitzero"`
	Expect Expect                `json:"expect"`
}

// Expect is the recorded outcome a replay compares with.
type Expect struct {
	Action  string `json:"action"`
	Band    string `json:"band"`
	Verdict string `json:"verdict"` // completed | escalated
}

// Change is one wave of a replay: what it decided then and now.
type Change struct {
	Name    string   `json:"name"`
	Want    Expect   `json:"want"`
	Got     Expect   `json:"got"`
	Changed []string `json:"changed,omitempty"` // decision | band | verdict | error
	Error   string   `json:"error,omitempty"`
}

// Report is a replay's result, wave by wave.
type Report struct {
	Motor   string   `json:"motor"`
	Waves   []Change `json:"waves"`
	Failing []string `json:"failing"`
}

//go:embed golden/*.json
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
// .json file). Errors: EINVALID naming the file.
func LoadGolden(dir string) ([]GoldenWave, error) {
	return loadGolden(os.DirFS(dir))
}

func loadGolden(fsys fs.FS) ([]GoldenWave, error) {
	names, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, ora.Invalid("golden", "no .json waves found")
	}
	sort.Strings(names)
	var out []GoldenWave
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("golden %s: %w", n, err)
		}
		var w GoldenWave
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, ora.Invalid("golden/"+n, "not a golden wave: %v", err)
		}
		if w.Name == "" {
			w.Name = strings.TrimSuffix(filepath.Base(n), ".json")
		}
		if w.Signal.ID == "" || w.Expect.Action == "" || w.Expect.Band == "" {
			return nil, ora.Invalid("golden/"+n, "signal.id, expect.action and expect.band are required")
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

// Replay re-runs the golden waves under bundle b's rules and reports, wave by
// wave, what changed: decision (the action), band, verdict. A wave whose
// decision fails its contract (ReasonerDecision.Validate) fails too.
func Replay(ctx context.Context, b Bundle, waves []GoldenWave) (Report, error) {
	set, err := rules.Parse([]byte(b.Rules))
	if err != nil {
		return Report{}, fmt.Errorf("motor %s: %w", b.Version, err)
	}
	r := rules.New(set)
	rep := Report{Motor: b.Version, Failing: []string{}}
	for _, w := range waves {
		c := Change{Name: w.Name, Want: w.Expect}
		if c.Want.Verdict == "" {
			c.Want.Verdict = verdictOf(ora.ConfidenceBand(w.Expect.Band))
		}
		d, err := r.Reason(ctx, ora.ReasonerInput{Signal: w.Signal, Packet: w.Packet})
		if err != nil {
			c.Error, c.Changed = err.Error(), []string{"error"}
		} else {
			band := d.Band()
			c.Got = Expect{Action: d.ActionType, Band: string(band), Verdict: verdictOf(band)}
			if c.Got.Action != c.Want.Action {
				c.Changed = append(c.Changed, "decision")
			}
			if c.Got.Band != c.Want.Band {
				c.Changed = append(c.Changed, "band")
			}
			if c.Got.Verdict != c.Want.Verdict {
				c.Changed = append(c.Changed, "verdict")
			}
		}
		if len(c.Changed) > 0 {
			rep.Failing = append(rep.Failing, w.Name)
		}
		rep.Waves = append(rep.Waves, c)
	}
	return rep, nil
}

// GoldenGate is the promotion gate over a golden set: the contract checks of
// the bundle, then the replay; the failing waves are named.
func GoldenGate(waves []GoldenWave) GateFunc {
	return func(ctx context.Context, b Bundle) ([]string, error) {
		if _, _, err := b.Check(); err != nil {
			return []string{"contract: " + ora.ErrorMessage(err)}, nil
		}
		rep, err := Replay(ctx, b, waves)
		if err != nil {
			return nil, err
		}
		return rep.Failing, nil
	}
}
