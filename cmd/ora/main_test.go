package main

import (
	"os"
	"testing"
)

// TestMain makes the hints the commands print name the binary "ora", as a
// user's PATH install would, instead of the test binary's path.
func TestMain(m *testing.M) {
	self = "ora"
	os.Exit(m.Run())
}
