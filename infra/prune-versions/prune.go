// Command prune-versions deletes the Lambda versions and Express child state
// machine versions of an ora stack that no running wave may still call
// (`make prune-versions`). Every deploy that changes a function or a child
// publishes a new version and retains the old ones: a wave that waits for a
// human resumes on the code it began with. A version is kept when it is one
// of the newest -keep of its function or child (the current and the previous
// deploy's, by default), or when the definition of a running execution of
// the wave names it, directly or through a child version it starts. Without
// -apply it only prints what it would delete.
package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// versionARN matches a qualified Lambda function or state machine version
// ARN in a definition: arn:<partition>:lambda:<region>:<account>:function:<name>:<n>
// or arn:<partition>:states:<region>:<account>:stateMachine:<name>:<n>.
var versionARN = regexp.MustCompile(`arn:[a-z-]+:(lambda|states):[a-z0-9-]+:[0-9]+:(function|stateMachine):[A-Za-z0-9_.-]+:[0-9]+`)

// Refs returns the version ARNs a definition names.
func Refs(definition string) []string {
	return versionARN.FindAllString(definition, -1)
}

// unqualified splits a version ARN into the function's or state machine's
// ARN and the version number.
func unqualified(arn string) (string, int, bool) {
	i := strings.LastIndexByte(arn, ':')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(arn[i+1:])
	return arn[:i], n, err == nil
}

// Plan returns, for each function or state machine (by unqualified ARN), the
// version numbers to delete: all of versions except the newest keep and the
// ones in use.
func Plan(versions map[string][]int, inUse []string, keep int) map[string][]int {
	used := map[string]bool{}
	for _, arn := range inUse {
		used[arn] = true
	}
	out := map[string][]int{}
	for base, ns := range versions {
		sorted := append([]int(nil), ns...)
		sort.Sort(sort.Reverse(sort.IntSlice(sorted)))
		for i, n := range sorted {
			if i < keep || used[base+":"+strconv.Itoa(n)] {
				continue
			}
			out[base] = append(out[base], n)
		}
	}
	return out
}

// Cloud is what pruning asks of Step Functions and Lambda.
type Cloud interface {
	// Definition returns the definition of a state machine or of one of
	// its versions.
	Definition(ctx context.Context, arn string) (string, error)
	// RunningDefinitions returns the definitions the running executions of
	// a state machine run.
	RunningDefinitions(ctx context.Context, stateMachineARN string) ([]string, error)
	// Versions returns the published version numbers of a function or a
	// state machine (by unqualified ARN).
	Versions(ctx context.Context, arn string) ([]int, error)
	// Delete deletes one version.
	Delete(ctx context.Context, arn string, version int) error
}

// Prune plans (and with apply, makes) the deletions for the wave state
// machine wave, writing one line per version to out. It returns how many
// versions it deleted or would delete.
func Prune(ctx context.Context, c Cloud, wave string, keep int, apply bool, out io.Writer) (int, error) {
	current, err := c.Definition(ctx, wave)
	if err != nil {
		return 0, fmt.Errorf("prune: the wave's definition: %w", err)
	}
	running, err := c.RunningDefinitions(ctx, wave)
	if err != nil {
		return 0, fmt.Errorf("prune: running waves: %w", err)
	}
	// What the current definition names are the functions and children to
	// prune; what it and every running wave name, through the child
	// versions they start as well, is in use.
	var inUse []string
	seenChild := map[string]bool{}
	var collect func(def string) error
	collect = func(def string) error {
		for _, ref := range Refs(def) {
			inUse = append(inUse, ref)
			if strings.Contains(ref, ":stateMachine:") && !seenChild[ref] {
				seenChild[ref] = true
				child, err := c.Definition(ctx, ref)
				if err != nil {
					return fmt.Errorf("prune: %s: %w", ref, err)
				}
				if err := collect(child); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, def := range append([]string{current}, running...) {
		if err := collect(def); err != nil {
			return 0, err
		}
	}
	versions := map[string][]int{}
	for _, ref := range inUse {
		base, _, ok := unqualified(ref)
		if !ok || versions[base] != nil {
			continue
		}
		ns, err := c.Versions(ctx, base)
		if err != nil {
			return 0, fmt.Errorf("prune: versions of %s: %w", base, err)
		}
		versions[base] = append([]int{}, ns...)
	}
	plan := Plan(versions, inUse, keep)
	bases := make([]string, 0, len(plan))
	for b := range plan {
		bases = append(bases, b)
	}
	sort.Strings(bases)
	n := 0
	for _, b := range bases {
		for _, v := range plan[b] {
			verb := "would delete"
			if apply {
				if err := c.Delete(ctx, b, v); err != nil {
					return n, fmt.Errorf("prune: delete %s:%d: %w", b, v, err)
				}
				verb = "deleted"
			}
			fmt.Fprintf(out, "%s %s:%d\n", verb, b, v)
			n++
		}
	}
	return n, nil
}
