package bedrock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ora-runtime/ora/shared/ora"
)

// Recorded Converse responses make a replay through the Bedrock reasoner
// deterministic and free: a Recorder, set as the client's HTTP client
// (ClientOptions.HTTPClient), sends each Converse call to Bedrock once and
// keeps the answer under the request's digest; a Replayer answers the same
// request from what was kept, without the network, and refuses a request
// nobody recorded. The SDK encodes and decodes the calls as it always does,
// so a replay runs the adapter's code, not a stub of it.

// RecordCommand is the command that records the golden set's responses; a
// missing recording's error names it.
const RecordCommand = "ora motor record"

// RequestDigest returns the digest a Converse request is recorded under:
// the sha256, in hex, of its canonical body, which is the JSON body as the
// SDK sent it with the model id added as "modelId" (the API's name for the
// path parameter), its object keys sorted and no insignificant space.
// Numbers keep their text. Errors: EINVALID (not a Converse call, or a body
// that is not a JSON object).
func RequestDigest(path string, body []byte) (string, []byte, error) {
	model, ok := converseModel(path)
	if !ok {
		return "", nil, ora.Invalid("bedrock.request", "%s is not a Converse call: only Converse is recorded", path)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return "", nil, ora.Invalid("bedrock.request", "the Converse body is not a JSON object: %v", err)
	}
	m["modelId"] = model
	canon, err := json.Marshal(m)
	if err != nil {
		return "", nil, ora.Invalid("bedrock.request", "the Converse body does not encode: %v", err)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), canon, nil
}

// converseModel returns the model id of a Converse call's path
// (/model/{modelId}/converse).
func converseModel(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, "/model/")
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, "/converse")
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	if u, err := url.PathUnescape(id); err == nil {
		id = u
	}
	return id, true
}

// Recording is one recorded call: the canonical request and Bedrock's
// answer as it was sent (a Converse response body), or a tool call the
// model made during a recorded decision and the tool's result (Tool set,
// ModelID empty; ToolDigest).
type Recording struct {
	Digest   string          `json:"digest"`
	ModelID  string          `json:"model_id,omitempty"`
	Tool     string          `json:"tool,omitempty"` // "<server>/<tool>"
	Request  json.RawMessage `json:"request"`
	Response json.RawMessage `json:"response"`
}

// Recordings keeps recorded calls by request digest.
type Recordings interface {
	// Recording returns the call recorded under digest. Errors: ENOTFOUND,
	// ETRANSIENT.
	Recording(ctx context.Context, digest string) (Recording, error)
}

// RecordingStore is Recordings that can also keep new calls.
type RecordingStore interface {
	Recordings
	// Keep stores r under r.Digest (again: harmless). Errors: ETRANSIENT.
	Keep(ctx context.Context, r Recording) error
}

// MissingRecording is a replayed request nobody recorded.
type MissingRecording struct {
	Digest  string
	ModelID string
}

// Error names the digest and how to record it.
func (e *MissingRecording) Error() string {
	return fmt.Sprintf("no recorded response for request digest %s (model %s): record it with `%s`", e.Digest, e.ModelID, RecordCommand)
}

// RetryableError tells the SDK's retryer not to ask again: the recordings
// will not change between attempts.
func (e *MissingRecording) RetryableError() bool { return false }

// Replayer is an HTTP client (bedrockruntime.Options.HTTPClient) that
// answers Converse calls from Recordings and sends nothing anywhere; a call
// with no recording fails with a *MissingRecording.
type Replayer struct {
	Recordings Recordings

	mu     sync.Mutex
	missed []string
}

// Missed lists the digests asked for and not found, in order.
func (p *Replayer) Missed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.missed...)
}

// Do answers req from the recordings.
func (p *Replayer) Do(req *http.Request) (*http.Response, error) {
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	digest, _, err := RequestDigest(req.URL.EscapedPath(), body)
	if err != nil {
		return nil, err
	}
	rec, err := p.Recordings.Recording(req.Context(), digest)
	if err != nil {
		if ora.ErrorCode(err) == ora.ENOTFOUND {
			p.mu.Lock()
			p.missed = append(p.missed, digest)
			p.mu.Unlock()
			model, _ := converseModel(req.URL.EscapedPath())
			return nil, &MissingRecording{Digest: digest, ModelID: model}
		}
		return nil, fmt.Errorf("bedrock: recording %s: %w", digest, err)
	}
	return replayed(req, digest, rec), nil
}

// replayed is the HTTP answer to req from its recording.
func replayed(req *http.Request, digest string, rec Recording) *http.Response {
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}, "X-Amzn-Requestid": {"replay-" + digest[:12]}},
		Body:          io.NopCloser(bytes.NewReader(rec.Response)),
		ContentLength: int64(len(rec.Response)),
		Request:       req,
	}
}

// HTTPDoer is the HTTP client a Recorder sends through
// (bedrockruntime.HTTPClient; *http.Client satisfies it).
type HTTPDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// Recorder is an HTTP client (bedrockruntime.Options.HTTPClient) that sends
// each Converse call through Next (default http.DefaultClient) and keeps
// every successful answer in Store under the request's digest.
//
// Recording from real waves sets the guards: Secrets refuses an exchange
// whose request or answer holds a registered secret, MaxBytes refuses a
// large one, and KeepOnce answers a request already recorded from the store
// (no model call) and writes a new one only where none exists (a store that
// is a RecordingCreator creates it atomically: O_EXCL, If-None-Match).
type Recorder struct {
	Next  HTTPDoer
	Store RecordingStore
	// Secrets, when set, refuses to keep an exchange holding one of its
	// values: the call answers, nothing is written, and Do returns a
	// *NotRecorded (EFORBIDDEN).
	Secrets *ora.Secrets
	// MaxBytes, when positive, refuses to keep an exchange whose request
	// and answer together are larger (a *NotRecorded, EINVALID).
	MaxBytes int
	// KeepOnce answers a recorded request from Store and never overwrites
	// a recording.
	KeepOnce bool

	mu   sync.Mutex
	kept []string
}

// RecordingCreator is a RecordingStore that can create a recording only
// where none exists.
type RecordingCreator interface {
	// Create stores r under r.Digest unless a recording is there. Errors:
	// ECONFLICT (one is), ETRANSIENT.
	Create(ctx context.Context, r Recording) error
}

// NotRecorded is an answered call the Recorder refused to keep: the answer
// is good, only the recording is missing.
type NotRecorded struct {
	Digest string
	Reason string // "secret", "size", "store" (the store failed)
	err    error
}

// Error says which call was not kept and why.
func (e *NotRecorded) Error() string { return e.err.Error() }

// Unwrap returns the domain error carrying the code.
func (e *NotRecorded) Unwrap() error { return e.err }

// RetryableError tells the SDK's retryer not to ask again.
func (e *NotRecorded) RetryableError() bool { return false }

// Kept lists the digests recorded, in order.
func (r *Recorder) Kept() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.kept...)
}

// Do sends req and records the answer.
func (r *Recorder) Do(req *http.Request) (*http.Response, error) {
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	digest, canon, err := RequestDigest(req.URL.EscapedPath(), body)
	if err != nil {
		return nil, err
	}
	model, _ := converseModel(req.URL.EscapedPath())
	if r.KeepOnce {
		if rec, err := r.Store.Recording(req.Context(), digest); err == nil {
			return replayed(req, digest, rec), nil
		} else if ora.ErrorCode(err) != ora.ENOTFOUND {
			return nil, fmt.Errorf("bedrock: recording %s: %w", digest, err)
		}
	}
	next := r.Next
	if next == nil {
		next = http.DefaultClient
	}
	resp, err := next.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("bedrock: read the answer to record: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	if !json.Valid(out) {
		return nil, ora.Errorf(ora.EINTERNAL, "bedrock: the answer to %s is not JSON: not recorded", digest)
	}
	if err := r.keep(req.Context(), Recording{Digest: digest, ModelID: model, Request: canon, Response: out}); err != nil {
		return nil, err
	}
	return resp, nil
}

// keep stores rec under the guards (size, secrets) and KeepOnce's rule.
// Errors: *NotRecorded.
func (r *Recorder) keep(ctx context.Context, rec Recording) error {
	digest, canon, out := rec.Digest, rec.Request, rec.Response
	if r.MaxBytes > 0 && len(canon)+len(out) > r.MaxBytes {
		return &NotRecorded{Digest: digest, Reason: "size", err: ora.Invalid("recording", "the exchange %s is %d bytes, over the limit of %d: not recorded", digest, len(canon)+len(out), r.MaxBytes)}
	}
	if r.Secrets != nil {
		name, found := r.Secrets.Find(canon)
		if !found {
			name, found = r.Secrets.Find(out)
		}
		if found {
			return &NotRecorded{Digest: digest, Reason: "secret", err: ora.Errorf(ora.EFORBIDDEN, "bedrock: the exchange %s holds the secret %s: not recorded", digest, name)}
		}
	}
	var err error
	if c, ok := r.Store.(RecordingCreator); ok && r.KeepOnce {
		err = c.Create(ctx, rec)
		if ora.ErrorCode(err) == ora.ECONFLICT { // another wave recorded it first
			err = nil
		}
	} else {
		err = r.Store.Keep(ctx, rec)
	}
	if err != nil { // the answer is good: asking the model again would not help
		return &NotRecorded{Digest: digest, Reason: "store", err: fmt.Errorf("bedrock: record %s: %w", digest, err)}
	}
	r.mu.Lock()
	r.kept = append(r.kept, digest)
	r.mu.Unlock()
	return nil
}

// readBody reads req's body and puts it back for the next reader.
func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("bedrock: read the request body: %w", err)
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return b, nil
}

// DirRecordings keeps recordings as files named <digest>.json in a folder
// (a golden set's recordings folder).
type DirRecordings string

var _ RecordingStore = DirRecordings("")

// Recording reads <digest>.json. Errors: ENOTFOUND, EINVALID (not a
// recording), EINTERNAL.
func (d DirRecordings) Recording(_ context.Context, digest string) (Recording, error) {
	if !validDigest(digest) {
		return Recording{}, ora.Invalid("digest", "%q is not a sha256 digest", digest)
	}
	b, err := os.ReadFile(filepath.Join(string(d), digest+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return Recording{}, ora.Errorf(ora.ENOTFOUND, "no recording %s in %s", digest, string(d))
	}
	if err != nil {
		return Recording{}, ora.Errorf(ora.EINTERNAL, "recording %s: %v", digest, err)
	}
	return ParseRecording(digest, b)
}

// Keep writes r as <digest>.json, creating the folder.
func (d DirRecordings) Keep(_ context.Context, r Recording) error {
	if !validDigest(r.Digest) {
		return ora.Invalid("digest", "%q is not a sha256 digest", r.Digest)
	}
	if err := os.MkdirAll(string(d), 0o755); err != nil {
		return ora.Errorf(ora.EINTERNAL, "recordings folder: %v", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return ora.Errorf(ora.EINTERNAL, "recording %s: %v", r.Digest, err)
	}
	if err := os.WriteFile(filepath.Join(string(d), r.Digest+".json"), append(b, '\n'), 0o644); err != nil {
		return ora.Errorf(ora.EINTERNAL, "recording %s: %v", r.Digest, err)
	}
	return nil
}

// Create writes r as <digest>.json unless that file exists: the recording
// is written to a temporary file and linked into place, so a reader never
// sees half of one. Errors: ECONFLICT (a recording exists), EINVALID,
// EINTERNAL.
func (d DirRecordings) Create(_ context.Context, r Recording) error {
	if !validDigest(r.Digest) {
		return ora.Invalid("digest", "%q is not a sha256 digest", r.Digest)
	}
	if err := os.MkdirAll(string(d), 0o755); err != nil {
		return ora.Errorf(ora.EINTERNAL, "recordings folder: %v", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return ora.Errorf(ora.EINTERNAL, "recording %s: %v", r.Digest, err)
	}
	tmp, err := os.CreateTemp(string(d), ".recording-*")
	if err != nil {
		return ora.Errorf(ora.EINTERNAL, "recording %s: %v", r.Digest, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return ora.Errorf(ora.EINTERNAL, "recording %s: %v", r.Digest, err)
	}
	if err := os.Link(tmp.Name(), filepath.Join(string(d), r.Digest+".json")); err != nil {
		if errors.Is(err, os.ErrExist) {
			return ora.Errorf(ora.ECONFLICT, "recording %s exists", r.Digest)
		}
		return ora.Errorf(ora.EINTERNAL, "recording %s: %v", r.Digest, err)
	}
	return nil
}

// ParseRecording decodes a stored recording and checks it is the one kept
// under digest. Errors: EINVALID.
func ParseRecording(digest string, b []byte) (Recording, error) {
	var r Recording
	if err := json.Unmarshal(b, &r); err != nil {
		return Recording{}, ora.Invalid("recording "+digest, "not a recording: %v", err)
	}
	if r.Digest != digest || len(r.Response) == 0 {
		return Recording{}, ora.Invalid("recording "+digest, "holds digest %q and %d response bytes: not this request's recording", r.Digest, len(r.Response))
	}
	return r, nil
}

func validDigest(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
