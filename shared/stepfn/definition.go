package stepfn

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// machine is a compiled state machine, or a Parallel branch, or a Map's item
// processor.
type machine struct {
	startAt        string
	states         map[string]*state
	timeoutSeconds int64

	historyLen atomic.Int64 // events in the history of its last execution: room to make for the next
}

// state is one compiled state.
type state struct {
	name, typ string
	next      string
	end       bool

	enteredType, exitedType string // the types of its StateEntered and StateExited events

	inputPath, outputPath *path
	inputNull, outputNull bool // InputPath/OutputPath: null
	parameters            any  // *template or a literal
	hasParameters         bool
	resultSelector        any
	hasResultSelector     bool
	resultPath            *path
	resultNull            bool // ResultPath: null
	retry                 []retrier
	catch                 []catcher
	assign                any     // the compiled Assign, or nil
	jx                    *jstate // the JSONata fields, for a state whose QueryLanguage is JSONata
	distributed           bool    // a Map state whose ItemProcessor runs in DISTRIBUTED mode
	resource              string
	waitToken             bool        // the resource ends in .waitForTaskToken
	integration           bool        // the resource is a service integration (arn:<partition>:states:::)
	service, action       string      // the integration's service and action (lambda, invoke)
	pattern               string      // the integration pattern: "", "sync", "sync:2" or "waitForTaskToken"
	ig                    integration // service, action and pattern together, for the task's call
	function              string      // the Lambda function of a function-ARN resource
	timeoutSeconds        int64
	timeoutPath           *path
	heartbeatSeconds      int64
	heartbeatPath         *path
	result                any
	hasResult             bool
	choices               []*choiceRule
	defaultNext           string
	waitSeconds           *float64
	waitTimestamp         *time.Time
	waitSecondsPath       *path
	waitTimestampPath     *path
	failError, failCause  string
	failErrorPath         *path
	failErrorCall         *intrinsic
	failCausePath         *path
	failCauseCall         *intrinsic
	branches              []*machine
	itemsPath             *path
	itemSelector          any
	hasItemSelector       bool
	processor             *machine
	maxConcurrency        int64
	maxConcurrencyPath    *path
	toleratedCount        int64
	toleratedCountPath    *path
	toleratedPercent      float64
	toleratedPercentPath  *path
	hasToleratedPercent   bool
	hasToleratedCount     bool
	itemReader            *itemReader
	itemBatcher           *itemBatcher
}

type retrier struct {
	errorEquals []string
	interval    float64
	maxAttempts int64
	backoff     float64
	maxDelay    float64
	jitterFull  bool
}

type catcher struct {
	errorEquals []string
	resultPath  *path
	resultNull  bool
	next        string
	assign      any // the compiled Assign, or nil
}

var commonFields = []string{"Type", "Comment", "QueryLanguage"}

var stateFields = map[string][]string{
	"Task": {"Assign", "Next", "End", "InputPath", "OutputPath", "Parameters", "ResultSelector", "ResultPath", "Retry", "Catch",
		"Resource", "TimeoutSeconds", "TimeoutSecondsPath", "HeartbeatSeconds", "HeartbeatSecondsPath", "Credentials"},
	"Pass":    {"Assign", "Next", "End", "InputPath", "OutputPath", "Parameters", "ResultPath", "Result"},
	"Choice":  {"Assign", "InputPath", "OutputPath", "Choices", "Default"},
	"Wait":    {"Assign", "Next", "End", "InputPath", "OutputPath", "Seconds", "Timestamp", "SecondsPath", "TimestampPath"},
	"Succeed": {"InputPath", "OutputPath"},
	"Fail":    {"Error", "Cause", "ErrorPath", "CausePath"},
	"Parallel": {"Assign", "Next", "End", "InputPath", "OutputPath", "Parameters", "ResultSelector", "ResultPath", "Retry", "Catch",
		"Branches"},
	"Map": {"Assign", "Next", "End", "InputPath", "OutputPath", "Parameters", "ResultSelector", "ResultPath", "Retry", "Catch",
		"ItemsPath", "ItemSelector", "ItemProcessor", "Iterator", "MaxConcurrency", "MaxConcurrencyPath",
		"ToleratedFailureCount", "ToleratedFailureCountPath", "ToleratedFailurePercentage",
		"ToleratedFailurePercentagePath", "Label", "ItemReader", "ItemBatcher"},
}

// defError is a definition error naming where it is.
type defError struct {
	where  string
	reason string
}

func (e *defError) Error() string {
	if e.where == "" {
		return e.reason
	}
	return e.where + ": " + e.reason
}

// compileDefinition parses and validates an ASL definition.
func compileDefinition(def []byte) (*machine, error) {
	v, err := parseJSON(def)
	if err != nil {
		return nil, &defError{reason: fmt.Sprintf("the definition is not valid JSON: %v", err)}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &defError{reason: "the definition must be a JSON object"}
	}
	if err := onlyFields(m, "", []string{"StartAt", "States", "Comment", "Version", "TimeoutSeconds", "QueryLanguage"}); err != nil {
		return nil, err
	}
	ql := queryJSONPath
	if v, ok := m["QueryLanguage"]; ok {
		if v != queryJSONPath && v != queryJSONata {
			return nil, &defError{reason: fmt.Sprintf("QueryLanguage %v is not JSONPath or JSONata", v)}
		}
		ql = v.(string)
	}
	mc, err := compileMachine(m, "", ql)
	if err != nil {
		return nil, err
	}
	if err := uniqueStateNames(mc, map[string]bool{}); err != nil {
		return nil, err
	}
	if t, ok := m["TimeoutSeconds"]; ok {
		n, ok := asInt(t)
		if !ok || n < 0 {
			return nil, &defError{reason: "TimeoutSeconds must be a non-negative integer"}
		}
		mc.timeoutSeconds = n
	}
	return mc, nil
}

// uniqueStateNames checks that no state name appears twice in the whole
// state machine: AWS requires names unique across every Parallel branch and
// Map processor, not only within one States object.
func uniqueStateNames(m *machine, seen map[string]bool) error {
	names := make([]string, 0, len(m.states))
	for n := range m.states {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if seen[n] {
			return &defError{where: "state " + n, reason: "state names must be unique within the state machine, and this name is used more than once"}
		}
		seen[n] = true
	}
	for _, n := range names {
		st := m.states[n]
		for _, b := range st.branches {
			if err := uniqueStateNames(b, seen); err != nil {
				return err
			}
		}
		if st.processor != nil {
			if err := uniqueStateNames(st.processor, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

func onlyFields(m map[string]any, where string, allowed []string) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ok := false
		for _, a := range allowed {
			if a == k {
				ok = true
				break
			}
		}
		if !ok {
			return &defError{where: where, reason: fmt.Sprintf("the field %q is not supported", k)}
		}
	}
	return nil
}

func compileMachine(m map[string]any, prefix, ql string) (*machine, error) {
	start, ok := m["StartAt"].(string)
	if !ok || start == "" {
		return nil, &defError{where: strings.TrimSuffix(prefix, "/"), reason: "StartAt is missing or not a string"}
	}
	raw, ok := m["States"].(map[string]any)
	if !ok || len(raw) == 0 {
		return nil, &defError{where: strings.TrimSuffix(prefix, "/"), reason: "States is missing or empty"}
	}
	mc := &machine{startAt: start, states: make(map[string]*state, len(raw))}
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		sm, ok := raw[n].(map[string]any)
		where := "state " + prefix + n
		if !ok {
			return nil, &defError{where: where, reason: "must be an object"}
		}
		if len(n) == 0 || len(n) > 80 {
			return nil, &defError{where: where, reason: "state names must be 1 to 80 characters"}
		}
		st, err := compileState(n, sm, where, prefix, ql)
		if err != nil {
			return nil, err
		}
		mc.states[n] = st
	}
	if _, ok := mc.states[start]; !ok {
		return nil, &defError{where: strings.TrimSuffix(prefix, "/"), reason: fmt.Sprintf("StartAt %q is not a state", start)}
	}
	// Every transition must name a state of this machine, and every state must be reachable.
	for _, n := range names {
		st := mc.states[n]
		for _, t := range st.targets() {
			if _, ok := mc.states[t.name]; !ok {
				return nil, &defError{where: "state " + prefix + n, reason: fmt.Sprintf("%s names %q, which is not a state", t.field, t.name)}
			}
		}
	}
	seen := map[string]bool{start: true}
	queue := []string{start}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, t := range mc.states[n].targets() {
			if !seen[t.name] {
				seen[t.name] = true
				queue = append(queue, t.name)
			}
		}
	}
	for _, n := range names {
		if !seen[n] {
			return nil, &defError{where: "state " + prefix + n, reason: "the state is not reachable from StartAt"}
		}
	}
	return mc, nil
}

type target struct{ field, name string }

func (s *state) targets() []target {
	var out []target
	if s.next != "" {
		out = append(out, target{"Next", s.next})
	}
	for _, c := range s.catch {
		out = append(out, target{"Catch.Next", c.next})
	}
	for _, c := range s.choices {
		out = append(out, target{"Choices.Next", c.next})
	}
	if s.defaultNext != "" {
		out = append(out, target{"Default", s.defaultNext})
	}
	return out
}

func compileState(name string, m map[string]any, where, prefix, ql string) (*state, error) {
	bad := func(format string, args ...any) error {
		return &defError{where: where, reason: fmt.Sprintf(format, args...)}
	}
	typ, _ := m["Type"].(string)
	allowed, ok := stateFields[typ]
	if !ok {
		return nil, bad("Type %v is not a state type", m["Type"])
	}
	v := ql
	if sv, ok := m["QueryLanguage"]; ok {
		switch {
		case sv == queryJSONPath && ql == queryJSONata:
			return nil, bad("QueryLanguage JSONPath is not allowed in a state machine whose QueryLanguage is JSONata")
		case sv != queryJSONPath && sv != queryJSONata:
			return nil, bad("QueryLanguage %v is not JSONPath or JSONata", sv)
		}
		v = sv.(string)
	}
	if v == queryJSONata {
		return compileJSONataState(name, m, where, prefix, ql, bad)
	}
	if err := onlyFields(m, where, append(append([]string{}, commonFields...), allowed...)); err != nil {
		return nil, err
	}
	return compileJSONPathState(name, m, where, prefix, ql, bad)
}

// compileJSONPathState compiles a state's JSONPath fields (and those both
// languages share); ql is the state machine's query language, which the
// states of its branches and item processor take.
func compileJSONPathState(name string, m map[string]any, where, prefix, ql string, bad func(string, ...any) error) (*state, error) {
	typ, _ := m["Type"].(string)
	s := &state{name: name, typ: typ, enteredType: typ + "StateEntered", exitedType: typ + "StateExited"}
	var err error
	str := func(key string) (string, bool, error) {
		v, ok := m[key]
		if !ok {
			return "", false, nil
		}
		sv, isStr := v.(string)
		if !isStr {
			return "", true, bad("%s must be a string", key)
		}
		return sv, true, nil
	}
	pathField := func(key string, ref bool) (*path, bool, error) {
		v, ok := m[key]
		if !ok {
			return nil, false, nil
		}
		if v == nil {
			return nil, true, nil
		}
		sv, isStr := v.(string)
		if !isStr {
			return nil, true, bad("%s must be a string holding a path", key)
		}
		var p *path
		var err error
		if ref {
			p, err = compileRefPath(sv)
		} else {
			p, err = compilePath(sv)
		}
		if err != nil {
			return nil, true, bad("%s: %v", key, err)
		}
		return p, true, nil
	}
	// Transitions.
	next, hasNext, err := str("Next")
	if err != nil {
		return nil, err
	}
	end, hasEnd := m["End"]
	if hasEnd && end != true && end != false {
		return nil, bad("End must be a boolean")
	}
	switch typ {
	case "Task", "Pass", "Wait", "Parallel", "Map":
		if hasNext && end == true {
			return nil, bad("has both Next and End")
		}
		if !hasNext && end != true {
			return nil, bad("has neither Next nor End: true")
		}
		if hasNext && next == "" {
			return nil, bad("Next is empty")
		}
		s.next, s.end = next, end == true
	}
	// Input and output.
	var present bool
	if s.inputPath, present, err = pathField("InputPath", false); err != nil {
		return nil, err
	}
	s.inputNull = present && s.inputPath == nil
	if s.outputPath, present, err = pathField("OutputPath", false); err != nil {
		return nil, err
	}
	s.outputNull = present && s.outputPath == nil
	if v, ok := m["Parameters"]; ok {
		if _, isObj := v.(map[string]any); !isObj {
			return nil, bad("Parameters must be an object")
		}
		if s.parameters, err = compileTemplate(v, "Parameters"); err != nil {
			return nil, bad("%v", err)
		}
		s.hasParameters = true
	}
	if v, ok := m["Assign"]; ok {
		if s.assign, err = compileAssign(v, "Assign"); err != nil {
			return nil, bad("%v", err)
		}
	}
	if v, ok := m["ResultSelector"]; ok {
		if _, isObj := v.(map[string]any); !isObj {
			return nil, bad("ResultSelector must be an object")
		}
		if s.resultSelector, err = compileTemplate(v, "ResultSelector"); err != nil {
			return nil, bad("%v", err)
		}
		s.hasResultSelector = true
	}
	if s.resultPath, present, err = pathField("ResultPath", true); err != nil {
		return nil, err
	}
	s.resultNull = present && s.resultPath == nil
	if s.retry, err = compileRetry(m["Retry"], bad); err != nil {
		return nil, err
	}
	if s.catch, err = compileCatch(m["Catch"], bad); err != nil {
		return nil, err
	}

	switch typ {
	case "Task":
		if s.resource, _, err = str("Resource"); err != nil {
			return nil, err
		}
		ig, err := checkResource(s.resource)
		if err != nil {
			return nil, bad("%v", err)
		}
		s.function = functionName(s.resource)
		s.integration = ig.service != ""
		s.service, s.action, s.pattern, s.ig = ig.service, ig.action, ig.pattern, ig
		s.waitToken = ig.pattern == patternWaitForTaskToken
		if s.timeoutSeconds, s.timeoutPath, err = secondsField(m, "TimeoutSeconds", bad); err != nil {
			return nil, err
		}
		if s.heartbeatSeconds, s.heartbeatPath, err = secondsField(m, "HeartbeatSeconds", bad); err != nil {
			return nil, err
		}
		if s.heartbeatSeconds > 0 && s.timeoutSeconds > 0 && s.heartbeatSeconds >= s.timeoutSeconds {
			return nil, bad("HeartbeatSeconds must be smaller than TimeoutSeconds")
		}
	case "Pass":
		s.result, s.hasResult = m["Result"]
	case "Choice":
		if s.choices, err = compileChoices(m["Choices"], bad); err != nil {
			return nil, err
		}
		if s.defaultNext, _, err = str("Default"); err != nil {
			return nil, err
		}
	case "Wait":
		n := 0
		if v, ok := m["Seconds"]; ok {
			f, isNum := toFloat(v)
			if !isNum || f < 0 || !isWhole(f) {
				return nil, bad("Seconds must be a non-negative integer")
			}
			s.waitSeconds = &f
			n++
		}
		if v, ok := m["Timestamp"]; ok {
			sv, _ := v.(string)
			t, err := parseTimestamp(sv)
			if err != nil {
				return nil, bad("Timestamp %v is not an RFC 3339 timestamp", v)
			}
			s.waitTimestamp = &t
			n++
		}
		if s.waitSecondsPath, present, err = pathField("SecondsPath", false); err != nil {
			return nil, err
		} else if present {
			n++
		}
		if s.waitTimestampPath, present, err = pathField("TimestampPath", false); err != nil {
			return nil, err
		} else if present {
			n++
		}
		if n != 1 {
			return nil, bad("a Wait state needs exactly one of Seconds, Timestamp, SecondsPath or TimestampPath")
		}
	case "Fail":
		if s.failError, _, err = str("Error"); err != nil {
			return nil, err
		}
		if s.failCause, _, err = str("Cause"); err != nil {
			return nil, err
		}
		for _, f := range []struct {
			key  string
			p    **path
			call **intrinsic
			lit  string
		}{{"ErrorPath", &s.failErrorPath, &s.failErrorCall, "Error"}, {"CausePath", &s.failCausePath, &s.failCauseCall, "Cause"}} {
			v, ok := m[f.key]
			if !ok {
				continue
			}
			if _, both := m[f.lit]; both {
				return nil, bad("has both %s and %s", f.lit, f.key)
			}
			sv, isStr := v.(string)
			if !isStr {
				return nil, bad("%s must be a string", f.key)
			}
			if looksIntrinsic(sv) {
				if *f.call, err = parseIntrinsic(sv); err != nil {
					return nil, bad("%s: %v", f.key, err)
				}
			} else if *f.p, err = compilePath(sv); err != nil {
				return nil, bad("%s: %v", f.key, err)
			}
		}
	case "Parallel":
		bs, ok := m["Branches"].([]any)
		if !ok || len(bs) == 0 {
			return nil, bad("Branches must be a non-empty array")
		}
		for i, b := range bs {
			bm, ok := b.(map[string]any)
			bw := fmt.Sprintf("%s%s/Branches[%d]/", prefix, name, i)
			if !ok {
				return nil, bad("Branches[%d] must be an object", i)
			}
			if err := onlyFields(bm, "state "+strings.TrimSuffix(bw, "/"), []string{"StartAt", "States", "Comment"}); err != nil {
				return nil, err
			}
			mc, err := compileMachine(bm, bw, ql)
			if err != nil {
				return nil, err
			}
			s.branches = append(s.branches, mc)
		}
	case "Map":
		if s.itemsPath, _, err = pathField("ItemsPath", true); err != nil {
			return nil, err
		}
		if v, ok := m["ItemSelector"]; ok {
			if _, dup := m["Parameters"]; dup {
				return nil, bad("has both ItemSelector and Parameters")
			}
			if s.itemSelector, err = compileTemplate(v, "ItemSelector"); err != nil {
				return nil, bad("%v", err)
			}
			s.hasItemSelector = true
		} else if s.hasParameters {
			s.itemSelector, s.hasItemSelector = s.parameters, true
			s.parameters, s.hasParameters = nil, false
		}
		proc, okP := m["ItemProcessor"].(map[string]any)
		it, okI := m["Iterator"].(map[string]any)
		if okP && okI {
			return nil, bad("has both ItemProcessor and Iterator")
		}
		if okI {
			proc, okP = it, true
		}
		if !okP {
			return nil, bad("ItemProcessor (or the legacy Iterator) is missing")
		}
		if err := onlyFields(proc, where+"/ItemProcessor", []string{"StartAt", "States", "Comment", "ProcessorConfig"}); err != nil {
			return nil, err
		}
		if s.processor, err = compileMachine(proc, prefix+name+"/ItemProcessor/", ql); err != nil {
			return nil, err
		}
		if s.maxConcurrency, s.maxConcurrencyPath, err = countField(m, "MaxConcurrency", bad); err != nil {
			return nil, err
		}
		if s.toleratedCount, s.toleratedCountPath, err = countField(m, "ToleratedFailureCount", bad); err != nil {
			return nil, err
		}
		_, s.hasToleratedCount = m["ToleratedFailureCount"]
		s.hasToleratedCount = s.hasToleratedCount || s.toleratedCountPath != nil
		if v, ok := m["ToleratedFailurePercentage"]; ok {
			f, isNum := toFloat(v)
			if !isNum || f < 0 || f > 100 {
				return nil, bad("ToleratedFailurePercentage must be a number from 0 to 100")
			}
			s.toleratedPercent, s.hasToleratedPercent = f, true
		}
		if s.toleratedPercentPath, _, err = pathField("ToleratedFailurePercentagePath", false); err != nil {
			return nil, err
		}
		if s.toleratedPercentPath != nil {
			s.hasToleratedPercent = true
		}
		if v, ok := m["ItemReader"]; ok {
			if s.itemReader, err = compileItemReader(v, bad); err != nil {
				return nil, err
			}
		}
		if v, ok := m["ItemBatcher"]; ok {
			if s.itemBatcher, err = compileItemBatcher(v, bad); err != nil {
				return nil, err
			}
		}
		s.distributed = distributed(proc)
		if (s.itemReader != nil || s.itemBatcher != nil) && !s.distributed {
			return nil, bad("ItemReader and ItemBatcher need ItemProcessor.ProcessorConfig.Mode DISTRIBUTED")
		}
	}
	return s, nil
}

func secondsField(m map[string]any, key string, bad func(string, ...any) error) (int64, *path, error) {
	v, ok := m[key]
	pv, okP := m[key+"Path"]
	if ok && okP {
		return 0, nil, bad("has both %s and %sPath", key, key)
	}
	if ok {
		n, isInt := asInt(v)
		if !isInt || n <= 0 || n > 99999999 {
			return 0, nil, bad("%s must be a positive integer", key)
		}
		return n, nil, nil
	}
	if okP {
		sv, _ := pv.(string)
		p, err := compileRefPath(sv)
		if err != nil {
			return 0, nil, bad("%sPath: %v", key, err)
		}
		return 0, p, nil
	}
	return 0, nil, nil
}

func countField(m map[string]any, key string, bad func(string, ...any) error) (int64, *path, error) {
	v, ok := m[key]
	pv, okP := m[key+"Path"]
	if ok && okP {
		return 0, nil, bad("has both %s and %sPath", key, key)
	}
	if ok {
		n, isInt := asInt(v)
		if !isInt || n < 0 {
			return 0, nil, bad("%s must be a non-negative integer", key)
		}
		return n, nil, nil
	}
	if okP {
		sv, _ := pv.(string)
		p, err := compileRefPath(sv)
		if err != nil {
			return 0, nil, bad("%sPath: %v", key, err)
		}
		return 0, p, nil
	}
	return 0, nil, nil
}

var lambdaArn = regexp.MustCompile(`^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9$_-]+)?$`)

// The integration patterns of a service integration resource
// (arn:aws:states:::sqs:sendMessage.waitForTaskToken).
const (
	patternSync             = "sync"
	patternSync2            = "sync:2"
	patternWaitForTaskToken = "waitForTaskToken"
)

// integrationArn matches a service integration resource in any partition
// (aws, aws-cn, aws-us-gov, ...): the service, the action and the pattern.
var integrationArn = regexp.MustCompile(`^arn:aws(?:-[a-z]+)*:states:::([a-z0-9-]+):([A-Za-z0-9]+)(?:\.(sync|sync:2|waitForTaskToken))?$`)

// integration is a parsed service integration resource; service is empty for
// a Lambda function ARN.
type integration struct {
	service, action, pattern string
}

// checkResource accepts the task resources this engine can run: a Lambda
// function ARN, or any service integration with the request-response, .sync,
// .sync:2 or .waitForTaskToken pattern. Lambda's invoke has no .sync pattern.
func checkResource(r string) (integration, error) {
	switch {
	case r == "":
		return integration{}, fmt.Errorf("the field Resource is missing")
	case lambdaArn.MatchString(r):
		return integration{}, nil
	}
	m := integrationArn.FindStringSubmatch(r)
	if m == nil {
		return integration{}, fmt.Errorf("the Resource %q is not supported: use a Lambda function ARN or a service integration arn:aws:states:::<service>:<action>[.sync|.sync:2|.waitForTaskToken]", r)
	}
	ig := integration{service: m[1], action: m[2], pattern: m[3]}
	if ig.service == "lambda" && (ig.action != "invoke" || strings.HasPrefix(ig.pattern, patternSync)) {
		return integration{}, fmt.Errorf("the Resource %q is not supported: Lambda's integration is arn:aws:states:::lambda:invoke[.waitForTaskToken]", r)
	}
	return ig, nil
}

// functionName returns the Lambda function name in a function ARN or a bare name.
func functionName(s string) string {
	if strings.HasPrefix(s, "arn:") {
		parts := strings.Split(s, ":")
		if len(parts) >= 7 {
			return parts[6]
		}
		return s
	}
	if i := strings.IndexByte(s, ':'); i > 0 {
		return s[:i]
	}
	return s
}

func compileRetry(v any, bad func(string, ...any) error) ([]retrier, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, bad("Retry must be an array")
	}
	var out []retrier
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, bad("Retry[%d] must be an object", i)
		}
		where := fmt.Sprintf("Retry[%d]", i)
		for k := range m {
			switch k {
			case "ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate", "MaxDelaySeconds", "JitterStrategy", "Comment":
			default:
				return nil, bad("%s: the field %q is not supported", where, k)
			}
		}
		names, err := errorEquals(m, where, bad, i == len(list)-1)
		if err != nil {
			return nil, err
		}
		r := retrier{errorEquals: names, interval: 1, maxAttempts: 3, backoff: 2}
		if x, ok := m["IntervalSeconds"]; ok {
			n, isInt := asInt(x)
			if !isInt || n < 1 || n > 99999999 {
				return nil, bad("%s: IntervalSeconds must be a positive integer", where)
			}
			r.interval = float64(n)
		}
		if x, ok := m["MaxAttempts"]; ok {
			n, isInt := asInt(x)
			if !isInt || n < 0 || n > 99999999 {
				return nil, bad("%s: MaxAttempts must be a non-negative integer", where)
			}
			r.maxAttempts = n
		}
		if x, ok := m["BackoffRate"]; ok {
			f, isNum := toFloat(x)
			if !isNum || f < 1 {
				return nil, bad("%s: BackoffRate must be a number of at least 1.0", where)
			}
			r.backoff = f
		}
		if x, ok := m["MaxDelaySeconds"]; ok {
			n, isInt := asInt(x)
			if !isInt || n < 1 || n > 31622400 {
				return nil, bad("%s: MaxDelaySeconds must be a positive integer", where)
			}
			r.maxDelay = float64(n)
		}
		if x, ok := m["JitterStrategy"]; ok {
			switch x {
			case "FULL":
				r.jitterFull = true
			case "NONE":
			default:
				return nil, bad("%s: JitterStrategy must be FULL or NONE", where)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

func errorEquals(m map[string]any, where string, bad func(string, ...any) error, last bool) ([]string, error) {
	list, ok := m["ErrorEquals"].([]any)
	if !ok || len(list) == 0 {
		return nil, bad("%s: ErrorEquals must be a non-empty array", where)
	}
	names := make([]string, 0, len(list))
	for _, x := range list {
		s, ok := x.(string)
		if !ok || s == "" {
			return nil, bad("%s: ErrorEquals holds a value that is not a non-empty string", where)
		}
		if s == ErrAll && (len(list) != 1 || !last) {
			return nil, bad("%s: States.ALL must appear alone and in the last retrier or catcher", where)
		}
		names = append(names, s)
	}
	return names, nil
}

func compileCatch(v any, bad func(string, ...any) error) ([]catcher, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, bad("Catch must be an array")
	}
	var out []catcher
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, bad("Catch[%d] must be an object", i)
		}
		where := fmt.Sprintf("Catch[%d]", i)
		for k := range m {
			switch k {
			case "ErrorEquals", "ResultPath", "Next", "Comment", "Assign":
			default:
				return nil, bad("%s: the field %q is not supported", where, k)
			}
		}
		names, err := errorEquals(m, where, bad, i == len(list)-1)
		if err != nil {
			return nil, err
		}
		c := catcher{errorEquals: names}
		if v, ok := m["Assign"]; ok {
			if c.assign, err = compileAssign(v, where); err != nil {
				return nil, bad("%v", err)
			}
		}
		c.next, _ = m["Next"].(string)
		if c.next == "" {
			return nil, bad("%s: Next is missing", where)
		}
		if rp, ok := m["ResultPath"]; ok {
			if rp == nil {
				c.resultNull = true
			} else {
				sv, _ := rp.(string)
				if c.resultPath, err = compileRefPath(sv); err != nil {
					return nil, bad("%s: ResultPath: %v", where, err)
				}
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// parseTimestamp parses an RFC 3339 timestamp as AWS accepts it (uppercase T and Z).
func parseTimestamp(s string) (time.Time, error) {
	if strings.ContainsAny(s, "tz") {
		return time.Time{}, fmt.Errorf("lowercase t or z")
	}
	return time.Parse(time.RFC3339Nano, s)
}

// waitDuration turns seconds into a duration, capping huge values.
func secondsDuration(f float64) time.Duration {
	if f > math.MaxInt64/float64(time.Second) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(f * float64(time.Second))
}
