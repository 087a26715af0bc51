// Package orienttest builds realistic orientation packets for tests that
// measure what a model is sent: an in-memory orient.Store, and a steady-state
// ledger (many earlier waves, each with its signal, its action's evidence and
// its final verdict, and some open commitments) compiled by the real
// planner, fetcher and compiler.
package orienttest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// Store is an in-memory orient.Store: write-once entries (ECONFLICT carries
// the stored one), Recent newest first, open commitments oldest first.
type Store struct {
	mu          sync.Mutex
	entries     map[string][]ora.Entry
	commitments []ora.Commitment
}

var _ orient.Store = (*Store)(nil)

// NewStore returns an empty store.
func NewStore() *Store { return &Store{entries: map[string][]ora.Entry{}} }

// Append writes e once. Errors: EINVALID, ECONFLICT with the stored entry.
func (s *Store) Append(_ context.Context, e ora.Entry) (ora.Entry, error) {
	if e.Digest == "" {
		e.Digest = ora.Digest(e.Body)
	}
	if err := e.Validate(); err != nil {
		return ora.Entry{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.entries[e.SignalID] {
		if x.Kind == e.Kind && x.Qualifier == e.Qualifier {
			return ora.Entry{}, ora.Conflict(x, "entry %s/%s/%s exists", e.SignalID, e.Kind, e.Qualifier)
		}
	}
	s.entries[e.SignalID] = append(s.entries[e.SignalID], e)
	return e, nil
}

// Entries returns a signal's entries in the order written. Errors: ENOTFOUND.
func (s *Store) Entries(_ context.Context, signalID string) ([]ora.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	es := s.entries[signalID]
	if len(es) == 0 {
		return nil, ora.Errorf(ora.ENOTFOUND, "no entries for %s", signalID)
	}
	return append([]ora.Entry(nil), es...), nil
}

// Recent returns entries of kind created in [from, to), newest first.
func (s *Store) Recent(_ context.Context, kind ora.EntryKind, from, to time.Time, limit int) ([]ora.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ora.Entry
	for _, es := range s.entries {
		for _, e := range es {
			if e.Kind == kind && !e.CreatedAt.Before(from) && e.CreatedAt.Before(to) {
				out = append(out, e)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// OpenCommitments returns the open commitments, oldest first.
func (s *Store) OpenCommitments(_ context.Context, limit int) ([]ora.Commitment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]ora.Commitment(nil), s.commitments...)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// AddCommitment records an open commitment.
func (s *Store) AddCommitment(c ora.Commitment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commitments = append(s.commitments, c)
}

// Issue returns a GitHub "issues" webhook payload (action opened) shaped as
// GitHub documents it, with the repository and user objects that make most of
// a real delivery's size.
func Issue(n int, title, body string) json.RawMessage {
	user := map[string]any{
		"login": fmt.Sprintf("user%d", n%7), "id": 1000 + n%7, "node_id": "MDQ6VXNlcjE=", "type": "User", "site_admin": false,
		"avatar_url": "https://avatars.githubusercontent.com/u/1000?v=4", "gravatar_id": "",
		"url": "https://api.github.com/users/octocat", "html_url": "https://github.com/octocat",
		"followers_url": "https://api.github.com/users/octocat/followers", "repos_url": "https://api.github.com/users/octocat/repos",
		"events_url": "https://api.github.com/users/octocat/events{/privacy}", "received_events_url": "https://api.github.com/users/octocat/received_events",
	}
	repo := map[string]any{
		"id": 1296269, "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5", "name": "shop", "full_name": "acme/shop", "private": false,
		"owner": user, "html_url": "https://github.com/acme/shop", "description": "The shop's storefront and API",
		"fork": false, "url": "https://api.github.com/repos/acme/shop", "default_branch": "main",
		"issues_url": "https://api.github.com/repos/acme/shop/issues{/number}", "pulls_url": "https://api.github.com/repos/acme/shop/pulls{/number}",
		"created_at": "2011-01-26T19:01:12Z", "updated_at": "2026-11-20T10:00:00Z", "pushed_at": "2026-11-26T09:00:00Z",
		"stargazers_count": 80, "watchers_count": 80, "language": "Go", "forks_count": 9, "open_issues_count": 12,
		"visibility": "public", "topics": []string{"shop", "api"},
	}
	b, _ := json.Marshal(map[string]any{
		"action": "opened",
		"issue": map[string]any{
			"url":      fmt.Sprintf("https://api.github.com/repos/acme/shop/issues/%d", n),
			"html_url": fmt.Sprintf("https://github.com/acme/shop/issues/%d", n),
			"id":       2000000 + n, "node_id": "I_kwDOABCD", "number": n, "title": title, "body": body,
			"user": user, "labels": []any{}, "state": "open", "locked": false, "assignee": nil, "assignees": []any{},
			"comments": 0, "created_at": "2026-11-26T09:00:00Z", "updated_at": "2026-11-26T09:00:00Z",
			"author_association": "CONTRIBUTOR",
		},
		"repository": repo,
		"sender":     user,
	})
	return b
}

// Titles are the issues the steady state's signals report, in turn.
var Titles = []struct{ Title, Body string }{
	{"Checkout returns 500 when the cart is empty", "Steps: open /checkout with an empty cart. Expected a message; got a 500 and a stack trace in the logs."},
	{"Typo on the pricing page", "\"Anual\" should read \"Annual\" in the plan switcher."},
	{"Add dark mode to the dashboard", "Several customers asked for a dark theme; the design system has the tokens already."},
	{"Payment webhook retries twice", "Stripe retries our webhook because we answer after 12 s; we should answer first and process later."},
	{"Search is slow for long queries", "Queries over 40 characters take 3-4 s; the index is not used for the prefix match."},
}

// SteadyState builds a ledger with waves earlier signals before now (GitHub
// issues, one a minute, each labelled by an http.request that succeeded and
// closed by a completed verdict with its validators' results), three open
// commitments, and one more signal at now, and runs the real planner,
// fetcher and compiler over it under the default profile. It returns the
// store, the last signal and its packet.
func SteadyState(ctx context.Context, waves int, now time.Time) (*Store, ora.NormalizedSignal, ora.OrientationPacket, error) {
	return SteadyStateFor(ctx, waves, now, nil)
}

// SteadyStateFor is SteadyState with last as the final signal (its
// timestamp is set to now); nil means the next GitHub issue.
func SteadyStateFor(ctx context.Context, waves int, now time.Time, last *ora.NormalizedSignal) (*Store, ora.NormalizedSignal, ora.OrientationPacket, error) {
	st := NewStore()
	src := ora.Source{Type: ora.SourceWebhook, Name: "github", Provider: "github", EventType: "issues"}
	signal := func(i int, at time.Time) (ora.NormalizedSignal, error) {
		t := Titles[i%len(Titles)]
		s := ora.NormalizedSignal{
			ID: fmt.Sprintf("sig-%08d-4b1c-9a7e-%012d", 10000+i, i), Source: src, Timestamp: at, NormalizedAt: at,
			DedupKey: fmt.Sprintf("github:delivery:%d", 72000+i), Payload: Issue(100+i, t.Title, t.Body),
			RawDigest: ora.Digest([]byte(fmt.Sprint(i))),
		}
		e, err := ora.NewEntry(s.ID, ora.KindSignalReceived, "", s)
		if err != nil {
			return s, err
		}
		e.CreatedAt = at
		_, err = st.Append(ctx, e)
		return s, err
	}
	for i := 0; i < waves; i++ {
		at := now.Add(-time.Duration(waves-i) * time.Minute)
		s, err := signal(i, at)
		if err != nil {
			return nil, ora.NormalizedSignal{}, ora.OrientationPacket{}, err
		}
		decision := fmt.Sprintf("dec-%08d-5c2d-8b6f-%012d", 10000+i, i)
		params, _ := json.Marshal(map[string]any{"connection": "github", "method": "POST",
			"url": fmt.Sprintf("https://api.github.com/repos/acme/shop/issues/%d/labels", 100+i), "body": map[string]any{"labels": []string{"triage"}}})
		ev := map[string]any{"decision_id": decision, "decision_digest": ora.Digest([]byte(decision)), "signal_id": s.ID, "index": 0,
			"type": "http.request", "parameters": json.RawMessage(params), "targets": []string{"api.github.com"}, "outcome": "success",
			"receipt": map[string]any{"status": 200, "body_digest": ora.Digest(params)}, "at": at.Add(20 * time.Second)}
		verdict := map[string]any{"outcome": "completed", "decision_id": decision, "at": at.Add(30 * time.Second),
			"validators": []map[string]any{
				{"validator": "technical", "verdict": "PASS", "summary": "the action ran and its receipt matches", "decision_id": decision},
				{"validator": "witness", "verdict": "PASS", "summary": "the label is on the issue", "decision_id": decision},
			}}
		for _, x := range []struct {
			kind ora.EntryKind
			q    string
			body any
			at   time.Time
		}{{ora.KindExecutionEvidence, "0", ev, at.Add(20 * time.Second)}, {ora.KindFinalVerdict, "", verdict, at.Add(30 * time.Second)}} {
			e, err := ora.NewEntry(s.ID, x.kind, x.q, x.body)
			if err != nil {
				return nil, ora.NormalizedSignal{}, ora.OrientationPacket{}, err
			}
			e.CreatedAt = x.at
			if _, err := st.Append(ctx, e); err != nil {
				return nil, ora.NormalizedSignal{}, ora.OrientationPacket{}, err
			}
		}
	}
	for i, title := range []string{"Answer the reporter of the checkout 500 within a day", "Re-run the search benchmark after the index change", "Follow up on the webhook timeout fix"} {
		body, _ := json.Marshal(map[string]any{"issue": 100 + i, "due": now.Add(24 * time.Hour).Format(time.RFC3339)})
		st.AddCommitment(ora.Commitment{ID: fmt.Sprintf("cmt-%d", i+1), SignalID: fmt.Sprintf("sig-%08d-4b1c-9a7e-%012d", 10000+i, i),
			Title: title, Body: body, Status: ora.CommitmentOpen, OpenedAt: now.Add(-time.Duration(3-i) * time.Hour), Version: 1})
	}
	if last == nil {
		s, err := signal(waves, now)
		if err != nil {
			return nil, ora.NormalizedSignal{}, ora.OrientationPacket{}, err
		}
		p, err := compile(ctx, st, s.ID, now)
		return st, s, p, err
	}
	s, p, err := Orient(ctx, st, *last, now)
	return st, s, p, err
}

// Orient records sig at now in st (its timestamp set to now) and runs the
// real planner, fetcher and compiler for its wave; it returns the signal as
// recorded and its packet.
func Orient(ctx context.Context, st *Store, sig ora.NormalizedSignal, now time.Time) (ora.NormalizedSignal, ora.OrientationPacket, error) {
	sig.Timestamp, sig.NormalizedAt = now, now
	e, err := ora.NewEntry(sig.ID, ora.KindSignalReceived, "", sig)
	if err != nil {
		return sig, ora.OrientationPacket{}, err
	}
	e.CreatedAt = now
	if _, err := st.Append(ctx, e); err != nil {
		return sig, ora.OrientationPacket{}, err
	}
	p, err := compile(ctx, st, sig.ID, now)
	return sig, p, err
}

func compile(ctx context.Context, st *Store, signalID string, now time.Time) (ora.OrientationPacket, error) {
	opts := func(o *orient.Options) { o.Now = func() time.Time { return now } }
	jobs, err := orient.NewPlanner(st, opts).Plan(ctx, signalID)
	if err != nil {
		return ora.OrientationPacket{}, err
	}
	if _, err := orient.NewFetcher(st, opts).FetchBatch(ctx, signalID, jobs); err != nil {
		return ora.OrientationPacket{}, err
	}
	return orient.NewCompiler(st, opts).Compile(ctx, signalID)
}
