package main

import (
	"bytes"
	"context"
	"flag"
	"regexp"
	"strings"
	"testing"
)

// Every subcommand's --help reads alike: "usage: ora NAME", a description, a
// "flags:" section listing every flag it defines as "  --name", and an "exit
// status:" line; it exits 0 and prints nothing on stdout.
func TestEverySubcommandHelp(t *testing.T) {
	for name := range commands {
		t.Run(name, func(t *testing.T) {
			args := []string{name, "--help"}
			if name == "statemachine" {
				args = []string{name, "run", "--help"}
			}
			checkHelp(t, name, args)
		})
	}
	// Subcommands with flags of their own read alike too.
	t.Run("motor canary", func(t *testing.T) { checkHelp(t, "motor canary", []string{"motor", "canary", "--help"}) })
}

var listedFlag = regexp.MustCompile(`--([a-z][a-z-]*)`)

// checkHelp runs args (ending in --help) and checks the help of "ora name".
func checkHelp(t *testing.T, name string, args []string) {
	t.Helper()
	type made struct {
		fs    *flag.FlagSet
		usage string
	}
	var sets []made
	flagSetCreated = func(fs *flag.FlagSet, usage string) { sets = append(sets, made{fs, usage}) }
	t.Cleanup(func() { flagSetCreated = nil })
	var stdout, stderr bytes.Buffer
	if code := dispatch(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, want 0; stderr %s", code, stderr.String())
	}
	help := stderr.String()
	if stdout.Len() != 0 {
		t.Errorf("stdout = %q, want nothing", stdout.String())
	}
	for _, want := range []string{"usage: ora " + name, "\n\nflags:\n", "\nexit status: "} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
	if len(sets) != 1 {
		t.Fatalf("%d flag sets made, want 1", len(sets))
	}
	// A flag line starts "  --name ARG" (or "  --a, --b, --c") and its
	// description follows after two or more spaces.
	documented := map[string]bool{}
	for _, line := range strings.Split(help, "\n") {
		if !strings.HasPrefix(line, "  --") {
			continue
		}
		spec, _, _ := strings.Cut(strings.TrimPrefix(line, "  "), "  ")
		for _, m := range listedFlag.FindAllStringSubmatch(spec, -1) {
			documented[m[1]] = true
		}
	}
	sets[0].fs.VisitAll(func(f *flag.Flag) {
		if !documented[f.Name] {
			t.Errorf("flag --%s is not listed under flags:", f.Name)
		}
		delete(documented, f.Name)
	})
	for f := range documented {
		t.Errorf("help lists --%s, which the command does not define", f)
	}
}
