package embedded

import (
	"os"
	"runtime/debug"
)

// GCPercent is the garbage collector's target (GOGC) ora dev runs with when
// the GOGC environment variable is not set. A wave allocates a few MB that
// live only for its stages (facts, packets, JSON), so at Go's default of 100
// the collector ran about twice as often as the live heap needs: at 200 the
// CPU per wave fell by about a sixth (BenchmarkWaves) for a heap that may
// grow to three times what is live, rather than two.
const GCPercent = 200

// TuneGC sets the garbage collector's target to GCPercent unless GOGC is set
// (then Go's own reading of it stands). ora dev calls it once at start.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercent)
	}
}
