package stepfn

import (
	"fmt"
	"regexp"
	"sort"
)

// Workflow variables (AWS's "Passing data between states with variables").
//
// A state's Assign sets variables once the state is done; the values are
// evaluated together against the variables as the state found them, and the
// next state is the first to see the new values. A path $name or
// $name.field reads a variable anywhere a path may be used except a reference
// path (ResultPath, ItemsPath). What $ is in Assign, as AWS documents it for
// JSONPath: the state's result (after ResultSelector) for Task, Parallel and
// Map, the result for Pass, the effective input for Choice and Wait, and the
// error output {Error, Cause} for a Catcher.
//
// Scopes: the branches of a Parallel state and the iterations of an inline Map
// state read the variables of the flow they are in, as they were when the
// state started; what they assign stays in the branch or the iteration. A
// Distributed Map's children see no outer variable.

// varName is what AWS accepts as a variable name.
var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,79}$`)

// scope holds the variables one flow assigned, over those of the flow it runs in.
type scope struct {
	parent *scope
	own    map[string]any
}

// lookup finds name in the scope or the scopes it is in.
func (s *scope) lookup(name string) (any, bool) {
	for ; s != nil; s = s.parent {
		if v, ok := s.own[name]; ok {
			return v, true
		}
	}
	return nil, false
}

// compileAssign compiles an Assign field: an object of variable names, each a
// value or (with a ".$" suffix) a path or an intrinsic function.
func compileAssign(v any, where string) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: Assign must be an object of variable names", where)
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	seen := map[string]bool{}
	for _, k := range names {
		name := k
		if len(name) > 2 && name[len(name)-2:] == ".$" {
			name = name[:len(name)-2]
		}
		if !varName.MatchString(name) || name == "states" {
			return nil, fmt.Errorf("%s: Assign: %q is not a valid variable name (a letter or _, then letters, digits or _, at most 80; \"states\" is reserved)", where, name)
		}
		if seen[name] {
			return nil, fmt.Errorf("%s: Assign: the variable %q is assigned twice", where, name)
		}
		seen[name] = true
	}
	t, err := compileTemplate(m, "Assign")
	if err != nil {
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	return t, nil
}

// evalAssign evaluates a compiled Assign against src (what $ is) and returns
// the values to assign.
func evalAssign(t any, src, ctxObj any) (map[string]any, *stateError) {
	if t == nil {
		return nil, nil
	}
	v, serr := evalTemplate(t, src, ctxObj)
	if serr != nil {
		return nil, serr
	}
	m, _ := v.(map[string]any)
	return m, nil
}
