package embedded

import (
	"net/http"

	"github.com/ora-runtime/ora/shared/sfnapi"
	"github.com/ora-runtime/ora/shared/stepfn"
)

// StepFunctionsAPI returns the Step Functions API (AWS JSON 1.0) over this
// runtime, for `ora dev --sfn-listen`: the state machines a client creates
// run on an engine of their own, whose Task states take their results from
// tasks (a tasks file, as `ora statemachine run --tasks` reads it; nil for
// none) and whose Lambda functions are the URLs in functions (function name
// to URL, each called with the task's payload); ora's own state machines, the
// wave and its children, are listed and run there too, so a wave shows in
// ListExecutions and GetExecutionHistory. Call the returned func to stop the
// API's engine.
func (r *Runtime) StepFunctionsAPI(tasks stepfn.TaskScript, functions map[string]string) (http.Handler, func() error) {
	e := stepfn.NewEngine(func(o *stepfn.Options) {
		o.Tasks = tasks
		o.Logger = r.logger
	})
	for name, url := range functions {
		e.RegisterHandler(name, sfnapi.FunctionURL(url, nil))
	}
	api := sfnapi.New(e, func(o *sfnapi.Options) {
		o.Logger = r.logger
		o.Attached = []*stepfn.Engine{r.engine, r.children.e}
	})
	return api, e.Close
}
