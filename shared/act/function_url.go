package act

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/ora-runtime/ora/shared/ora"
)

// URLFunction is a FunctionTarget that POSTs the invocation event to a URL
// (with the X-Ora-Idempotency-Key header, and X-Ora-Signature when a signing
// secret is set). A 2xx answer is success, its body the output; a 4xx is a
// *FunctionError; a 5xx, or no answer, is an unknown outcome (the function
// may have run); a request that never left (nobody listens) fails; a
// redirect is not followed and fails.
type URLFunction struct {
	URL           string
	SigningSecret string
	client        *http.Client
}

var _ FunctionTarget = (*URLFunction)(nil)

// NewURLFunction returns the target for url; client may be nil.
func NewURLFunction(url, signingSecret string, client *http.Client) *URLFunction {
	c := http.Client{}
	if client != nil {
		c = *client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &URLFunction{URL: url, SigningSecret: signingSecret, client: &c}
}

// Describe names the URL.
func (u *URLFunction) Describe() string { return "url " + u.URL }

// Invoke POSTs the event once. Errors: *FunctionError (4xx),
// *UnknownOutcomeError (5xx, no answer), EINVALID (a bad URL), another error
// when the request never left or was answered with a redirect.
func (u *URLFunction) Invoke(ctx context.Context, ev FunctionEvent, body []byte) (FunctionResult, error) {
	ctx, connected := connectedTrace(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.URL, bytes.NewReader(body))
	if err != nil {
		return FunctionResult{}, ora.Invalid("url", "%v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderIdempotencyKey, ev.IdempotencyKey)
	if u.SigningSecret != "" {
		req.Header.Set(HeaderSignature, Sign(u.SigningSecret, body))
	}
	resp, err := u.client.Do(req)
	if err != nil {
		if connected() {
			return FunctionResult{}, &UnknownOutcomeError{Err: fmt.Errorf("POST %s: %w", req.URL.Redacted(), err)}
		}
		return FunctionResult{}, fmt.Errorf("POST %s: %w", req.URL.Redacted(), err)
	}
	defer resp.Body.Close()
	out, truncated, err := readBounded(resp.Body, MaxFunctionOutput)
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		if err != nil {
			return FunctionResult{}, &UnknownOutcomeError{Err: fmt.Errorf("POST %s answered %d, then the body broke off: %w", req.URL.Redacted(), code, err)}
		}
		return FunctionResult{Output: out, Truncated: truncated, ID: strconv.Itoa(code)}, nil
	case code >= 500:
		return FunctionResult{}, &UnknownOutcomeError{Err: fmt.Errorf("POST %s answered %d: %s", req.URL.Redacted(), code, tail(out, maxFunctionError))}
	case code >= 400:
		return FunctionResult{}, &FunctionError{Function: ev.Function, Message: fmt.Sprintf("answered %d: %s", code, tail(out, maxFunctionError))}
	}
	return FunctionResult{}, fmt.Errorf("POST %s answered %d: redirects are not followed", req.URL.Redacted(), resp.StatusCode)
}

// readBounded reads at most max bytes of r and says whether more followed.
func readBounded(r io.Reader, max int) ([]byte, bool, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if len(b) > max {
		return b[:max], true, err
	}
	return b, false, err
}
