package main

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
)

const (
	act    = "arn:aws:lambda:eu-west-1:123456789012:function:Ora-act"
	reason = "arn:aws:lambda:eu-west-1:123456789012:function:Ora-reason"
	child  = "arn:aws:states:eu-west-1:123456789012:stateMachine:Ora-act"
	wave   = "arn:aws:states:eu-west-1:123456789012:stateMachine:Ora-wave"
)

// cloud is a fake Cloud: definitions by ARN, the running waves'
// definitions, the versions of each function and child, and what was
// deleted.
type cloud struct {
	defs     map[string]string
	running  []string
	versions map[string][]int
	deleted  []string
}

func (c *cloud) Definition(_ context.Context, arn string) (string, error) {
	d, ok := c.defs[arn]
	if !ok {
		return "", fmt.Errorf("no state machine %s", arn)
	}
	return d, nil
}
func (c *cloud) RunningDefinitions(context.Context, string) ([]string, error) { return c.running, nil }
func (c *cloud) Versions(_ context.Context, arn string) ([]int, error)        { return c.versions[arn], nil }
func (c *cloud) Delete(_ context.Context, arn string, v int) error {
	c.deleted = append(c.deleted, fmt.Sprintf("%s:%d", arn, v))
	return nil
}

// A definition of the wave naming reason's version r and the act child's
// version a (which calls act's version r as well).
func waveDef(r, a int) string {
	return fmt.Sprintf(`{"States":{"Reason":{"Resource":"%s:%d"},"Act":{"Parameters":{"StateMachineArn":"%s:%d"}}}}`, reason, r, child, a)
}

func TestPrune(t *testing.T) {
	tests := []struct {
		name    string
		running []string
		keep    int
		want    []string
	}{
		{"no running wave: the newest two of each", nil, 2,
			[]string{act + ":1", act + ":2", child + ":1", child + ":2", reason + ":1", reason + ":2"}},
		{"a wave waiting since the first deploy keeps its versions, and its child's function's", []string{waveDef(1, 1)}, 2,
			[]string{act + ":2", child + ":2", reason + ":2"}},
		{"keep 1: only the current", nil, 1,
			[]string{act + ":1", act + ":2", act + ":3", child + ":1", child + ":2", child + ":3", reason + ":1", reason + ":2", reason + ":3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &cloud{
				defs: map[string]string{wave: waveDef(4, 4)},
				versions: map[string][]int{
					reason: {1, 2, 3, 4}, act: {1, 2, 3, 4}, child: {1, 2, 3, 4},
				},
				running: tt.running,
			}
			for v := 1; v <= 4; v++ {
				c.defs[fmt.Sprintf("%s:%d", child, v)] = fmt.Sprintf(`{"States":{"Act":{"Resource":"%s:%d"}}}`, act, v)
			}
			var out strings.Builder
			n, err := Prune(context.Background(), c, wave, tt.keep, true, &out)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sorted(c.deleted), sorted(tt.want)) || n != len(tt.want) {
				t.Errorf("deleted %v (%d), want %v", c.deleted, n, tt.want)
			}
		})
	}
	// Without -apply nothing is deleted.
	c := &cloud{defs: map[string]string{wave: waveDef(3, 3), child + ":3": `{}`}, versions: map[string][]int{reason: {1, 2, 3}, child: {1, 2, 3}}}
	var out strings.Builder
	if n, err := Prune(context.Background(), c, wave, 2, false, &out); err != nil || n != 2 || len(c.deleted) != 0 || !strings.Contains(out.String(), "would delete "+reason+":1") {
		t.Errorf("dry run: %d %v, deleted %v, printed %q", n, err, c.deleted, out.String())
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
