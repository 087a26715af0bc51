package main

import (
	"strings"
	"testing"
)

// The stack's app version: the declared version with the digest of what the
// stack fixes; a schedule changes it, a bad declared version is refused.
func TestAppVersionOf(t *testing.T) {
	c := DefaultConfig()
	v, err := c.AppVersionOf()
	if err != nil || !strings.HasPrefix(v, "0.0.0+") || len(v) != len("0.0.0+")+12 {
		t.Fatalf("default: %q, %v", v, err)
	}
	declared := c
	declared.AppVersion = "2.3.4"
	if d, _ := declared.AppVersionOf(); d != "2.3.4+"+v[6:] {
		t.Errorf("declared 2.3.4: %q, want the same digest as %q", d, v)
	}
	other := c
	other.Schedules = append([]Schedule{}, c.Schedules...)
	other.Schedules[0].Expression = "rate(2 hours)"
	if o, _ := other.AppVersionOf(); o == v {
		t.Errorf("another schedule kept the app version %q", o)
	}
	bad := c
	bad.AppVersion = "2.3"
	if _, err := bad.AppVersionOf(); err == nil {
		t.Error("app version 2.3 accepted")
	}
}
