package sfnapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/ora-runtime/ora/shared/stepfn"
)

// FunctionURL returns a handler that runs a Lambda function task by POSTing
// its payload to url (a local server standing in for the function: a Lambda
// function URL, a container's runtime interface emulator, a test server) and
// taking the response body as the function's result. A response other than
// 2xx fails the task: with the body's errorType and the body as the cause
// when the body is a Lambda error ({"errorType", "errorMessage"}), else with
// Lambda.ServiceException. client nil means http.DefaultClient.
func FunctionURL(url string, client *http.Client) stepfn.Handler {
	if client == nil {
		client = http.DefaultClient
	}
	return stepfn.HandlerFunc(func(ctx context.Context, payload []byte) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
		if err != nil {
			return nil, &stepfn.TaskFailure{Name: "Lambda.ServiceException", Cause: fmt.Sprintf("the function URL %s: %v", url, err)}
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return nil, &stepfn.TaskFailure{Name: "Lambda.ServiceException", Cause: fmt.Sprintf("POST %s: %v", url, err)}
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 6<<20))
		if err != nil {
			return nil, &stepfn.TaskFailure{Name: "Lambda.ServiceException", Cause: fmt.Sprintf("POST %s: read the response: %v", url, err)}
		}
		if resp.StatusCode/100 != 2 {
			var le struct {
				ErrorType    string `json:"errorType"`
				ErrorMessage string `json:"errorMessage"`
			}
			if json.Unmarshal(body, &le) == nil && le.ErrorType != "" {
				return nil, &stepfn.TaskFailure{Name: le.ErrorType, Cause: string(body)}
			}
			return nil, &stepfn.TaskFailure{Name: "Lambda.ServiceException", Cause: fmt.Sprintf("POST %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))}
		}
		if len(bytes.TrimSpace(body)) == 0 {
			body = []byte("null")
		}
		if !json.Valid(body) {
			return nil, &stepfn.TaskFailure{Name: "Lambda.ServiceException", Cause: fmt.Sprintf("POST %s: the response is not JSON", url)}
		}
		return body, nil
	})
}
