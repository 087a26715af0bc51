package orient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// FamilyHTTP is the source family that GETs allow-listed HTTP endpoints.
const FamilyHTTP = "http"

// HTTPPredicate is an http rule's predicate: the URLs to GET, one job each.
type HTTPPredicate struct {
	URLs []string `json:"urls"`
	// MaxBytes caps a response body (default and ceiling MaxHTTPBytes).
	MaxBytes int `json:"max_bytes,omitempty"`
}

// MaxHTTPBytes is the largest response body an http job accepts.
const MaxHTTPBytes = 256 << 10

// HTTP is the http source family. A URL is fetched only when it starts with
// one of Allow (the operator's list) and, at Plan, one of the pinned
// profile's limits.http_allow. Redirects are refused, not followed.
type HTTP struct {
	Client *http.Client
	Allow  []string
	// Credentials gives the URL to GET for a job's redacted URL (a URL's
	// credentials never reach a profile, a job or a fact). Nil: a job's URL
	// is fetched as it is, and one carrying a marker is refused.
	Credentials *URLCredentials
}

var _ Source = HTTP{}

func allowed(url string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(url, p) {
			return true
		}
	}
	return false
}

// Jobs returns one job per allowed URL, in the predicate's order; a URL
// outside either allow list is dropped (reason not_allowed).
func (h HTTP) Jobs(_ context.Context, w Wave, r ora.AttentionRule) ([]Job, error) {
	var p HTTPPredicate
	if err := predicate(r, &p); err != nil {
		return nil, err
	}
	if p.MaxBytes < 0 || p.MaxBytes > MaxHTTPBytes {
		return nil, ora.Invalid("rules."+r.ID+".predicate.max_bytes", "%d is outside 0..%d", p.MaxBytes, MaxHTTPBytes)
	}
	var jobs []Job
	for _, u := range p.URLs {
		if !allowed(u, h.Allow) || !allowed(u, w.Limits.HTTPAllow) {
			w.drop(DropNotAllowed, 1)
			continue
		}
		jobs = append(jobs, Job{Kind: "get", Target: u, Params: Params{AsOf: w.AsOf, Limit: 1, MaxBytes: p.MaxBytes}})
	}
	return jobs, nil
}

// ErrRedirect is the error an http job's client returns on a redirect.
var ErrRedirect = errors.New("redirect refused")

func (h HTTP) client() *http.Client {
	c := http.Client{Timeout: 30 * time.Second}
	if h.Client != nil {
		c = *h.Client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return ErrRedirect }
	return &c
}

// Observe GETs the job's URL (the context carries the job's timeout) and
// makes one fact of a 2xx answer. A redirect, a non-2xx status or a body over
// the cap is an error: EINVALID (not retried) for those, ETRANSIENT for
// network failures and 5xx/429.
func (h HTTP) Observe(ctx context.Context, _ Wave, j Job) ([]ora.Fact, error) {
	if !allowed(j.Target, h.Allow) {
		return nil, ora.Invalid("job.target", "%q is not allow-listed", j.Target)
	}
	limit := j.Params.MaxBytes
	if limit == 0 {
		limit = MaxHTTPBytes
	}
	target, ok := h.Credentials.Real(j.Target)
	if !ok {
		return nil, ora.Invalid("job.target", "%s: this process does not hold the credential its marker stands for (it is kept in memory only, from the profile or proposal that carried it: write that version again)", j.Target)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, ora.Invalid("job.target", "%s is not a URL", j.Target)
	}
	resp, err := h.client().Do(req)
	if err != nil {
		if errors.Is(err, ErrRedirect) {
			return nil, ora.Invalid("job.target", "%s answered with a redirect, which is refused", j.Target)
		}
		// The client's error names the URL it was given: the real one.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, ora.Errorf(ora.ETRANSIENT, "get %s: %v", j.Target, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, ora.Errorf(ora.ETRANSIENT, "get %s: status %d", j.Target, resp.StatusCode)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, ora.Invalid("job.target", "get %s: status %d", j.Target, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return nil, ora.Errorf(ora.ETRANSIENT, "read %s: %v", j.Target, err)
	}
	if len(b) > limit {
		return nil, ora.Invalid("job.target", "the response of %s is over %d bytes", j.Target, limit)
	}
	n := map[string]any{"url": j.Target, "status": resp.StatusCode, "content_type": resp.Header.Get("Content-Type")}
	if json.Valid(b) {
		n["body"] = json.RawMessage(b)
	} else {
		n["text"] = string(b)
	}
	nb, err := json.Marshal(n)
	if err != nil {
		return nil, ora.Errorf(ora.EINTERNAL, "encode fact: %v", err)
	}
	return []ora.Fact{{
		SourceRef:  "http:" + j.Target,
		Provenance: map[string]string{"store": "http", "url": j.Target, "digest": ora.Digest(b), "novel": "true"},
		Normalized: nb,
		DedupeKey:  fmt.Sprintf("http:%s@%s", j.Target, ora.Digest(b)),
		CreatedAt:  j.Params.AsOf.UTC(),
	}}, nil
}
