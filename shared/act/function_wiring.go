package act

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ora-runtime/ora/shared/ora"
)

// EnvFunctions is the environment variable that carries the configured
// functions to the act Lambda: a JSON object of name -> FunctionConfig, or
// name -> Lambda ARN.
const EnvFunctions = "ORA_FUNCTIONS"

var (
	functionName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	lambdaARN    = regexp.MustCompile(`^arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9$_-]{1,128})?$`)
)

// ValidateFunctions checks the `functions:` map: names of letters, digits,
// '.', '_' and '-', exactly one target each, a timeout within
// MaxActionTimeout. Errors: EINVALID naming the function.
func ValidateFunctions(funcs map[string]FunctionConfig) error {
	for name, c := range funcs {
		field := "functions." + name
		if !functionName.MatchString(name) {
			return ora.Invalid(field, "a name is 1-64 letters, digits, '.', '_' or '-'")
		}
		n := 0
		for _, set := range []bool{c.ARN != "", len(c.Command) > 0, c.URL != ""} {
			if set {
				n++
			}
		}
		if n != 1 {
			return ora.Invalid(field, "give exactly one of arn (AWS), command or url (ora dev)")
		}
		if c.ARN != "" && !lambdaARN.MatchString(c.ARN) {
			return ora.Invalid(field+".arn", "%q is not a Lambda function ARN (arn:PARTITION:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER])", c.ARN)
		}
		if len(c.Command) > 0 && strings.TrimSpace(c.Command[0]) == "" {
			return ora.Invalid(field+".command[0]", "the program is empty")
		}
		if c.TimeoutSeconds < 0 || c.TimeoutSeconds > int(MaxActionTimeout.Seconds()) {
			return ora.Invalid(field+".timeout_seconds", "%d is outside 1..%d", c.TimeoutSeconds, int(MaxActionTimeout.Seconds()))
		}
		if c.PayloadSchema != nil {
			if _, err := compilePayloadSchema(c.PayloadSchema); err != nil {
				return ora.Invalid(field+".payload_schema", "%v", err)
			}
		}
	}
	return nil
}

// LocalFunctions builds ora dev's targets: a command runs in
// dataDir/functions/NAME (a relative program path is taken from the current
// directory), a URL receives the event signed with signingSecret. A function
// with only an ARN is refused: it runs on AWS. Errors: EINVALID.
func LocalFunctions(funcs map[string]FunctionConfig, dataDir, signingSecret string, client *http.Client) (map[string]Function, error) {
	if err := ValidateFunctions(funcs); err != nil {
		return nil, err
	}
	out := make(map[string]Function, len(funcs))
	for name, c := range funcs {
		switch {
		case len(c.Command) > 0:
			argv := append([]string{}, c.Command...)
			if strings.ContainsRune(argv[0], filepath.Separator) && !filepath.IsAbs(argv[0]) {
				abs, err := filepath.Abs(argv[0])
				if err != nil {
					return nil, ora.Invalid("functions."+name+".command[0]", "%v", err)
				}
				argv[0] = abs
			}
			out[name] = Function{Config: c, Target: Command{Argv: argv, Env: c.Env, Dir: filepath.Join(dataDir, "functions", name)}}
		case c.URL != "":
			out[name] = Function{Config: c, Target: NewURLFunction(c.URL, signingSecret, client)}
		default:
			return nil, ora.Invalid("functions."+name, "an arn runs on AWS; ora dev runs a command or a url")
		}
	}
	return out, nil
}

// LambdaFunctions builds the act Lambda's targets: an ARN is invoked
// through client, a URL receives the event signed with signingSecret. A
// command is refused: Lambda runs no local programs. Errors: EINVALID.
func LambdaFunctions(funcs map[string]FunctionConfig, client LambdaAPI, signingSecret string) (map[string]Function, error) {
	if err := ValidateFunctions(funcs); err != nil {
		return nil, err
	}
	out := make(map[string]Function, len(funcs))
	for name, c := range funcs {
		switch {
		case c.ARN != "":
			out[name] = Function{Config: c, Target: LambdaFunction{Client: client, ARN: c.ARN}}
		case c.URL != "":
			out[name] = Function{Config: c, Target: NewURLFunction(c.URL, signingSecret, nil)}
		default:
			return nil, ora.Invalid("functions."+name, "a command runs in ora dev; on AWS give the function's arn")
		}
	}
	return out, nil
}

// FunctionsFromEnv reads EnvFunctions (absent: none). Errors: EINVALID.
func FunctionsFromEnv(getenv func(string) string) (map[string]FunctionConfig, error) {
	raw := getenv(EnvFunctions)
	if raw == "" {
		return map[string]FunctionConfig{}, nil
	}
	var funcs map[string]FunctionConfig
	if err := json.Unmarshal([]byte(raw), &funcs); err != nil {
		return nil, ora.Invalid(EnvFunctions, "not a JSON object of functions: %v", err)
	}
	return funcs, nil
}

// RegisterFunctions registers function.invoke in r over the targets the
// home's build makes of funcs (LocalFunctions, LambdaFunctions); bodies keeps
// long outputs. Errors: build's, NewFunctionInvoke's.
func RegisterFunctions(r *Registry, funcs map[string]FunctionConfig, build func(map[string]FunctionConfig) (map[string]Function, error), bodies ora.BodyStore) error {
	targets, err := build(funcs)
	if err != nil {
		return err
	}
	invoke, err := NewFunctionInvoke(targets, bodies)
	if err != nil {
		return err
	}
	r.Register(TypeFunctionInvoke, invoke)
	return nil
}
