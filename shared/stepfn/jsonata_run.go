package stepfn

import (
	"context"
	"fmt"
	"time"
)

// runJSONata runs a state whose QueryLanguage is JSONata, after its
// StateEntered event: it returns the state's output and the next state.
func (f *frame) runJSONata(ctx context.Context, st *state, input any) (any, string, *stateError) {
	j := st.jx
	ctxObj := f.stateContext(st)
	env := &jenv{states: map[string]any{"input": input, "context": contextValue(ctxObj)}, vars: f.scope()}
	evalOr := func(x *jexpr, def any) (any, *stateError) {
		if x == nil {
			return def, nil
		}
		return x.eval(env)
	}
	// finish evaluates Assign and Output against env, Assign first so an
	// error in either fails the state before anything is assigned.
	finish := func(assign, output *jexpr, def any) (any, *stateError) {
		f.assigned = nil
		var vals map[string]any
		if assign != nil {
			v, serr := assign.eval(env)
			if serr != nil {
				return nil, serr
			}
			vals, _ = v.(map[string]any)
		}
		out, serr := evalOr(output, def)
		if serr != nil {
			return nil, serr
		}
		f.assigned = vals
		return out, nil
	}
	switch st.typ {
	case "Pass":
		out, serr := finish(j.assign, j.output, input)
		return out, st.next, serr
	case "Succeed":
		out, serr := finish(nil, j.output, input)
		return out, "", serr
	case "Fail":
		e := &stateError{Name: st.failError, Cause: st.failCause}
		for _, p := range []struct {
			x   *jexpr
			dst *string
		}{{j.failError, &e.Name}, {j.failCause, &e.Cause}} {
			if p.x == nil {
				continue
			}
			v, serr := p.x.eval(env)
			if serr != nil {
				return nil, "", serr
			}
			s, ok := v.(string)
			if !ok {
				return nil, "", &stateError{Name: ErrQueryEvaluation, Cause: fmt.Sprintf("The Fail state's Error and Cause must be strings, got %s", compactJSON(v))}
			}
			*p.dst = s
		}
		return nil, "", e
	case "Choice":
		for i, c := range j.conditions {
			v, serr := c.eval(env)
			if serr != nil {
				return nil, "", serr
			}
			b, ok := v.(bool)
			if !ok {
				return nil, "", &stateError{Name: ErrQueryEvaluation, Cause: fmt.Sprintf("The Condition of Choices[%d] must be a boolean, got %s", i, compactJSON(v))}
			}
			if b {
				output := j.ruleOutput[i]
				if output == nil {
					output = j.output
				}
				out, serr := finish(j.ruleAssign[i], output, input)
				return out, j.ruleNext[i], serr
			}
		}
		if st.defaultNext == "" {
			return nil, "", &stateError{Name: ErrNoChoiceMatched, Cause: fmt.Sprintf("No Choice matched in state '%s' and there is no Default", st.name)}
		}
		out, serr := finish(j.assign, j.output, input)
		return out, st.defaultNext, serr
	case "Wait":
		w := *st
		if j.seconds != nil || j.timestamp != nil {
			w.waitSeconds, w.waitTimestamp = nil, nil
			if j.seconds != nil {
				v, serr := j.seconds.eval(env)
				if serr != nil {
					return nil, "", serr
				}
				n, ok := asInt(v)
				if !ok || n < 0 {
					return nil, "", &stateError{Name: ErrQueryEvaluation, Cause: fmt.Sprintf("The Seconds of a Wait state must be a non-negative integer, got %s", compactJSON(v))}
				}
				sec := float64(n)
				w.waitSeconds = &sec
			} else {
				v, serr := j.timestamp.eval(env)
				if serr != nil {
					return nil, "", serr
				}
				s, _ := v.(string)
				ts, err := parseTimestamp(s)
				if err != nil {
					return nil, "", &stateError{Name: ErrQueryEvaluation, Cause: fmt.Sprintf("The Timestamp of a Wait state must be an RFC 3339 timestamp, got %s", compactJSON(v))}
				}
				w.waitTimestamp = &ts
			}
		}
		if serr := f.wait(ctx, &w, input, ctxObj); serr != nil {
			return nil, "", serr
		}
		out, serr := finish(j.assign, j.output, input)
		return out, st.next, serr
	case "Task", "Parallel":
		args, serr := evalOr(j.arguments, input)
		if serr != nil {
			return f.jsonataCatch(st, env, serr, finish)
		}
		return f.jsonataTask(ctx, st, env, finish, func() (any, *stateError) {
			if st.typ == "Task" {
				return f.task(ctx, st, args)
			}
			return f.parallel(ctx, st, args, ctxObj)
		})
	case "Map":
		itemsV, serr := evalOr(j.items, input)
		if serr != nil {
			return f.jsonataCatch(st, env, serr, finish)
		}
		items, ok := itemsV.([]any)
		if !ok {
			return f.jsonataCatch(st, env, &stateError{Name: ErrQueryEvaluation, Cause: fmt.Sprintf("The Items of Map state '%s' must be an array, got %s", st.name, compactJSON(itemsV))}, finish)
		}
		if j.itemSelector != nil {
			base, _ := env.states["context"].(map[string]any)
			selected := make([]any, len(items))
			for i, item := range items {
				c := make(map[string]any, len(base)+1)
				for k, v := range base {
					c[k] = v
				}
				c["Map"] = map[string]any{"Item": map[string]any{"Index": int64(i), "Value": item}}
				ienv := &jenv{states: map[string]any{"input": input, "context": c}, vars: env.vars}
				if selected[i], serr = j.itemSelector.eval(ienv); serr != nil {
					return f.jsonataCatch(st, env, serr, finish)
				}
			}
			items = selected
		}
		return f.jsonataTask(ctx, st, env, finish, func() (any, *stateError) {
			return f.mapState(ctx, st, items, ctxObj)
		})
	}
	return nil, "", runtimeErr("the state type %s is not run with JSONata", st.typ)
}

// jsonataTask runs a JSONata Task, Parallel or Map state's work with its
// retriers and catchers.
func (f *frame) jsonataTask(ctx context.Context, st *state, env *jenv, finish func(assign, output *jexpr, def any) (any, *stateError), work func() (any, *stateError)) (any, string, *stateError) {
	for {
		res, serr := work()
		if ctx.Err() != nil {
			return nil, "", errStopped
		}
		if serr == nil {
			env.states["result"] = res
			out, serr := finish(st.jx.assign, st.jx.output, res)
			if serr == nil {
				return out, st.next, nil
			}
			return f.jsonataCatch(st, env, serr, finish)
		}
		if serr.terminal() {
			return nil, "", serr
		}
		if d, ok := f.retry(st, serr); ok {
			f.stamp = time.Time{}
			f.update(func(cp *frameCP) {
				cp.Token, cp.Invoked, cp.TaskStart, cp.Children = "", false, time.Time{}, nil
			})
			if sleep(ctx, f.x.e.clk, d) != nil {
				return nil, "", errStopped
			}
			continue
		}
		return f.jsonataCatch(st, env, serr, finish)
	}
}

// jsonataCatch hands an error to the first matching Catcher: its Output
// (by default the error output {Error, Cause}) and its Assign.
func (f *frame) jsonataCatch(st *state, env *jenv, serr *stateError, finish func(assign, output *jexpr, def any) (any, *stateError)) (any, string, *stateError) {
	f.assigned = nil
	if serr.terminal() {
		return nil, "", serr
	}
	for i, c := range st.catch {
		if !serr.matches(c.errorEquals) {
			continue
		}
		errOut := map[string]any{"Error": serr.Name, "Cause": serr.Cause}
		delete(env.states, "result")
		env.states["errorOutput"] = errOut
		out, perr := finish(st.jx.catchAssign[i], st.jx.catchOutput[i], errOut)
		if perr != nil {
			return nil, "", perr
		}
		return out, c.next, nil
	}
	return nil, "", serr
}
