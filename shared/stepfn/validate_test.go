package stepfn_test

import (
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/stepfn"
)

func TestValidation(t *testing.T) {
	const fn = `"Resource":"arn:aws:lambda:us-east-1:123456789012:function:f"`
	tests := []struct {
		name string
		def  string
		want []string // substrings of the error
	}{
		{"not JSON", `{`, []string{"not valid JSON"}},
		{"missing StartAt", `{"States":{"A":{"Type":"Pass","End":true}}}`, []string{"StartAt"}},
		{"StartAt unknown", `{"StartAt":"B","States":{"A":{"Type":"Pass","End":true}}}`, []string{`"B"`, "not a state"}},
		{"missing Next", `{"StartAt":"A","States":{"A":{"Type":"Pass"}}}`, []string{"state A", "neither Next nor End"}},
		{"Next and End", `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"A","End":true}}}`, []string{"state A", "both Next and End"}},
		{"unknown Next", `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"Z"}}}`, []string{"state A", `"Z"`}},
		{"unreachable", `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true},"B":{"Type":"Pass","End":true}}}`, []string{"state B", "not reachable"}},
		{"unknown type", `{"StartAt":"A","States":{"A":{"Type":"Sleep","End":true}}}`, []string{"state A", "Sleep"}},
		{"unknown field", `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true,"Seconds":1}}}`, []string{"state A", `"Seconds"`}},
		{"bad InputPath", `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true,"InputPath":"x.y"}}}`, []string{"state A", "InputPath"}},
		{"ResultPath not a reference path", `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true,"ResultPath":"$.a[*]"}}}`, []string{"state A", "ResultPath", "reference path"}},
		{"bad parameter path", `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true,"Parameters":{"x.$":"nope"}}}}`, []string{"state A", "x.$"}},
		{"malformed intrinsic", `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true,"Parameters":{"x.$":"States.Format('a {}', $.b"}}}}`, []string{"state A", "intrinsic"}},
		{"unknown intrinsic", `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true,"Parameters":{"x.$":"States.Nope(1)"}}}}`, []string{"state A", "States.Nope"}},
		{"intrinsic arity", `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true,"Parameters":{"x.$":"States.MathAdd(1)"}}}}`, []string{"state A", "States.MathAdd takes 2 arguments"}},
		{"retry interval", `{"StartAt":"A","States":{"A":{"Type":"Task",` + fn + `,"End":true,"Retry":[{"ErrorEquals":["X"],"IntervalSeconds":0}]}}}`, []string{"state A", "Retry[0]", "IntervalSeconds"}},
		{"retry backoff", `{"StartAt":"A","States":{"A":{"Type":"Task",` + fn + `,"End":true,"Retry":[{"ErrorEquals":["X"],"BackoffRate":0.5}]}}}`, []string{"state A", "BackoffRate"}},
		{"retry jitter", `{"StartAt":"A","States":{"A":{"Type":"Task",` + fn + `,"End":true,"Retry":[{"ErrorEquals":["X"],"JitterStrategy":"HALF"}]}}}`, []string{"JitterStrategy"}},
		{"retry empty ErrorEquals", `{"StartAt":"A","States":{"A":{"Type":"Task",` + fn + `,"End":true,"Retry":[{"ErrorEquals":[]}]}}}`, []string{"ErrorEquals"}},
		{"States.ALL not last", `{"StartAt":"A","States":{"A":{"Type":"Task",` + fn + `,"End":true,"Retry":[{"ErrorEquals":["States.ALL"]},{"ErrorEquals":["X"]}]}}}`, []string{"States.ALL"}},
		{"catch unknown Next", `{"StartAt":"A","States":{"A":{"Type":"Task",` + fn + `,"End":true,"Catch":[{"ErrorEquals":["X"],"Next":"Q"}]}}}`, []string{"state A", `"Q"`}},
		{"unsupported resource", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:aws:sqs:us-east-1:123456789012:queue","End":true}}}`, []string{"state A", "not supported"}},
		{"assign not an object", `{"StartAt":"A","States":{"A":{"Type":"Pass","Assign":[1],"End":true}}}`, []string{"state A", "Assign must be an object"}},
		{"assign bad variable name", `{"StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"1x":1},"End":true}}}`, []string{"state A", `"1x" is not a valid variable name`}},
		{"assign reserved states", `{"StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"states":1},"End":true}}}`, []string{"state A", `"states"`}},
		{"assign twice", `{"StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"x":1,"x.$":"$.y"},"End":true}}}`, []string{"state A", "assigned twice"}},
		{"assign bad path", `{"StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"x.$":"nope"},"End":true}}}`, []string{"state A", "x.$"}},
		{"assign on Succeed", `{"StartAt":"A","States":{"A":{"Type":"Succeed","Assign":{"x":1}}}}`, []string{"state A", `"Assign"`}},
		{"assign in nested rule", `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Not":{"Variable":"$.a","IsPresent":true,"Assign":{"x":1}},"Next":"S"}],"Default":"S"},"S":{"Type":"Succeed"}}}`, []string{"state C", "nested rule must not have Assign"}},
		{"variable in ResultPath", `{"StartAt":"A","States":{"A":{"Type":"Pass","ResultPath":"$x.y","End":true}}}`, []string{"state A", "cannot name a variable"}},
		{"unknown integration pattern", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:aws:states:::ecs:runTask.async","End":true}}}`, []string{"state A", "not supported"}},
		{"lambda invoke has no sync", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.sync","End":true}}}`, []string{"state A", "lambda:invoke[.waitForTaskToken]"}},
		{"lambda has only invoke", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:aws:states:::lambda:getFunction","End":true}}}`, []string{"state A", "not supported"}},
		{"heartbeat >= timeout", `{"StartAt":"A","States":{"A":{"Type":"Task",` + fn + `,"End":true,"TimeoutSeconds":5,"HeartbeatSeconds":5}}}`, []string{"HeartbeatSeconds"}},
		{"choice without rules", `{"StartAt":"A","States":{"A":{"Type":"Choice","Choices":[]}}}`, []string{"state A", "Choices"}},
		{"choice two operators", `{"StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Variable":"$.a","StringEquals":"x","NumericEquals":1,"Next":"A"}]}}}`, []string{"more than one"}},
		{"choice bad operand", `{"StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Variable":"$.a","NumericEquals":"1","Next":"A"}]}}}`, []string{"NumericEquals", "number"}},
		{"choice nested Next", `{"StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Not":{"Variable":"$.a","IsNull":true,"Next":"A"},"Next":"A"}]}}}`, []string{"nested rule"}},
		{"wait two fields", `{"StartAt":"A","States":{"A":{"Type":"Wait","Seconds":1,"SecondsPath":"$.s","End":true}}}`, []string{"exactly one"}},
		{"fail Error and ErrorPath", `{"StartAt":"A","States":{"A":{"Type":"Fail","Error":"E","ErrorPath":"$.e"}}}`, []string{"both Error and ErrorPath"}},
		{"parallel branch unreachable", `{"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,"Branches":[{"StartAt":"A","States":{"A":{"Type":"Pass","End":true},"B":{"Type":"Pass","End":true}}}]}}}`, []string{"P/Branches[0]/B", "not reachable"}},
		{"map without processor", `{"StartAt":"M","States":{"M":{"Type":"Map","End":true}}}`, []string{"state M", "ItemProcessor"}},
		{"map tolerated percentage", `{"StartAt":"M","States":{"M":{"Type":"Map","End":true,"ToleratedFailurePercentage":101,"ItemProcessor":{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}}}}`, []string{"ToleratedFailurePercentage"}},
		{"unknown query language", `{"QueryLanguage":"XPath","StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`, []string{"XPath", "JSONPath or JSONata"}},
		{"JSONPath state in a JSONata machine", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Pass","QueryLanguage":"JSONPath","End":true}}}`, []string{"state A", "not allowed"}},
		{"JSONata state with Parameters", `{"StartAt":"A","States":{"A":{"Type":"Pass","QueryLanguage":"JSONata","Parameters":{},"End":true}}}`, []string{"state A", `"Parameters"`}},
		{"JSONata expression that does not parse", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Pass","Output":"{% $states.input.( %}","End":true}}}`, []string{"state A", "does not parse"}},
		{"JSONata Map with ItemReader not run", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Map","ItemReader":{"Resource":"arn:aws:states:::s3:getObject"},"ItemProcessor":{"StartAt":"B","States":{"B":{"Type":"Succeed"}}},"End":true}}}`, []string{"state A", `"ItemReader"`}},
		{"JSONata Map with ItemsPath", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Map","ItemsPath":"$.xs","ItemProcessor":{"StartAt":"B","States":{"B":{"Type":"Succeed"}}},"End":true}}}`, []string{"state A", `"ItemsPath"`}},
		{"JSONPath state inside a JSONata Parallel", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Parallel","Branches":[{"StartAt":"B","States":{"B":{"Type":"Pass","QueryLanguage":"JSONPath","End":true}}}],"End":true}}}`, []string{"Branches[0]/B", "not allowed"}},
		{"JSONata Choice rule without Condition", `{"QueryLanguage":"JSONata","StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Next":"S"}]},"S":{"Type":"Succeed"}}}`, []string{"state C", "Condition is missing"}},
		{"JSONata Catch with ResultPath", `{"QueryLanguage":"JSONata","StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage","Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$.e","Next":"S"}],"End":true},"S":{"Type":"Succeed"}}}`, []string{"state T", "ResultPath"}},
		{"bad StringMatches escape", `{"StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Variable":"$.a","StringMatches":"a\\q","Next":"A"}]}}}`, []string{"StringMatches"}},
		{"bad timestamp", `{"StartAt":"A","States":{"A":{"Type":"Wait","Timestamp":"yesterday","End":true}}}`, []string{"Timestamp"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := stepfn.Validate([]byte(tt.def))
			if err == nil {
				t.Fatalf("Validate accepted %s", tt.def)
			}
			if stepfn.ErrorCode(err) != stepfn.CodeInvalidDefinition {
				t.Errorf("code = %q, want InvalidDefinition", stepfn.ErrorCode(err))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestValidationAccepts(t *testing.T) {
	defs := map[string]string{
		"legacy iterator and parameters": `{"StartAt":"M","States":{"M":{"Type":"Map","End":true,"ItemsPath":"$.xs","Parameters":{"v.$":"$$.Map.Item.Value"},"Iterator":{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}}}}`,
		"choice with every shape":        `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"And":[{"Variable":"$.a","IsPresent":true},{"Not":{"Variable":"$.b","StringMatches":"x\\*y*"}}],"Next":"S"},{"Variable":"$.t","TimestampLessThanEqualsPath":"$.u","Next":"S"}],"Default":"S"},"S":{"Type":"Succeed"}}}`,
		"wait for token":                 `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken","TimeoutSecondsPath":"$.t","Parameters":{"FunctionName":"f","Payload":{"t.$":"$$.Task.Token"}},"End":true}}}`,
		"sqs wait for token":             `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage.waitForTaskToken","Parameters":{"QueueUrl":"q","MessageBody":{"t.$":"$$.Task.Token"}},"End":true}}}`,
		"ecs run task sync":              `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::ecs:runTask.sync","End":true}}}`,
		"start execution sync:2":         `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.sync:2","End":true}}}`,
		"gov cloud partition":            `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws-us-gov:states:::dynamodb:putItem","End":true}}}`,
		"china partition lambda invoke":  `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws-cn:states:::lambda:invoke","Parameters":{"FunctionName":"f"},"End":true}}}`,
		"assign everywhere": `{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":1,"Assign":{"a":1},"Next":"C"},"C":{"Type":"Choice","Assign":{"d":1},"Choices":[{"Variable":"$a","NumericEquals":1,"Assign":{"b.$":"$a"},"Next":"T"}],"Default":"T"},` +
			`"T":{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage","Assign":{"_c":{"n.$":"$b"}},"Catch":[{"ErrorEquals":["States.ALL"],"Assign":{"e.$":"$.Error"},"Next":"P"}],"Next":"P"},"P":{"Type":"Pass","Parameters":{"x.$":"States.Format('{}', $_c.n)"},"End":true}}}`,
		"nested intrinsics": `{"StartAt":"A","States":{"A":{"Type":"Pass","Parameters":{"x.$":"States.Format('it\\'s {} \\{q\\}', States.ArrayLength(States.Array(1, 'a,b', $.c)))"},"End":true}}}`,
	}
	for name, def := range defs {
		t.Run(name, func(t *testing.T) {
			if err := stepfn.Validate([]byte(def)); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}
