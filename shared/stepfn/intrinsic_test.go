package stepfn

import "testing"

func TestIntrinsics(t *testing.T) {
	input := `{"a":"x","n":3,"arr":[1,2,2,3],"obj":{"k":1},"s":"a,b;;c","b64":"aGVsbG8=","q":"it's"}`
	tests := []struct {
		name, expr, want string
		wantErr          string
	}{
		{"format", `States.Format('Hello, {}! {} {} {}', $.a, $.n, true, null)`, `"Hello, x! 3 true null"`, ""},
		{"format escapes", `States.Format('\{\} \' \\ {}', $.q)`, `"{} ' \\ it's"`, ""},
		{"format count", `States.Format('{} {}', $.a)`, "", ErrRuntime},
		{"string to json", `States.StringToJson('{"x":[1,2]}')`, `{"x":[1,2]}`, ""},
		{"json to string", `States.JsonToString($.obj)`, `"{\"k\":1}"`, ""},
		{"array", `States.Array(1, 'two', $.a, null)`, `[1,"two","x",null]`, ""},
		{"array partition", `States.ArrayPartition($.arr, 3)`, `[[1,2,2],[3]]`, ""},
		{"array contains", `States.ArrayContains($.arr, 2)`, `true`, ""},
		{"array range", `States.ArrayRange(1, 9, 2)`, `[1,3,5,7,9]`, ""},
		{"array range down", `States.ArrayRange(3, 1, -1)`, `[3,2,1]`, ""},
		{"array get item", `States.ArrayGetItem($.arr, 3)`, `3`, ""},
		{"array get item out of range", `States.ArrayGetItem($.arr, 4)`, "", ErrRuntime},
		{"array length", `States.ArrayLength($.arr)`, `4`, ""},
		{"array unique", `States.ArrayUnique($.arr)`, `[1,2,3]`, ""},
		{"base64 encode", `States.Base64Encode('hello')`, `"aGVsbG8="`, ""},
		{"base64 decode", `States.Base64Decode($.b64)`, `"hello"`, ""},
		{"hash", `States.Hash('hello', 'SHA-256')`, `"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"`, ""},
		{"hash md5", `States.Hash('hello', 'MD5')`, `"5d41402abc4b2a76b9719d911017c592"`, ""},
		{"json merge", `States.JsonMerge($.obj, States.StringToJson('{"k":2,"z":3}'), false)`, `{"k":2,"z":3}`, ""},
		{"json merge deep", `States.JsonMerge($.obj, $.obj, true)`, "", ErrRuntime},
		{"math add", `States.MathAdd($.n, -5)`, `-2`, ""},
		{"math add fraction", `States.MathAdd(1.5, 1)`, "", ErrRuntime},
		{"string split", `States.StringSplit($.s, ',;')`, `["a","b","c"]`, ""},
		{"nested", `States.Format('{}', States.MathAdd(1, States.ArrayLength(States.Array($.a, $.n))))`, `"3"`, ""},
		{"missing path", `States.ArrayLength($.nope)`, "", ErrRuntime},
	}
	in, err := parseJSON([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseIntrinsic(tt.expr)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			v, serr := c.eval(in, nil)
			if tt.wantErr != "" {
				if serr == nil || serr.Name != tt.wantErr {
					t.Fatalf("got %s, %v; want error %s", marshal(v), serr, tt.wantErr)
				}
				return
			}
			if serr != nil {
				t.Fatalf("eval: %s: %s", serr.Name, serr.Cause)
			}
			want, _ := parseJSON([]byte(tt.want))
			if !jsonEqual(v, want) {
				t.Errorf("got %s, want %s", marshal(v), tt.want)
			}
		})
	}
}

func TestRandomAndUUID(t *testing.T) {
	for _, expr := range []string{`States.MathRandom(5, 8)`, `States.MathRandom(5, 8, 42)`} {
		c, err := parseIntrinsic(expr)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 50; i++ {
			v, serr := c.eval(nil, nil)
			n, ok := v.(int64)
			if serr != nil || !ok || n < 5 || n >= 8 {
				t.Fatalf("%s = %v, %v; want an integer in [5, 8)", expr, v, serr)
			}
		}
	}
	c, _ := parseIntrinsic(`States.UUID()`)
	a, _ := c.eval(nil, nil)
	b, _ := c.eval(nil, nil)
	if s, ok := a.(string); !ok || len(s) != 36 || a == b {
		t.Errorf("UUIDs %v, %v: want two different 36-character strings", a, b)
	}
}

func TestStringMatches(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"log-*.txt", "log-2024.txt", true},
		{"log-*.txt", "log-2024.csv", false},
		{"*", "", true},
		{`a\*b`, "a*b", true},
		{`a\*b`, "axb", false},
		{`a\\b*`, `a\bcd`, true},
		{"*x*y*", "__x__y__", true},
		{"*x*y*", "__y__x__", false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"/"+tt.s, func(t *testing.T) {
			p, err := compilePattern(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if got := matchPattern(p, tt.s); got != tt.want {
				t.Errorf("match(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
			}
		})
	}
}
