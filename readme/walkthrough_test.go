package readme

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestReadmeWalkthrough follows README.md on a fresh copy of the repository
// (scripts/readme-walkthrough.sh): every local step must work as written, and
// every Docker/AWS step must stop at its preflight with one line. It needs
// bash, git, curl, make and Go, all of which make test needs anyway.
func TestReadmeWalkthrough(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("-short: the walk-through builds ora, runs it, and runs every make target that needs no Docker or AWS")
	}
	for _, tool := range []string{"bash", "git", "curl", "make", "tar", "setsid"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: the walk-through needs it: %v", tool, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	script, err := filepath.Abs(filepath.Join(root, "scripts", "readme-walkthrough.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README walk-through failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// TestDocsWalkthrough runs the commands of every docs/ page on a fresh copy
// of the repository (scripts/docs-walkthrough.sh): every ```sh block as
// written, except those marked as needing AWS, Docker or a real GitHub token
// (TestDocsMarkedBlocks); and it follows docs/first-agent.md to the end: the
// agent acts on the delivery; and docs/sources.md's recipes, on DynamoDB Local
// (make dynamodb-local) with the AWS CLI, which CI installs (make deps): the
// alarm's commitment opens and closes, the invoice and the ticket row get
// their actions.
func TestDocsWalkthrough(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("-short: the walk-through builds ora, runs it, and runs every docs page's commands")
	}
	for _, tool := range []string{"bash", "git", "tar", "setsid", "awk", "perl", "curl", "openssl", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: the walk-through needs it: %v", tool, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	script, err := filepath.Abs(filepath.Join(root, "scripts", "docs-walkthrough.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the docs walk-through failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
