package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/ora"
)

// DefaultResourceServer is the Cognito resource server identifier that
// prefixes ora's scopes in access tokens ("ora/ora.approve").
const DefaultResourceServer = "ora"

// Handler serves API Gateway HTTP API (payload 2.0) requests through ora's
// HTTP API, authorizing with the JWT API Gateway already verified.
type Handler struct {
	api http.Handler
}

// New returns a Handler over the ledger's entries, the waves and the
// verdicts. The read routes require scope orientation.read, approve and
// reject ora.approve; scopes count bare or prefixed with resourceServer + "/".
// opts set the optional parts of the server: the operator, the motor and the
// orientation routes.
func New(entries httpapi.Entries, waves httpapi.Waves, verdicts httpapi.Verdicts, resourceServer string, logger *slog.Logger, opts ...func(*httpapi.Server)) *Handler {
	s := &httpapi.Server{
		Entries:   entries,
		Waves:     waves,
		Verdicts:  verdicts,
		Authorize: JWTAuthorizer(resourceServer),
		ReadAuth:  true,
		Logger:    logger,
		Namespace: JWTNamespace,
	}
	for _, o := range opts {
		o(s)
	}
	for _, o := range opts {
		o(s) // the operator's and the motor's routes
	}
	return &Handler{api: s.Handler()}
}

// NamespaceClaim is the access token claim that names the caller's
// namespace (seed 002 §11.2); a token without it is in "main".
const NamespaceClaim = "ora_namespace"

// JWTNamespace returns the namespace of the verified token's NamespaceClaim,
// or "main".
func JWTNamespace(r *http.Request) string {
	if t, ok := r.Context().Value(claimsKey{}).(jwt); ok && t.claims[NamespaceClaim] != "" {
		return t.claims[NamespaceClaim]
	}
	return "main"
}

// Handle serves one request. It never returns an error: an event that makes
// no HTTP request (a body flagged base64 that is not) is answered 400, and
// every API error is a response with its status.
func (h *Handler) Handle(ctx context.Context, in events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	req, err := toRequest(ctx, in)
	if err != nil {
		return jsonResponse(http.StatusBadRequest, ora.ErrorMessage(err)), nil
	}
	w := &responseWriter{header: http.Header{}}
	h.api.ServeHTTP(w, req)
	return w.response(), nil
}

type claimsKey struct{}

// jwt is what API Gateway's JWT authorizer verified.
type jwt struct {
	claims map[string]string
	scopes []string
}

func toRequest(ctx context.Context, in events.APIGatewayV2HTTPRequest) (*http.Request, error) {
	body := []byte(in.Body)
	if in.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(in.Body)
		if err != nil {
			return nil, ora.Invalid("body", "isBase64Encoded is set but the body is not base64: %v", err)
		}
		body = b
	}
	method := in.RequestContext.HTTP.Method
	if method == "" {
		return nil, ora.Invalid("requestContext.http.method", "required")
	}
	path := in.RawPath
	if path == "" {
		path = in.RequestContext.HTTP.Path
	}
	target := path
	if in.RawQueryString != "" {
		target += "?" + in.RawQueryString
	}
	if a := in.RequestContext.Authorizer; a != nil && a.JWT != nil {
		ctx = context.WithValue(ctx, claimsKey{}, jwt{claims: a.JWT.Claims, scopes: a.JWT.Scopes})
	}
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return nil, ora.Invalid("rawPath", "%q does not make a request: %v", path, err)
	}
	for k, v := range in.Headers {
		req.Header.Set(k, v)
	}
	if len(in.Cookies) > 0 {
		req.Header.Set("Cookie", strings.Join(in.Cookies, "; "))
	}
	if req.Header.Get("X-Request-Id") == "" && in.RequestContext.RequestID != "" {
		req.Header.Set("X-Request-Id", in.RequestContext.RequestID)
	}
	req.Host = in.RequestContext.DomainName
	req.RemoteAddr = in.RequestContext.HTTP.SourceIP
	req.ContentLength = int64(len(body))
	return req, nil
}

// JWTAuthorizer returns an httpapi.Authorizer over the JWT API Gateway
// verified: the scopes are the authorizer's scopes and the "scope" claim
// split on spaces, each counting bare ("ora.approve") or prefixed with
// resourceServer ("ora/ora.approve"); the principal is the "sub" claim, else
// "client_id". Errors: EUNAUTHORIZED (no verified JWT, or no subject),
// EFORBIDDEN (the scope is missing).
func JWTAuthorizer(resourceServer string) httpapi.Authorizer {
	prefix := resourceServer + "/"
	return func(r *http.Request, scope string) (string, error) {
		t, ok := r.Context().Value(claimsKey{}).(jwt)
		if !ok || len(t.claims) == 0 {
			return "", ora.Errorf(ora.EUNAUTHORIZED, "a verified access token is required")
		}
		principal := t.claims["sub"]
		if principal == "" {
			principal = t.claims["client_id"]
		}
		if principal == "" {
			return "", ora.Errorf(ora.EUNAUTHORIZED, "the access token names no subject (sub or client_id)")
		}
		held := append(slices.Clone(t.scopes), strings.Fields(t.claims["scope"])...)
		for _, s := range held {
			if s == scope || resourceServer != "" && s == prefix+scope {
				return principal, nil
			}
		}
		return "", ora.Errorf(ora.EFORBIDDEN, "the access token lacks scope %s", scope)
	}
}

// responseWriter collects the API's response for API Gateway.
type responseWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *responseWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

func (w *responseWriter) response() events.APIGatewayV2HTTPResponse {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	out := events.APIGatewayV2HTTPResponse{StatusCode: w.status, Headers: map[string]string{}}
	for k, v := range w.header {
		if http.CanonicalHeaderKey(k) == "Set-Cookie" {
			out.Cookies = append(out.Cookies, v...)
			continue
		}
		out.Headers[k] = strings.Join(v, ", ")
	}
	if b := w.body.Bytes(); utf8.Valid(b) {
		out.Body = string(b)
	} else {
		out.Body, out.IsBase64Encoded = base64.StdEncoding.EncodeToString(b), true
	}
	return out
}

func jsonResponse(status int, msg string) events.APIGatewayV2HTTPResponse {
	w := &responseWriter{header: http.Header{"Content-Type": {"application/json"}}, status: status}
	b, _ := json.Marshal(map[string]string{"error": msg})
	w.body.Write(append(b, '\n'))
	return w.response()
}
