package motor_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/motor"
	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// The shipped golden set holds failure incidents of every taxonomy class,
// each classified as expected; an incident whose expected class is not what
// the operator answers fails the gate by name.
func TestGoldenIncidentsGate(t *testing.T) {
	golden, err := motor.Golden()
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]int{}
	var incidents []motor.GoldenWave
	for _, w := range golden {
		if w.Incident != nil {
			incidents = append(incidents, w)
			classes[w.Expect.Taxonomy]++
		}
	}
	if len(incidents) < 10 {
		t.Fatalf("%d golden incidents, want at least 10", len(incidents))
	}
	for _, c := range []string{operate.AppSpec, operate.AppBuild, operate.MotorRules, operate.MotorPerf, operate.MixedDrift} {
		if classes[c] == 0 {
			t.Errorf("no golden incident of class %s (have %v)", c, classes)
		}
	}
	if rep, err := motor.Replay(context.Background(), base(), golden); err != nil || len(rep.Failing) != 0 {
		t.Fatalf("the shipped set fails under the shipped motor: %v, %v", rep.Failing, err)
	}
	wrong := append([]motor.GoldenWave(nil), golden...)
	for i, w := range wrong {
		if w.Name == "reason-timeout" {
			w.Expect.Taxonomy = operate.MotorRules
			wrong[i] = w
		}
	}
	rep, err := motor.Replay(context.Background(), base(), wrong)
	if err != nil || strings.Join(rep.Failing, ",") != "reason-timeout" {
		t.Fatalf("failing %v, %v; want [reason-timeout]", rep.Failing, err)
	}
	for _, c := range rep.Waves {
		if c.Name == "reason-timeout" && (strings.Join(c.Changed, ",") != "classification" || c.Got.Taxonomy != operate.MotorPerf) {
			t.Errorf("reason-timeout: %+v, want the classification changed (got MOTOR-PERF)", c)
		}
	}
}

// A deployment's own golden set loads from a folder or an object store
// (S3 on AWS, the local object folder here): waves at the top, incidents in
// incidents/; anything malformed is refused naming the file.
func TestLoadGoldenSets(t *testing.T) {
	wave := `{"signal":{"id":"s-1","source":{"type":"webhook","name":"demo","provider":"hmac"},"payload":{"confidence":"high"}},"expect":{"action":"notify","band":"high"}}`
	incident := `{"incident":{"error":"ActionFailed","stage":"Act"},"expect":{"classification":"app","taxonomy":"APP-BUILD"}}`
	tests := []struct {
		name  string
		files map[string]string
		want  int    // entries loaded
		bad   string // the file named in the error
	}{
		{"a wave and an incident", map[string]string{"w1.json": wave, "incidents/i1.json": incident, "notes.txt": "x"}, 2, ""},
		{"an incident among the waves", map[string]string{"w1.json": incident}, 0, "w1.json"},
		{"a wave among the incidents", map[string]string{"incidents/i1.json": wave}, 0, "incidents/i1.json"},
		{"an incident without its class", map[string]string{"incidents/i1.json": `{"incident":{"error":"X","stage":"Act"},"expect":{}}`}, 0, "incidents/i1.json"},
		{"an unknown field", map[string]string{"incidents/i1.json": `{"incident":{"error":"X","stage":"Act","severity":1},"expect":{"classification":"app","taxonomy":"APP-BUILD"}}`}, 0, "incidents/i1.json"},
		{"nothing", map[string]string{"README.md": "x"}, 0, "golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range tt.files {
				p := filepath.Join(dir, "gate", name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			fromDir, errDir := motor.LoadGolden(filepath.Join(dir, "gate"))
			fromStore, errStore := motor.LoadGoldenFrom(context.Background(), orient.Folder{Dir: dir}, "gate/")
			for _, got := range []struct {
				how string
				ws  []motor.GoldenWave
				err error
			}{{"folder", fromDir, errDir}, {"object store", fromStore, errStore}} {
				if tt.bad != "" {
					if ora.ErrorCode(got.err) != ora.EINVALID || !strings.Contains(got.err.Error(), tt.bad) {
						t.Errorf("%s: %v, want EINVALID naming %s", got.how, got.err, tt.bad)
					}
					continue
				}
				if got.err != nil || len(got.ws) != tt.want {
					t.Errorf("%s: %d entries, %v; want %d", got.how, len(got.ws), got.err, tt.want)
				}
			}
		})
	}
}

// The gate classifies golden incidents under the candidate's learned
// patterns, as the operator will once it is current: a pattern that says
// what a golden incident expects makes it pass, and a pattern that breaks a
// golden incident's expected class fails the gate naming the incident.
func TestGateIncidentsUnderLearnedPatterns(t *testing.T) {
	golden, err := motor.Golden()
	if err != nil {
		t.Fatal(err)
	}
	// What a confirmed app patch taught: ValidationFailed at Validate is an
	// app spec problem.
	appFix := operate.Pattern{ID: operate.PatternID(operate.AppSpec, "Validate", "ValidationFailed"), Classification: "app", Taxonomy: operate.AppSpec,
		Stage: "Validate", Error: "ValidationFailed", Fix: "app-patch:mapping@3f2a", Incident: "inc-1", Wave: "w-1", Confirmed: 2}
	wrongFix := appFix
	wrongFix.Classification, wrongFix.Taxonomy, wrongFix.Fix = "motor", operate.MotorRules, "motor@1.0.1"
	wrongFix.ID = operate.PatternID(wrongFix.Taxonomy, wrongFix.Stage, wrongFix.Error)
	// The deployment's golden set once it expects the app class.
	expectsApp := append([]motor.GoldenWave(nil), golden...)
	for i, w := range expectsApp {
		if w.Name == "validator-disagrees" {
			w.Expect = motor.Expect{Classification: "app", Taxonomy: operate.AppSpec}
			expectsApp[i] = w
		}
	}
	tests := []struct {
		name    string
		learned []operate.Pattern
		golden  []motor.GoldenWave
		want    string // the failing cases
	}{
		{"without the pattern the new expectation fails", nil, expectsApp, "validator-disagrees"},
		{"the candidate's pattern classifies its incident", []operate.Pattern{appFix}, expectsApp, ""},
		{"the shipped set under the shipped classifier", nil, golden, ""},
		{"a pattern that breaks a golden incident", []operate.Pattern{wrongFix}, golden, "validator-disagrees"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cand := bundle("1.0.1")
			cand.Learned = tt.learned
			failing, err := motor.GoldenGate(tt.golden)(context.Background(), cand)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(failing, ","); got != tt.want {
				t.Errorf("gate failing %q, want %q", got, tt.want)
			}
		})
	}
}
