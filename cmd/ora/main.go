// Command ora is the Observer-Reasoner-Actor runtime's CLI: `ora dev` runs the
// embedded runtime, and the other subcommands talk to it or run its parts alone
// (`ora statemachine run`, `ora reason`, `ora send`, `ora trace`, ...).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// command is one subcommand. run returns the process exit code.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands is filled by each subcommand's file from a package-level var, so a
// subcommand lives wholly in its own file.
var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) bool {
	commands[name] = command{summary: summary, run: run}
	return true
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "ora: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: ora <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-14s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nora COMMAND --help prints a command's flags and exit statuses.")
}

// self is the path this binary was started as; the hints it prints use it, so
// they can be pasted as they are.
var self = os.Args[0]

// hint renders a command line to paste: the binary as it was started, then
// args, each quoted for a POSIX shell when it needs it. Empty args are left out.
func hint(args ...string) string {
	parts := []string{shellQuote(self)}
	for _, a := range args {
		if a != "" {
			parts = append(parts, shellQuote(a))
		}
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell unless it is made only of safe characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,+%") == "" {
		return s
	}
	if strings.HasPrefix(s, "<") && strings.HasSuffix(s, ">") && !strings.ContainsAny(s, " '") {
		return s // a placeholder such as <signal_id>
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// flagSetCreated, when set (by tests), sees every flag set a subcommand makes.
var flagSetCreated func(fs *flag.FlagSet, usage string)

// newFlagSet returns a subcommand's flag set: errors go to stderr, and -h or
// --help prints usage there.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	if flagSetCreated != nil {
		flagSetCreated(fs, usage)
	}
	return fs
}
