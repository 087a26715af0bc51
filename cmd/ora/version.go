package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// commit is the source revision the binary was built from: the Makefile sets
// it with -ldflags "-X main.commit=..."; else the build's VCS stamp, if any.
var commit string

// version returns "ora <module version> (commit <rev>, <go version>)".
func version() string {
	mod, rev := "(devel)", commit
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			mod = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && rev == "" {
				rev = s.Value
			}
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return fmt.Sprintf("ora %s (commit %s, %s)", mod, rev, runtime.Version())
}

func printVersion(w io.Writer) int {
	fmt.Fprintln(w, version())
	return 0
}
