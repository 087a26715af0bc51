//go:build !linux

package dynamotest

import "os/exec"

// setDeathSignal is a no-op where the OS offers no parent-death signal.
func setDeathSignal(*exec.Cmd) {}
