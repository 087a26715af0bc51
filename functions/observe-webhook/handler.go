package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
)

// webhooks is the observer's webhook intake.
type webhooks interface {
	Webhook(ctx context.Context, source string, header http.Header, body []byte) (observe.Receipt, error)
}

// Handler answers API Gateway HTTP API (payload 2.0) requests to POST
// /webhooks/{source}.
type Handler struct {
	Observer webhooks
	Logger   *slog.Logger // default slog.Default()
}

// Handle maps the request to Observer.Webhook and its result to a status: 202
// captured, 200 duplicate (the first delivery's ids), Slack challenge or
// endpoint check (ssl_check), 400
// malformed, 401 bad signature, 404 unknown source, 413 too large, 503
// transient, 500 anything else (logged with the request id). It never returns
// an error: API Gateway would answer 500 without a body.
func (h Handler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			return respond(http.StatusBadRequest, map[string]string{"error": "body: not valid base64"}), nil
		}
		body = b
	}
	header := http.Header{}
	for k, v := range req.Headers {
		header.Set(k, v)
	}
	rec, err := h.Observer.Webhook(ctx, req.PathParameters["source"], header, body)
	switch {
	case err != nil:
		return h.fail(ctx, req.RequestContext.RequestID, err), nil
	case rec.Challenge != "":
		return respond(http.StatusOK, map[string]string{"challenge": rec.Challenge}), nil
	case rec.Probe:
		return respond(http.StatusOK, rec), nil
	case rec.Duplicate:
		return respond(http.StatusOK, rec), nil
	}
	return respond(http.StatusAccepted, rec), nil
}

func (h Handler) fail(ctx context.Context, requestID string, err error) events.APIGatewayV2HTTPResponse {
	var tooLarge *observe.TooLargeError
	status := http.StatusInternalServerError
	switch code := ora.ErrorCode(err); {
	case errors.As(err, &tooLarge):
		status = http.StatusRequestEntityTooLarge
	case code == ora.EINVALID:
		status = http.StatusBadRequest
	case code == ora.EUNAUTHORIZED:
		status = http.StatusUnauthorized
	case code == ora.ENOTFOUND:
		status = http.StatusNotFound
	case code == ora.ETRANSIENT:
		status = http.StatusServiceUnavailable
	}
	msg := ora.ErrorMessage(err)
	if status >= 500 {
		logger := h.Logger
		if logger == nil {
			logger = slog.Default()
		}
		logger.ErrorContext(ctx, "webhook failed", "request_id", requestID, "error", err)
		msg = "internal error"
		if status == http.StatusServiceUnavailable {
			msg = "temporarily unavailable, retry"
		}
	}
	return respond(status, map[string]string{"error": msg})
}

func respond(status int, v any) events.APIGatewayV2HTTPResponse {
	b, _ := json.Marshal(v)
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers:    map[string]string{"Content-Type": "application/json"},
		Body:       string(b),
	}
}
