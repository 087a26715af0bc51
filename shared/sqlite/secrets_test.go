package sqlite

import (
	"bytes"
	"context"
	"testing"

	"github.com/ora-runtime/ora/shared/ora"
)

// TestAppendRedactsSecrets: what the registry holds never reaches the file.
func TestAppendRedactsSecrets(t *testing.T) {
	secrets := ora.NewSecrets()
	secrets.Add("connection:github", "ghp_canary-in-the-ledger")
	db := openDB(t, func(o *Options) { o.Secrets = secrets })
	ctx := context.Background()
	e, err := ora.NewEntry("sig-1", ora.KindExecutionEvidence, "0", map[string]string{"error": "401 for token ghp_canary-in-the-ledger"})
	if err != nil {
		t.Fatal(err)
	}
	e.Meta = map[string]string{"note": "ghp_canary-in-the-ledger"}
	if _, err := db.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendNew(ctx, []ora.Entry{{SignalID: "sig-1", Kind: ora.KindExecutionEvidence, Qualifier: "1", Body: []byte(`{"h":"ghp_canary-in-the-ledger"}`)}}); err != nil {
		t.Fatal(err)
	}
	got, err := db.Entries(ctx, "sig-1")
	if err != nil || len(got) != 2 {
		t.Fatalf("Entries = %d, %v", len(got), err)
	}
	for _, g := range got {
		if bytes.Contains(g.Body, []byte("ghp_canary")) || g.Meta["note"] == "ghp_canary-in-the-ledger" {
			t.Errorf("entry %s kept the secret: %s %v", g.Qualifier, g.Body, g.Meta)
		}
		if !bytes.Contains(g.Body, []byte(ora.Marker("connection:github"))) {
			t.Errorf("entry %s has no marker: %s", g.Qualifier, g.Body)
		}
		if g.Digest != ora.Digest(g.Body) {
			t.Errorf("entry %s: digest %s is not the stored body's", g.Qualifier, g.Digest)
		}
	}
}
