package stepfn

import "github.com/ohler55/ojg/jp"

// A state's output must render to at most maxPayload bytes. Rendering every
// output to count its bytes costs as much as the state's own work, so a
// frame carries what it knows of sizes instead: the rendering of a value a
// definite path selects is a piece of the whole's, a Task's result parsed
// from canonical JSON is as long as its bytes, a Map's or Parallel's result
// is its children's outputs between brackets, and setting a result into the
// input adds at most the result and the keys of the ResultPath. The bounds
// below return 0 when they cannot tell; run then renders the output's size.

// selects reports whether p picks one piece of the value it reads (a definite
// path on the state's input, not the context object or a variable).
func (p *path) selects() bool { return p.definite && !p.context && p.variable == "" }

// effectiveBound bounds the size of the state's effective input (after
// InputPath) from a bound of its input.
func (st *state) effectiveBound(in int) int {
	switch {
	case st.inputNull:
		return 2 // {}
	case st.inputPath == nil || st.inputPath.selects():
		return in
	}
	return 0
}

// resultBound bounds the size of the input with the result set at
// ResultPath, from bounds of the input and the result.
func (st *state) resultBound(in, res int) int {
	p := st.resultPath
	switch {
	case st.resultNull:
		return in
	case p == nil || len(p.expr) == 1:
		return res
	case in <= 0 || res <= 0 || p.context || p.variable != "":
		return 0
	}
	grow := 0
	for _, f := range p.expr[1:] {
		switch f := f.(type) {
		case jp.Child:
			// At most a new member ,"key": in a new object {} where null was.
			grow += stringSize(string(f)) + 4
		case jp.Nth:
			// An element replaced: nothing added.
		default:
			return 0
		}
	}
	return in + res + grow
}

// outputBound bounds the size of the state's output (after OutputPath) from
// a bound of what OutputPath reads.
func (st *state) outputBound(v int) int {
	switch {
	case st.outputNull:
		return 2 // {}
	case st.outputPath == nil || st.outputPath.selects():
		return v
	}
	return 0
}

// childrenBound is the size of the array of n children's outputs when every
// child reported the size of its own (sized of them, adding up to sum).
func childrenBound(n, sized, sum int) int {
	if sized != n {
		return 0
	}
	return 2 + max(n-1, 0) + sum
}
