package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// CDKJSONContext returns the "context" object of the cdk.json at path: the
// ora:* settings and the CDK feature flags. The app passes it to awscdk.App
// itself, so running the app directly (`make synth`, the tests) synthesizes
// the same template as `cdk deploy`, which hands the CLI's copy of the same
// context to the app.
func CDKJSONContext(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var f struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f.Context, nil
}

// sourceDirs are the folders whose Go files (and embedded rules) go into the
// function binaries; go.mod and go.sum pin the rest.
var sourceDirs = []string{"functions", "shared", "rules", "statemachines"}

// CheckBuilds reports, as one line naming the command to run, a function
// under root whose build/<name>/bootstrap is missing or older than the
// newest source file it may be built from, so a deploy never ships binaries
// older than the source. nil when every binary is present and current.
func CheckBuilds(root string, functions []string) error {
	newest, newestFile := time.Time{}, ""
	consider := func(path string, info fs.FileInfo) {
		if info.ModTime().After(newest) {
			newest, newestFile = info.ModTime(), path
		}
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		if info, err := os.Stat(filepath.Join(root, f)); err == nil {
			consider(f, info)
		}
	}
	for _, dir := range sourceDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			name := d.Name()
			if strings.HasSuffix(name, "_test.go") || !(strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".json")) {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			consider(rel, info)
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("ora: reading %s/: %v", dir, err)
		}
	}
	for _, name := range functions {
		bin := filepath.Join("build", name, "bootstrap")
		info, err := os.Stat(filepath.Join(root, bin))
		if err != nil {
			return fmt.Errorf("ora: %s is missing: run `make lambdas` in the repository root, then deploy again", bin)
		}
		if info.ModTime().Before(newest) {
			return fmt.Errorf("ora: %s is older than %s: run `make lambdas` in the repository root, then deploy again", bin, newestFile)
		}
	}
	return nil
}
