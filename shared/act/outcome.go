package act

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"syscall"

	"github.com/ora-runtime/ora/shared/ora"
)

// OutcomeCase is one row of the http.request outcome table: what happened to
// a request, and the outcome it is recorded with.
type OutcomeCase struct {
	Case    string // what happened
	Outcome string // OutcomeSuccess, OutcomeFailure or OutcomeUnknown
	Why     string // why that outcome is the truth
}

// Outcomes is the http.request outcome table, printed in the docs. A request
// is unknown only when it may have reached the target: a connection to it was
// made and no answer came back. Every other failure is proof that nothing
// left the process, so the action failed and may be decided again.
var Outcomes = []OutcomeCase{
	{"2xx answer", OutcomeSuccess, "the target answered that it took the request"},
	{"other answer (3xx, 4xx, 5xx)", OutcomeFailure, "the target answered; a redirect is never followed"},
	{"invalid header name or value (e.g. CR/LF from a template)", OutcomeFailure, "refused before sending"},
	{"URL or path that does not build, or leaves the connection's base URL", OutcomeFailure, "refused before sending"},
	{"unknown connection, or its secret cannot be read", OutcomeFailure, "refused before sending (a throttled secret read is retried)"},
	{"DNS failure", OutcomeFailure, "no address to connect to"},
	{"connection refused or unreachable", OutcomeFailure, "no connection was made"},
	{"TLS handshake failure (plain HTTP port, bad certificate)", OutcomeFailure, "the request is sent only after the handshake"},
	{"timeout before a connection was made", OutcomeFailure, "no connection was made"},
	{"timeout or connection lost after the connection was made", OutcomeUnknown, "the request may have reached the target: ask the operator"},
}

// NotSentReason names why a request that never got a connection failed: the
// Case of its row in Outcomes, or "no connection was made".
func NotSentReason(err error) string {
	var dns *net.DNSError
	var rec tls.RecordHeaderError
	var cert *tls.CertificateVerificationError
	var alert tls.AlertError
	var unknownCA x509.UnknownAuthorityError
	var host x509.HostnameError
	switch {
	case ora.ErrorCode(err) == ora.EFORBIDDEN:
		return "outside the connection's base URL"
	case errors.As(err, &dns):
		return "DNS failure"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &rec), errors.As(err, &cert), errors.As(err, &alert), errors.As(err, &unknownCA), errors.As(err, &host),
		// net/http replaces the record header error of a plain HTTP answer
		// to a TLS hello with an error of its own, unwrapped.
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "TLS handshake failure"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout before a connection was made"
	}
	return "no connection was made"
}
