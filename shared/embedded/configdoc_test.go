package embedded

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// The configuration page's example is a configuration ora dev accepts:
// every key it shows exists and every value passes the checks at load.
func TestConfigurationPageLoads(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("docs/configuration.md has no yaml block")
	}
	p := filepath.Join(t.TempDir(), "ora.yaml")
	if err := os.WriteFile(p, m[1], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(p); err != nil {
		t.Errorf("docs/configuration.md's example does not load: %v", err)
	}
}
