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
	if args[0] == "--version" || args[0] == "-version" || args[0] == "version" {
		return printVersion(stdout)
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
	fmt.Fprintln(w, `
ora COMMAND --help prints a command's flags and exit statuses; ora --version
prints the version and the commit it was built from.

Words: a signal is one event that came in; a wave is everything ora does for
one signal (orient, reason, act, validate, record a verdict); the motor is the
versioned set of what decides and checks (rules, prompts, model profile,
validator settings, orientation profile): every decision records the motor
version it ran under, and a new one is proposed, gated and promoted with
ora motor.`)
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
	setUsage(fs, usage, stderr)
	if flagSetCreated != nil {
		flagSetCreated(fs, usage)
	}
	return fs
}

// flagError keeps the message the flag package writes before it calls Usage
// on a bad flag, so Usage can turn it into one line.
type flagError struct{ msg string }

func (e *flagError) Write(p []byte) (int, error) {
	e.msg += string(p)
	return len(p), nil
}

// setUsage makes fs print its usage for -h and --help, and one line naming
// the bad flag and where the flags are listed for any other parse error
// (instead of the flag package's message followed by the whole usage).
func setUsage(fs *flag.FlagSet, usage string, stderr io.Writer) {
	e := &flagError{}
	fs.SetOutput(e)
	fs.Usage = func() {
		msg := strings.TrimSpace(e.msg)
		e.msg = ""
		if msg == "" {
			fmt.Fprint(stderr, usage)
			return
		}
		if rest, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
			msg = "unknown flag " + rest
		}
		fmt.Fprintf(stderr, "ora %s: %s (ora %s --help lists the flags)\n", fs.Name(), msg, fs.Name())
	}
}
