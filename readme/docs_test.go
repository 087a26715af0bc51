package readme

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// block is one ```sh block of a docs page: Tag is what follows "sh" on its
// fence ("" for a block the walk-through runs).
type block struct {
	Page, Tag, Text string
	Line            int
}

// shBlocks returns every ```sh block of the docs/ pages, as
// scripts/docs-walkthrough.sh reads them: a fence of "```sh" or "```sh TAG"
// to the next line starting with ```.
func shBlocks(t *testing.T) []block {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	open := regexp.MustCompile("^```sh(?: ([a-z]+))?$")
	var out []block
	for _, p := range pages {
		page := filepath.Join("docs", filepath.Base(p))
		var cur *block
		for i, line := range strings.Split(readFile(t, page), "\n") {
			switch m := open.FindStringSubmatch(line); {
			case cur == nil && m != nil:
				cur = &block{Page: page, Tag: m[1], Line: i + 1}
			case cur != nil && strings.HasPrefix(line, "```"):
				out = append(out, *cur)
				cur = nil
			case cur != nil:
				cur.Text += line + "\n"
			}
		}
	}
	return out
}

// commands splits a shell block into its commands' first words: lines
// joined at a trailing backslash, split at && ; and |, comments dropped.
func commands(text string) []string {
	joined := strings.ReplaceAll(text, "\\\n", " ")
	var out []string
	for _, line := range strings.Split(joined, "\n") {
		if i := strings.Index(line, "#"); i >= 0 && (i == 0 || line[i-1] == ' ') {
			line = line[:i]
		}
		for _, part := range regexp.MustCompile(`&&|\|\||;|\|`).Split(line, -1) {
			if f := strings.Fields(part); len(f) > 0 {
				out = append(out, strings.Join(f, " "))
			}
		}
	}
	return out
}

// What a marked block may run, by its tag: the commands a machine without
// an AWS account, Docker or a real GitHub token cannot run, and the set-up
// lines around them.
var marked = map[string]*regexp.Regexp{
	"aws":    regexp.MustCompile(`^(aws |cdk |cdklocal |npx --yes aws-cdk@[0-9.]+ |export AWS_[A-Z_]+=|cd infra$)`),
	"docker": regexp.MustCompile(`^(docker |docker-compose |cd localstack$)`),
	// A real GitHub token: the block sets GITHUB_TOKEN to the user's own and
	// runs ora against github.com with it.
	"github": regexp.MustCompile(`^(export GITHUB_TOKEN=github_pat_|cd examples/github-triage$|(\.\./\.\./bin/)?ora |sed |cat )`),
}

// Every ```sh block of docs/ runs in the walk-through, unless its fence is
// tagged with what it needs that this machine lacks (aws, docker, github);
// a tagged block runs only commands of that kind, so nothing that could run
// here hides behind a tag.
func TestDocsMarkedBlocks(t *testing.T) {
	blocks := shBlocks(t)
	if len(blocks) < 15 {
		t.Fatalf("found %d sh blocks in docs/, want the pages' commands", len(blocks))
	}
	counts := map[string]int{}
	for _, b := range blocks {
		counts[b.Tag]++
		if b.Tag == "" {
			continue
		}
		allowed, ok := marked[b.Tag]
		if !ok {
			t.Errorf("%s:%d: ```sh %s: not a tag the walk-through knows (aws, docker, github)", b.Page, b.Line, b.Tag)
			continue
		}
		for _, c := range commands(b.Text) {
			if !allowed.MatchString(c) {
				t.Errorf("%s:%d: a block marked %q runs %q, which needs no %s: run it (an unmarked ```sh block)", b.Page, b.Line, b.Tag, c, b.Tag)
			}
		}
		if b.Tag == "github" && !strings.Contains(b.Text, "GITHUB_TOKEN=") {
			t.Errorf("%s:%d: a block marked github sets no GITHUB_TOKEN", b.Page, b.Line)
		}
	}
	t.Logf("sh blocks in docs/: %d run by the walk-through, %d marked aws, %d docker, %d github", counts[""], counts["aws"], counts["docker"], counts["github"])
}

func TestCommands(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"continued lines", "aws stepfunctions start-execution \\\n  --name first\n", []string{"aws stepfunctions start-execution --name first"}},
		{"chained", "cd infra && npx --yes aws-cdk@2.1148.1 deploy\n", []string{"cd infra", "npx --yes aws-cdk@2.1148.1 deploy"}},
		{"comments", "# needs a token\nexport GITHUB_TOKEN=github_pat_...   # yours\n", []string{"export GITHUB_TOKEN=github_pat_..."}},
		{"a pipe", "cat x | sed s/a/b/\n", []string{"cat x", "sed s/a/b/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := commands(tt.text); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("commands(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}
