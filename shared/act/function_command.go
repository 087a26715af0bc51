package act

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// DefaultCommandEnv names the variables of ora's environment every command
// receives; a function's `env` adds more. Nothing else of ora's environment
// (tokens, AWS credentials) reaches the command.
var DefaultCommandEnv = []string{"PATH", "HOME", "LANG", "TZ", "TMPDIR"}

// The variables a command receives from its invocation event.
const (
	EnvFunctionDecisionID     = "ORA_DECISION_ID"
	EnvFunctionWaveID         = "ORA_WAVE_ID"
	EnvFunctionActionIndex    = "ORA_ACTION_INDEX"
	EnvFunctionIdempotencyKey = "ORA_IDEMPOTENCY_KEY"
	EnvFunctionName           = "ORA_FUNCTION"
)

// maxStderr is the most of a command's standard error ora keeps.
const maxStderr = 64 << 10

// Command is a FunctionTarget that runs a local program without a shell:
// Argv's items are expanded from the event ({{ payload.x }}, {{ decision_id
// }}), the event goes to its standard input as JSON, it runs in Dir with
// only the allowed variables, and its standard output (at most
// MaxFunctionOutput bytes) is the function's output. Exit status 0 is
// success; another status is a *FunctionError quoting the end of its
// standard error; a run cut by the timeout is an unknown outcome.
type Command struct {
	Argv []string
	// Env names the variables of ora's environment passed on, beside
	// DefaultCommandEnv.
	Env []string
	// Dir is the working directory, made when missing.
	Dir string
	// LookupEnv reads ora's environment. Default os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

var _ FunctionTarget = Command{}

// Describe names the program.
func (c Command) Describe() string {
	if len(c.Argv) == 0 {
		return "command"
	}
	return "command " + c.Argv[0]
}

// Invoke runs the program once. Errors: *FunctionError (non-zero exit),
// *UnknownOutcomeError (the timeout cut it), EINVALID (a template names
// nothing in the event), a failure to start it.
func (c Command) Invoke(ctx context.Context, ev FunctionEvent, body []byte) (FunctionResult, error) {
	if len(c.Argv) == 0 {
		return FunctionResult{}, ora.Invalid("command", "empty")
	}
	args, err := ExpandArgs(c.Argv, body)
	if err != nil {
		return FunctionResult{}, err
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return FunctionResult{}, fmt.Errorf("make the working directory: %w", err)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = c.environ(ev)
	cmd.Stdin = bytes.NewReader(body)
	stdout, stderr := &limitedBuffer{max: MaxFunctionOutput}, &limitedBuffer{max: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// A child that keeps the output open past the kill does not hold the
	// action beyond this.
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if err == nil {
		return FunctionResult{Output: stdout.buf.Bytes(), Truncated: stdout.truncated}, nil
	}
	if cmd.Process == nil {
		return FunctionResult{}, fmt.Errorf("start %s: %w", args[0], err) // never ran
	}
	if ctx.Err() != nil {
		return FunctionResult{}, &UnknownOutcomeError{Err: fmt.Errorf("%s was stopped after the timeout, and may have done part of its work: %w", args[0], ctx.Err())}
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		msg := exit.Error()
		if t := tail(stderr.buf.Bytes(), maxFunctionError); t != "" {
			msg += ": " + t
		}
		return FunctionResult{}, &FunctionError{Function: ev.Function, Message: msg}
	}
	return FunctionResult{}, fmt.Errorf("run %s: %w", args[0], err)
}

// environ is the command's environment: the allowed variables that are set,
// and the event's ids.
func (c Command) environ(ev FunctionEvent) []string {
	lookup := c.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var env []string
	seen := map[string]bool{}
	for _, name := range append(append([]string{}, DefaultCommandEnv...), c.Env...) {
		if seen[name] {
			continue
		}
		seen[name] = true
		if v, ok := lookup(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return append(env,
		EnvFunctionDecisionID+"="+ev.DecisionID,
		EnvFunctionWaveID+"="+ev.WaveID,
		EnvFunctionActionIndex+"="+strconv.Itoa(ev.ActionIndex),
		EnvFunctionIdempotencyKey+"="+ev.IdempotencyKey,
		EnvFunctionName+"="+ev.Function,
	)
}

// argTemplate is a {{ path }} in a command's argument: a dotted path into
// the invocation event.
var argTemplate = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\s*\}\}`)

// ExpandArgs replaces every {{ path }} in argv with the event's value at the
// dotted path (decision_id, wave_id, action_index, idempotency_key,
// function, payload.FIELD...): a string as it is, null as nothing, any other
// value as its JSON. Each item stays one argument: nothing is split or passed
// to a shell. Errors: EINVALID naming a path the event does not hold.
func ExpandArgs(argv []string, event []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(event))
	dec.UseNumber()
	var ev map[string]any
	if err := dec.Decode(&ev); err != nil {
		return nil, ora.Invalid("command", "the event does not decode: %v", err)
	}
	out := make([]string, len(argv))
	var missing error
	for i, a := range argv {
		out[i] = argTemplate.ReplaceAllStringFunc(a, func(m string) string {
			path := argTemplate.FindStringSubmatch(m)[1]
			v, ok := lookupPath(ev, path)
			if !ok {
				if missing == nil {
					missing = ora.Invalid(fmt.Sprintf("command[%d]", i), "{{ %s }} names nothing in the event", path)
				}
				return ""
			}
			switch x := v.(type) {
			case string:
				return x
			case nil:
				return ""
			case json.Number:
				return x.String()
			}
			b, _ := json.Marshal(v)
			return string(b)
		})
	}
	if missing != nil {
		return nil, missing
	}
	return out, nil
}

func lookupPath(v any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}
