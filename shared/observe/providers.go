package observe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// GitHubReplayWindow bounds replays of a GitHub delivery. GitHub signs the
// body alone: the delivery id and the event header are not signed, and there
// is no timestamp, so one captured body can be re-sent with any new delivery
// id. A GitHub signal's dedup key is therefore the body's digest within a
// window: the same body delivered again within at least GitHubReplayWindow
// (at most twice that) is a duplicate, answered with the first delivery's
// ids, whatever delivery id it carries. The window covers the three days
// GitHub lets a delivery be redelivered from its settings page.
const GitHubReplayWindow = 72 * time.Hour

// Plausible provider timestamps: a provider's unix-seconds time (Slack's
// event_time, Stripe's created) before earliestProviderTime or more than
// providerTimeAhead after the delivery arrived is in another unit (Slack's
// documented examples carry microseconds) or wrong. The signal then takes the
// receive time, and the entry keeps the provider's value in its meta under
// MetaProviderTimestamp.
var earliestProviderTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

const providerTimeAhead = 24 * time.Hour

// MetaProviderTimestamp is the signal-received entry's meta key holding a
// provider timestamp that was not used because it was implausible (its raw
// text, e.g. "1515449522000016").
const MetaProviderTimestamp = "provider_timestamp"

// formContentType is the content type of GitHub's default deliveries, of
// Slack's slash commands and of its interactive payloads.
const formContentType = "application/x-www-form-urlencoded"

func isForm(contentType string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(contentType)), formContentType)
}

// extra is what normalizing a delivery learns beside the signal: meta for its
// entry, and the dedup keys the same signal may have been captured under
// earlier (GitHub's previous replay window).
type extra struct {
	meta    map[string]string
	earlier []string
}

// webhookBody is a decoded delivery body.
type webhookBody struct {
	fields  map[string]any // the JSON object (numbers as json.Number)
	payload []byte         // the signal's payload: the JSON object's bytes
	// form is set for a form-encoded body; interactive when its JSON came
	// from the payload field of a Slack form (an interaction).
	form, interactive bool
}

// decodeWebhookBody decodes a delivery body: one JSON object, or a form.
// A GitHub form carries the JSON in its payload field; a Slack form is a
// slash command (its fields become the object) or an interaction (the JSON in
// its payload field). Errors: EINVALID on "body".
func decodeWebhookBody(provider, contentType string, body []byte) (webhookBody, error) {
	if !isForm(contentType) || (provider != TypeGitHub && provider != TypeSlack) {
		var b webhookBody
		if err := decodeObject(body, &b.fields); err != nil {
			return b, err
		}
		b.payload = body
		return b, nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return webhookBody{}, ora.Invalid("body", "malformed form body: %v", err)
	}
	b := webhookBody{form: true}
	if form.Has("payload") {
		p := []byte(form.Get("payload"))
		if err := jsonSyntax("body.payload", p); err != nil {
			return b, err
		}
		if err := decodeObject(p, &b.fields); err != nil {
			return b, ora.Invalid("body.payload", "must be one JSON object")
		}
		b.payload, b.interactive = p, provider == TypeSlack
		return b, nil
	}
	if provider == TypeGitHub {
		return b, ora.Invalid("body", "a form-encoded GitHub delivery carries its JSON in the payload field, and this one has none")
	}
	b.fields = map[string]any{}
	for k := range form {
		b.fields[k] = form.Get(k)
	}
	b.payload, _ = json.Marshal(b.fields)
	return b, nil
}

// jsonSyntax requires b to be JSON, naming the byte offset of a syntax error.
// Errors: EINVALID on field.
func jsonSyntax(field string, b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return ora.Invalid(field, "not JSON: %v at byte offset %d", syn, syn.Offset)
		}
		return ora.Invalid(field, "not JSON: %v", err)
	}
	return nil
}

// decodeObject requires b to be one JSON object; numbers stay json.Number.
func decodeObject(b []byte, v *map[string]any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil || *v == nil {
		return ora.Invalid("body", "must be a JSON object")
	}
	if dec.More() {
		return ora.Invalid("body", "must be one JSON object")
	}
	return nil
}

func str(m map[string]any, k string) string { v, _ := m[k].(string); return v }

// providerTime reads the unix-seconds timestamp m[k]. ok is false when it
// is absent; when it is present but implausible (see earliestProviderTime),
// t is zero and raw is its text.
func providerTime(m map[string]any, k string, received time.Time) (t time.Time, raw string, ok bool) {
	n, isNum := m[k].(json.Number)
	if !isNum {
		return time.Time{}, "", false
	}
	sec, err := n.Int64()
	if err != nil {
		// A fraction (its part of a second is dropped), or out of int64's range.
		f, ferr := n.Float64()
		if ferr != nil || f < 0 || f > 1e15 {
			return time.Time{}, n.String(), true
		}
		sec = int64(f)
	}
	if sec < earliestProviderTime.Unix() || sec > received.Add(providerTimeAhead).Unix() {
		return time.Time{}, n.String(), true
	}
	return time.Unix(sec, 0), "", true
}

// githubEventKeys are the top-level keys GitHub's payload of an event always
// has, for the events whose body shows what they are. A delivery whose
// X-GitHub-Event (unsigned) names one of these must carry its keys in the
// signed body; the header of any other event (ping among them) is taken as it
// is, unsigned (docs/providers.md says so). Order matters for
// guessGitHubEvent: the more specific first.
var githubEventKeys = []struct {
	event string
	keys  []string
}{
	{"push", []string{"ref", "commits"}},
	{"issue_comment", []string{"issue", "comment"}},
	{"pull_request_review_comment", []string{"pull_request", "comment"}},
	{"pull_request_review", []string{"pull_request", "review"}},
	{"pull_request", []string{"pull_request", "number"}},
	{"issues", []string{"issue"}},
	{"release", []string{"release"}},
	{"workflow_run", []string{"workflow_run"}},
	{"workflow_job", []string{"workflow_job"}},
	{"check_run", []string{"check_run"}},
	{"check_suite", []string{"check_suite"}},
}

// checkGitHubEvent refuses an X-GitHub-Event the signed body contradicts.
// Errors: EINVALID on the header.
func checkGitHubEvent(event string, body map[string]any) error {
	for _, e := range githubEventKeys {
		if e.event != event {
			continue
		}
		for _, k := range e.keys {
			if _, ok := body[k]; !ok {
				return ora.Invalid("header."+headerGitHubEvent, "%q does not match the signed body: a %s payload has %s, this one has no %q",
					event, event, strings.Join(e.keys, ", "), k)
			}
		}
	}
	return nil
}

// guessGitHubEvent names the event of a GitHub payload from its keys (ping
// when nothing matches).
func guessGitHubEvent(body []byte) string {
	var b map[string]any
	if decodeObject(body, &b) != nil {
		if form, err := url.ParseQuery(string(body)); err == nil && form.Has("payload") {
			_ = decodeObject([]byte(form.Get("payload")), &b)
		}
	}
	for _, e := range githubEventKeys {
		if checkGitHubEvent(e.event, b) == nil {
			return e.event
		}
	}
	return "ping"
}

// GitHubDedupKey is the dedup key of a GitHub delivery of body received at
// at: "body:<sha256 of the body>@<start of the GitHubReplayWindow holding at>".
func GitHubDedupKey(body []byte, at time.Time) string {
	return fmt.Sprintf("body:%s@%s", ora.Digest(body), at.UTC().Truncate(GitHubReplayWindow).Format(time.RFC3339))
}

// slackForm names a Slack form-encoded signal: a slash command's event type
// is slash_command.<command without its slash>, an interaction's
// interactive.<type>; the dedup key is the interaction's trigger_id and
// action ids (action_id@action_ts of each action), whichever it has.
func slackForm(b webhookBody) (eventType, dedupKey string) {
	if !b.interactive {
		cmd := strings.TrimPrefix(str(b.fields, "command"), "/")
		if cmd == "" {
			return "", str(b.fields, "trigger_id")
		}
		return "slash_command." + cmd, str(b.fields, "trigger_id")
	}
	var parts []string
	if id := str(b.fields, "trigger_id"); id != "" {
		parts = append(parts, id)
	}
	if actions, ok := b.fields["actions"].([]any); ok {
		for _, a := range actions {
			if m, ok := a.(map[string]any); ok && str(m, "action_id") != "" {
				parts = append(parts, str(m, "action_id")+"@"+str(m, "action_ts"))
			}
		}
	}
	if v, ok := b.fields["view"].(map[string]any); ok && len(parts) == 0 && str(v, "id") != "" {
		parts = append(parts, "view:"+str(v, "id")+"@"+str(v, "hash"))
	}
	t := str(b.fields, "type")
	if t == "" {
		t = "unknown"
	}
	return "interactive." + t, strings.Join(parts, "/")
}

// slackSSLCheck reports whether a Slack request is its certificate check
// (ssl_check=1, sent unsigned to slash command URLs): answered 200, nothing
// captured.
func slackSSLCheck(header http.Header, body []byte) bool {
	if !isForm(header.Get("Content-Type")) {
		return false
	}
	form, err := url.ParseQuery(string(body))
	return err == nil && form.Get("ssl_check") == "1" && !form.Has("command") && !form.Has("payload")
}
