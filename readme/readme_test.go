package readme

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const root = ".."

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The docs' counts match what they count.
func TestReadmeCounts(t *testing.T) {
	engine := readFile(t, "docs/engine.md")
	development := readFile(t, "docs/development.md")
	cases, err := filepath.Glob(filepath.Join(root, "shared/stepfn/testdata/conformance/*"))
	if err != nil {
		t.Fatal(err)
	}
	dirs := 0
	for _, c := range cases {
		if fi, err := os.Stat(c); err == nil && fi.IsDir() {
			dirs++
		}
	}
	divergences := len(regexp.MustCompile("(?m)^\\| `\\d{3}-[^`]+` \\|").FindAllString(readFile(t, "shared/stepfn/DIVERGENCES.md"), -1))
	tests := []struct {
		name  string
		doc   string
		claim *regexp.Regexp
		want  int
	}{
		{"divergences listed in DIVERGENCES.md", engine, regexp.MustCompile(`\((\d+) cases: `), divergences},
		{"conformance cases", engine, regexp.MustCompile(`holds (\d+) small definitions`), dirs},
		{"conformance cases in the tests section", development, regexp.MustCompile(`the\s+engine's (\d+) conformance cases`), dirs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.claim.FindStringSubmatch(tt.doc)
			if m == nil {
				t.Fatalf("the docs have no claim matching %s", tt.claim)
			}
			if got, _ := strconv.Atoi(m[1]); got != tt.want || tt.want == 0 {
				t.Errorf("the docs say %d, the repository has %d", got, tt.want)
			}
		})
	}
}

// Every `make TARGET` the README or a docs page mentions is a target `make help` lists.
func TestReadmeMakeTargetsExist(t *testing.T) {
	make, err := exec.LookPath("make")
	if err != nil {
		t.Fatalf("make not found: %v", err)
	}
	cmd := exec.Command(make, "--no-print-directory", "help")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make help: %v", err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			listed[f[0]] = true
		}
	}
	// Commands are in code: inline `...` spans and fenced blocks.
	code := regexp.MustCompile("(?s)```.*?```|`[^`\n]+`")
	command := regexp.MustCompile(`(?m)(?:^|[\s;&|(])make ([a-z][a-z0-9-]*)`)
	mentioned := map[string]bool{}
	for _, doc := range userDocs(t) {
		for _, span := range code.FindAllString(readFile(t, doc), -1) {
			for _, m := range command.FindAllStringSubmatch(strings.Trim(span, "`"), -1) {
				mentioned[m[1]] = true
			}
		}
	}
	if len(mentioned) < 5 {
		t.Fatalf("found only %d make targets in the READMEs: %v", len(mentioned), mentioned)
	}
	for target := range mentioned {
		if !listed[target] {
			t.Errorf("README mentions make %s, which make help does not list", target)
		}
	}
}

// The wave diagram's Catch line names exactly the states whose Catch goes to
// "Operate on failure" in the deployed definition.
func TestReadmeDiagramCatchesMatchASL(t *testing.T) {
	var def struct {
		States map[string]struct {
			Type  string
			Next  string
			Catch []struct {
				ErrorEquals []string
				Next        string
			}
		}
	}
	if err := json.Unmarshal([]byte(readFile(t, "statemachines/ora.asl.json")), &def); err != nil {
		t.Fatal(err)
	}
	// The diagram names a state by its first word: "Escalate to a human" is
	// "Escalate", "Record outcome" and "Record rejection" are "Record".
	seen := map[string]bool{}
	var asl []string
	for name, st := range def.States {
		for _, c := range st.Catch {
			next := c.Next // through Pass states, such as one recording "no decision"
			for i := 0; i < 10 && def.States[next].Type == "Pass"; i++ {
				next = def.States[next].Next
			}
			if short := strings.Fields(name)[0]; next == "Operate on failure" && !seen[short] {
				seen[short] = true
				asl = append(asl, short)
			}
		}
	}
	m := regexp.MustCompile(`any failure of ([A-Za-z, ]+?) ─Catch─> Operate on failure`).FindStringSubmatch(readFile(t, "README.md"))
	if m == nil {
		t.Fatal("README.md's diagram has no \"any failure of ... ─Catch─> Operate on failure\" line")
	}
	var diagram []string
	for _, s := range regexp.MustCompile(`,\s*|\s+or\s+`).Split(m[1], -1) {
		if s = strings.TrimSpace(s); s != "" {
			diagram = append(diagram, s)
		}
	}
	sort.Strings(asl)
	sort.Strings(diagram)
	if strings.Join(asl, ",") != strings.Join(diagram, ",") {
		want := strings.Join(asl, ", ")
		if i := strings.LastIndex(want, ", "); i >= 0 {
			want = want[:i] + " or " + want[i+2:]
		}
		t.Errorf("the diagram says failures of %v reach Operate; the ASL catches %v: the line should read \"any failure of %s ─Catch─> Operate on failure\" (and the text under \"The wave\" say the same)", diagram, asl, want)
	}
}

// userDocs returns the pages written for users: README.md, localstack's and
// every docs/ page.
func userDocs(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs := []string{"README.md", "localstack/README.md"}
	for _, p := range pages {
		docs = append(docs, filepath.Join("docs", filepath.Base(p)))
	}
	return docs
}

// The README is a front door: short, and every docs page it links exists.
func TestReadmeIsAFrontDoor(t *testing.T) {
	readme := readFile(t, "README.md")
	if n := strings.Count(readme, "\n"); n >= 250 {
		t.Errorf("README.md has %d lines; keep it under 250 and move reference material to docs/", n)
	}
	links := regexp.MustCompile(`\]\((docs/[^)#]+)`).FindAllStringSubmatch(readme, -1)
	if len(links) < 10 {
		t.Fatalf("README.md links %d docs pages, want the index of them", len(links))
	}
	for _, l := range links {
		if _, err := os.Stat(filepath.Join(root, l[1])); err != nil {
			t.Errorf("README.md links %s: %v", l[1], err)
		}
	}
}

// The docs are written for users: no specification numbers, section signs or
// issue numbers, and every relative link resolves.
func TestDocsSpeakToUsers(t *testing.T) {
	jargon := regexp.MustCompile(`(?i)\bseeds? \d{3}\b|§|\bissue \d+\b|\bissue's\b`)
	link := regexp.MustCompile(`\]\(([a-z0-9_./-]+\.(?:md|png))(?:#[^)]*)?\)`)
	for _, doc := range userDocs(t) {
		text := readFile(t, doc)
		for i, line := range strings.Split(text, "\n") {
			if m := jargon.FindString(line); m != "" {
				t.Errorf("%s:%d says %q: write for users, not for the specification's authors", doc, i+1, m)
			}
		}
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := filepath.Join(root, filepath.Dir(doc), m[1])
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links %s, which does not exist", doc, m[1])
			}
		}
	}
}
