package operate

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
)

// FailedJob is an observation job of a Fetch child that failed: its id and
// its source family (ledger, objects, http, ...).
type FailedJob struct {
	ID     string `json:"id"`
	Family string `json:"family"`
}

// maxNamedJobs bounds how many jobs FailedJobsNote names, so a cause stays
// far below Step Functions' 32 KiB limit on an error's cause.
const maxNamedJobs = 50

// FailedJobsNote is the text a Fetch child's error carries to name its jobs:
// "(failed jobs: ID FAMILY, ID FAMILY)". FailedJobsOf reads it back from a
// failure's cause. At most 50 jobs are named, then "...".
func FailedJobsNote(jobs []FailedJob) string {
	if len(jobs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("(failed jobs: ")
	for i, j := range jobs {
		if i == maxNamedJobs {
			b.WriteString(", ...")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(j.ID + " " + j.Family)
	}
	b.WriteString(")")
	return b.String()
}

var (
	failedJobsNote = regexp.MustCompile(`\(failed jobs: ([^)]*)\)`)
	failedJob      = regexp.MustCompile(`^([a-z0-9][a-z0-9._-]{0,79}) ([a-z0-9][a-z0-9_-]{0,39})$`)
)

// FailedJobsOf returns the failed observation jobs a failure's cause names
// (FailedJobsNote), looking into the JSON a cause nests (a Lambda error's
// errorMessage, a child execution's Cause), each job once, in order of id.
// A cause that names none, such as the Distributed Map's own "The specified
// tolerated failure threshold was exceeded" on AWS and in ora dev, yields
// nil.
func FailedJobsOf(cause string) []FailedJob {
	seen := map[string]FailedJob{}
	var walk func(s string, depth int)
	walk = func(s string, depth int) {
		for _, m := range failedJobsNote.FindAllStringSubmatch(s, -1) {
			for _, part := range strings.Split(m[1], ", ") {
				if jm := failedJob.FindStringSubmatch(part); jm != nil {
					seen[jm[1]] = FailedJob{ID: jm[1], Family: jm[2]}
				}
			}
		}
		if depth == 0 {
			return
		}
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return
		}
		var strs func(v any)
		strs = func(v any) {
			switch x := v.(type) {
			case string:
				walk(x, depth-1)
			case map[string]any:
				for _, y := range x {
					strs(y)
				}
			case []any:
				for _, y := range x {
					strs(y)
				}
			}
		}
		strs(v)
	}
	walk(cause, 3)
	if len(seen) == 0 {
		return nil
	}
	out := make([]FailedJob, 0, len(seen))
	for _, j := range seen {
		out = append(out, j)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}

// families returns the distinct families of jobs, sorted.
func families(jobs []FailedJob) []string {
	set := map[string]bool{}
	for _, j := range jobs {
		set[j.Family] = true
	}
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}
