package stepfn

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The fuzz tests' seed corpora live in testdata/fuzz/<FuzzName>/ and run as
// regression tests in every `go test`; `go test -fuzz FuzzX` explores further.

func FuzzJSONPath(f *testing.F) {
	f.Add("$.a.b[0]", `{"a":{"b":[1,2]}}`)
	f.Add("$.a-b..c-d['e-f'][0]", `{"a-b":{"c-d":{"e-f":[1]}}}`)
	f.Fuzz(func(t *testing.T, expr, doc string) {
		data, err := parseJSON([]byte(doc))
		if err != nil {
			return
		}
		var std bytes.Buffer
		enc := json.NewEncoder(&std)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(data); err == nil && string(marshal(data)) != strings.TrimSuffix(std.String(), "\n") {
			t.Fatalf("marshal(%s) = %s, encoding/json gives %s", doc, marshal(data), std.String())
		}
		p, err := compilePath(expr)
		if err != nil {
			return
		}
		ctxObj := map[string]any{"Execution": map[string]any{"Id": "x"}}
		v, ok := p.get(data, ctxObj)
		if ok && !p.definite {
			if _, isArr := v.([]any); !isArr {
				t.Fatalf("indefinite path %q gave %T, want an array", expr, v)
			}
		}
		rp, err := compileRefPath(expr)
		if err != nil || rp.context {
			return
		}
		// Compare the input's rendering before and after: both go through the
		// same marshal, so strings that are not valid UTF-8 (which any JSON
		// encoder renders as U+FFFD) compare equal when they are unchanged.
		before := string(marshal(data))
		out, serr := setResult(rp, data, "sentinel")
		if serr != nil {
			return
		}
		got, ok := rp.get(out, nil)
		if !ok || got != "sentinel" {
			t.Fatalf("after setting %q in %s, get = %v, %v; want the value set", expr, doc, got, ok)
		}
		if after := string(marshal(data)); after != before {
			t.Fatalf("setResult(%q) changed its input from %s to %s", expr, before, after)
		}
	})
}

func FuzzIntrinsic(f *testing.F) {
	f.Add("States.Format('{} and {}', $.a, States.MathAdd(1, 2))", `{"a":"x"}`)
	f.Fuzz(func(t *testing.T, expr, doc string) {
		data, err := parseJSON([]byte(doc))
		if err != nil {
			return
		}
		c, err := parseIntrinsic(expr)
		if err != nil {
			return
		}
		v, serr := c.eval(data, map[string]any{})
		if serr != nil {
			if serr.Name != ErrIntrinsicFailure && serr.Name != ErrRuntime {
				t.Fatalf("eval error %q, want States.IntrinsicFailure or States.Runtime", serr.Name)
			}
			return
		}
		if _, err := parseJSON(marshal(v)); err != nil {
			t.Fatalf("result %#v does not round-trip as JSON: %v", v, err)
		}
	})
}

func FuzzDefinition(f *testing.F) {
	f.Add([]byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`))
	f.Add([]byte(`{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"x":"{% $states.input.a + 1 %}"},"Output":"{% $x %}","Next":"C"},"C":{"Type":"Choice","Choices":[{"Condition":"{% $x > 1 %}","Next":"S"}],"Default":"S"},"S":{"Type":"Succeed"}}}`))
	f.Add([]byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"v.$":"$.a-b"},"Next":"B"},"B":{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage.waitForTaskToken","Parameters":{"m.$":"$v"},"End":true}}}`))
	f.Fuzz(func(t *testing.T, def []byte) {
		m, err := compileDefinition(def)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("empty error message")
			}
			return
		}
		if _, ok := m.states[m.startAt]; !ok {
			t.Fatalf("accepted a definition whose StartAt is not a state")
		}
		// Run what loads, briefly: it must end or be stopped without a panic.
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		out, err := RunScripted(ctx, def, []byte(`{}`), TaskScript{})
		if err == nil && out.Status == StatusRunning {
			t.Fatalf("RunScripted returned a RUNNING execution")
		}
	})
}
