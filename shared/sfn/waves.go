package sfn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssfn "github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/ora"
)

// HistoryAPI is the part of the Step Functions API Waves calls; the SDK's
// *sfn.Client satisfies it.
type HistoryAPI interface {
	DescribeExecution(ctx context.Context, in *awssfn.DescribeExecutionInput, opts ...func(*awssfn.Options)) (*awssfn.DescribeExecutionOutput, error)
	GetExecutionHistory(ctx context.Context, in *awssfn.GetExecutionHistoryInput, opts ...func(*awssfn.Options)) (*awssfn.GetExecutionHistoryOutput, error)
}

var _ HistoryAPI = (*awssfn.Client)(nil)

// DefaultMaxEvents bounds the history a wave read returns: five pages of
// Step Functions' largest page, enough for a wave fanning out 128 jobs.
const DefaultMaxEvents = 5000

// WavesOptions tune Waves.
type WavesOptions struct {
	// MaxEvents is the most history events read per wave (default
	// DefaultMaxEvents); the history stops at the bound, oldest first.
	MaxEvents int
}

// Waves reads waves (executions of one state machine, named after their
// signal ids) from Step Functions. It implements httpapi.Waves.
type Waves struct {
	api     HistoryAPI
	machine string // arn:aws:states:R:A:stateMachine:NAME
	o       WavesOptions
}

var _ httpapi.Waves = (*Waves)(nil)

// NewWaves returns Waves reading executions of the state machine with the
// given ARN through api. Errors: EINVALID (not a state machine ARN).
func NewWaves(api HistoryAPI, stateMachineARN string, opts ...func(*WavesOptions)) (*Waves, error) {
	o := WavesOptions{MaxEvents: DefaultMaxEvents}
	for _, f := range opts {
		f(&o)
	}
	if o.MaxEvents <= 0 {
		return nil, ora.Invalid("max_events", "must be positive")
	}
	if _, err := ExecutionARN(stateMachineARN, "probe"); err != nil {
		return nil, err
	}
	return &Waves{api: api, machine: stateMachineARN, o: o}, nil
}

// ExecutionARN returns the ARN of the execution called name of the state
// machine stateMachineARN: arn:aws:states:R:A:stateMachine:NAME becomes
// arn:aws:states:R:A:execution:NAME:name. Errors: EINVALID (not a state
// machine ARN, or a name Step Functions would refuse).
func ExecutionARN(stateMachineARN, name string) (string, error) {
	parts := strings.Split(stateMachineARN, ":")
	if len(parts) != 7 || parts[0] != "arn" || parts[2] != "states" || parts[5] != "stateMachine" || parts[6] == "" {
		return "", ora.Invalid("state_machine_arn", "%q is not arn:PARTITION:states:REGION:ACCOUNT:stateMachine:NAME", stateMachineARN)
	}
	if err := checkName(name); err != nil {
		return "", err
	}
	parts[5] = "execution"
	return strings.Join(append(parts, name), ":"), nil
}

// checkName applies Step Functions' execution naming rules: 1 to 80
// characters, no whitespace, brackets, wildcards, punctuation it reserves, or
// control characters.
func checkName(name string) error {
	if name == "" || utf8.RuneCountInString(name) > 80 {
		return ora.Invalid("wave_id", "must be 1 to 80 characters")
	}
	for _, r := range name {
		if unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune(`<>{}[]?*"#%\^|~`+"`$&,;:/", r) {
			return ora.Invalid("wave_id", "%q contains %q, which an execution name cannot", name, r)
		}
	}
	return nil
}

// Wave returns the status, output or error and the execution history of the
// wave waveID, oldest event first, up to MaxEvents. The history events keep
// Step Functions' JSON field names (type, id, previousEventId, timestamp,
// stateEnteredEventDetails, ...), as the local engine writes them. Errors:
// EINVALID (a malformed id), ENOTFOUND (no such execution), ETRANSIENT
// (throttled or unreachable), EINTERNAL.
func (w *Waves) Wave(ctx context.Context, waveID string) (httpapi.Wave, error) {
	arn, err := ExecutionARN(w.machine, waveID)
	if err != nil {
		return httpapi.Wave{}, err
	}
	out, err := w.api.DescribeExecution(ctx, &awssfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	if err != nil {
		return httpapi.Wave{}, fmt.Errorf("sfn: describe execution %s: %w", waveID, translateRead(err, waveID))
	}
	wave := httpapi.Wave{
		WaveID: waveID,
		Status: string(out.Status),
		Error:  aws.ToString(out.Error),
		Cause:  aws.ToString(out.Cause),
	}
	if s := aws.ToString(out.Output); s != "" && json.Valid([]byte(s)) {
		wave.Output = json.RawMessage(s)
	}
	history, err := w.history(ctx, arn, waveID)
	if err != nil {
		return httpapi.Wave{}, err
	}
	wave.History = history
	return wave, nil
}

// history reads every page of the execution's history, up to MaxEvents.
func (w *Waves) history(ctx context.Context, arn, waveID string) (json.RawMessage, error) {
	events := make([]any, 0, 64)
	var token *string
	for len(events) < w.o.MaxEvents {
		page := int32(min(1000, w.o.MaxEvents-len(events)))
		out, err := w.api.GetExecutionHistory(ctx, &awssfn.GetExecutionHistoryInput{
			ExecutionArn: aws.String(arn),
			MaxResults:   page,
			NextToken:    token,
		})
		if err != nil {
			return nil, fmt.Errorf("sfn: execution history %s: %w", waveID, translateRead(err, waveID))
		}
		for _, e := range out.Events {
			v, err := wireShape(e)
			if err != nil {
				return nil, ora.Errorf(ora.EINTERNAL, "sfn: history event %d of %s: %v", e.Id, waveID, err)
			}
			events = append(events, v)
		}
		token = out.NextToken
		if token == nil || len(out.Events) == 0 {
			break
		}
	}
	if len(events) > w.o.MaxEvents {
		events = events[:w.o.MaxEvents]
	}
	b, err := json.Marshal(events)
	if err != nil {
		return nil, ora.Errorf(ora.EINTERNAL, "sfn: encode history of %s: %v", waveID, err)
	}
	return b, nil
}

// translateRead maps a read's error: a missing execution is ENOTFOUND, the
// rest as translate does.
func translateRead(err error, waveID string) error {
	var missing *types.ExecutionDoesNotExist
	if errors.As(err, &missing) {
		return &ora.Error{Code: ora.ENOTFOUND, Message: "no wave " + waveID, Err: err}
	}
	return translate(err)
}

// wireShape turns an SDK history event (Go field names) into Step Functions'
// JSON shape: field names start lower case, absent fields are left out.
func wireShape(e types.HistoryEvent) (any, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return lowerKeys(v), nil
}

func lowerKeys(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			if x == nil {
				continue
			}
			r, size := utf8.DecodeRuneInString(k)
			m[string(unicode.ToLower(r))+k[size:]] = lowerKeys(x)
		}
		return m
	case []any:
		for i := range t {
			t[i] = lowerKeys(t[i])
		}
		return t
	}
	return v
}
