// Package apigw lets ora's HTTP Lambda functions (api, observe-webhook)
// serve both API profiles of the stack: the HTTP API (API Gateway v2,
// payload format 2.0, JWT authorizer) and the REST API of the LocalStack
// profile (API Gateway v1, CDK context ora:api=rest, Lambda proxy payload
// 1.0, a Lambda TOKEN authorizer). Dispatch reads the event's shape and
// hands the handler a 2.0 request either way; Authorizer is the TOKEN
// authorizer, verifying the HS256 bearer tokens of shared/apitoken.
package apigw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/ora-runtime/ora/shared/apitoken"
	"github.com/ora-runtime/ora/shared/ora"
)

// HTTPHandler serves one API Gateway payload 2.0 request.
type HTTPHandler func(ctx context.Context, in events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// shape is what Dispatch reads of an event to tell its kind.
type shape struct {
	Version    string `json:"version"`
	HTTPMethod string `json:"httpMethod"`
	Type       string `json:"type"`
	MethodArn  string `json:"methodArn"`
}

// Dispatch returns a Lambda handler that serves a payload 2.0 event with h,
// a payload 1.0 (REST API proxy) event with h through V1Request and
// V1Response, and, when auth is not nil, a TOKEN authorizer event with auth.
// Errors: an event of none of these shapes.
func Dispatch(h HTTPHandler, auth *Authorizer) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var s shape
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("apigw: event is not a JSON object: %w", err)
		}
		switch {
		case s.Type == "TOKEN" && s.MethodArn != "":
			if auth == nil {
				return nil, errors.New("apigw: an authorizer event, but this function has no token key (ORA_API_TOKEN_SECRET_ARN)")
			}
			var in events.APIGatewayCustomAuthorizerRequest
			if err := json.Unmarshal(raw, &in); err != nil {
				return nil, fmt.Errorf("apigw: authorizer event: %w", err)
			}
			return auth.Handle(ctx, in)
		case s.Version == "2.0":
			var in events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal(raw, &in); err != nil {
				return nil, fmt.Errorf("apigw: payload 2.0 event: %w", err)
			}
			return h(ctx, in)
		case s.HTTPMethod != "":
			var in events.APIGatewayProxyRequest
			if err := json.Unmarshal(raw, &in); err != nil {
				return nil, fmt.Errorf("apigw: payload 1.0 event: %w", err)
			}
			out, err := h(ctx, V1Request(in))
			if err != nil {
				return nil, err
			}
			return V1Response(out), nil
		}
		return nil, errors.New("apigw: the event is neither an API Gateway request (payload 1.0 or 2.0) nor a TOKEN authorizer call")
	}
}

// V1Request converts a REST API proxy request (payload 1.0) to the 2.0
// shape ora's handlers read. The authorizer's context (what Authorizer put
// there: sub, scope, ora_namespace) becomes the request's JWT claims, so
// the api function's scope checks read them as they read a verified JWT's.
func V1Request(in events.APIGatewayProxyRequest) events.APIGatewayV2HTTPRequest {
	out := events.APIGatewayV2HTTPRequest{
		Version:         "2.0",
		RawPath:         in.Path,
		Headers:         map[string]string{},
		PathParameters:  in.PathParameters,
		Body:            in.Body,
		IsBase64Encoded: in.IsBase64Encoded,
	}
	out.RequestContext.RequestID = in.RequestContext.RequestID
	out.RequestContext.DomainName = in.RequestContext.DomainName
	out.RequestContext.Stage = in.RequestContext.Stage
	out.RequestContext.HTTP.Method = in.HTTPMethod
	out.RequestContext.HTTP.Path = in.Path
	out.RequestContext.HTTP.SourceIP = in.RequestContext.Identity.SourceIP
	for k, v := range in.Headers {
		out.Headers[strings.ToLower(k)] = v
	}
	for k, vs := range in.MultiValueHeaders {
		out.Headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	q := url.Values{}
	for k, v := range in.QueryStringParameters {
		q.Set(k, v)
	}
	for k, vs := range in.MultiValueQueryStringParameters {
		q[k] = vs
	}
	out.RawQueryString = q.Encode()
	if len(in.RequestContext.Authorizer) > 0 {
		claims := map[string]string{}
		for k, v := range in.RequestContext.Authorizer {
			if s, ok := v.(string); ok {
				claims[k] = s
			}
		}
		if claims["sub"] == "" {
			claims["sub"] = claims["principalId"]
		}
		delete(claims, "principalId")
		out.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims},
		}
	}
	return out
}

// V1Response converts a 2.0 response to the REST API proxy's shape; cookies
// become Set-Cookie headers.
func V1Response(in events.APIGatewayV2HTTPResponse) events.APIGatewayProxyResponse {
	out := events.APIGatewayProxyResponse{
		StatusCode:      in.StatusCode,
		Headers:         in.Headers,
		Body:            in.Body,
		IsBase64Encoded: in.IsBase64Encoded,
	}
	if len(in.MultiValueHeaders) > 0 || len(in.Cookies) > 0 {
		out.MultiValueHeaders = map[string][]string{}
		for k, vs := range in.MultiValueHeaders {
			out.MultiValueHeaders[k] = vs
		}
		if len(in.Cookies) > 0 {
			out.MultiValueHeaders["Set-Cookie"] = in.Cookies
		}
	}
	return out
}

// Authorizer is the REST API's Lambda TOKEN authorizer: it verifies the
// bearer token (shared/apitoken) under the key Key returns and answers
// with a policy allowing the whole API stage and a context of the token's
// claims (sub, scope, ora_namespace). API Gateway caches the answer per
// token, so the policy does not depend on the route; each route's scope is
// checked by the api function from that context, as on the HTTP API.
type Authorizer struct {
	// Key returns the signing key (SecretKey reads it from Secrets Manager).
	Key func(ctx context.Context) ([]byte, error)
	// Now returns the current time; tests replace it. Default time.Now.
	Now func() time.Time
}

// ErrUnauthorized is the error API Gateway turns into a 401: its message
// must be exactly "Unauthorized".
var ErrUnauthorized = errors.New("Unauthorized")

// Handle answers one TOKEN authorizer call. Errors: ErrUnauthorized for a
// missing, malformed, forged or expired token (API Gateway answers 401);
// the key's error when it cannot be read (API Gateway answers 500).
func (a *Authorizer) Handle(ctx context.Context, in events.APIGatewayCustomAuthorizerRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
	token, ok := strings.CutPrefix(in.AuthorizationToken, "Bearer ")
	if !ok || token == "" {
		return events.APIGatewayCustomAuthorizerResponse{}, ErrUnauthorized
	}
	key, err := a.Key(ctx)
	if err != nil {
		return events.APIGatewayCustomAuthorizerResponse{}, fmt.Errorf("apigw: read the token key: %w", err)
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	c, err := apitoken.Verify(key, token, now())
	if err != nil {
		return events.APIGatewayCustomAuthorizerResponse{}, ErrUnauthorized
	}
	stage, err := StageARN(in.MethodArn)
	if err != nil {
		return events.APIGatewayCustomAuthorizerResponse{}, ErrUnauthorized
	}
	ctxOut := map[string]any{"sub": c.Subject, "scope": c.Scope}
	if c.Namespace != "" {
		ctxOut["ora_namespace"] = c.Namespace
	}
	return events.APIGatewayCustomAuthorizerResponse{
		PrincipalID: c.Subject,
		PolicyDocument: events.APIGatewayCustomAuthorizerPolicy{
			Version: "2012-10-17",
			Statement: []events.IAMPolicyStatement{{
				Action: []string{"execute-api:Invoke"}, Effect: "Allow", Resource: []string{stage + "/*"},
			}},
		},
		Context: ctxOut,
	}, nil
}

// StageARN returns the stage part of a method ARN
// (arn:<partition>:execute-api:<region>:<account>:<api>/<stage>/<METHOD>/<path>):
// arn:...:<api>/<stage>. Errors: EINVALID for anything else.
func StageARN(methodArn string) (string, error) {
	parts := strings.SplitN(methodArn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "execute-api" {
		return "", ora.Invalid("methodArn", "%q is not an execute-api ARN", methodArn)
	}
	path := strings.SplitN(parts[5], "/", 3)
	if len(path) < 2 || path[0] == "" || path[1] == "" {
		return "", ora.Invalid("methodArn", "%q names no API and stage", methodArn)
	}
	return strings.Join(parts[:5], ":") + ":" + path[0] + "/" + path[1], nil
}

// SecretsAPI is the part of Secrets Manager SecretKey calls.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// SecretKey reads the token signing key from a Secrets Manager secret (its
// SecretString) and keeps it for TTL, so a rotated key is used within TTL.
type SecretKey struct {
	Client SecretsAPI
	ARN    string
	TTL    time.Duration

	mu   sync.Mutex
	key  []byte
	read time.Time
}

// Key returns the key, reading the secret when the copy is older than TTL.
func (s *SecretKey) Key(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != nil && time.Since(s.read) < s.TTL {
		return s.key, nil
	}
	out, err := s.Client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(s.ARN)})
	if err != nil {
		return nil, fmt.Errorf("get secret %s: %w", s.ARN, err)
	}
	s.key, s.read = []byte(aws.ToString(out.SecretString)), time.Now()
	return s.key, nil
}
