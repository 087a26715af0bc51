package orient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// FamilyLedger is the source family that reads ora's own ledger: open
// commitments, recent actions, workspace state and actor history (the
// reasoner context of seed 000).
const FamilyLedger = "ledger"

// LedgerPredicate is a ledger rule's predicate: which query, how far back
// from the signal and how many records.
type LedgerPredicate struct {
	Query         JobKind `json:"query"`
	WindowSeconds int     `json:"window_seconds,omitempty"`
	Limit         int     `json:"limit"`
}

// Ledger is the ledger source family over a Store.
type Ledger struct {
	Store Store
	// InlineBodyBytes is the largest body a fact carries inline; a larger
	// one is carried as a reference (digest and size). 0 means 1024.
	InlineBodyBytes int
}

var _ Source = Ledger{}

// Jobs returns the rule's one job.
func (l Ledger) Jobs(_ context.Context, w Wave, r ora.AttentionRule) ([]Job, error) {
	var p LedgerPredicate
	if err := predicate(r, &p); err != nil {
		return nil, err
	}
	j := Job{Kind: p.Query, Params: Params{AsOf: w.AsOf, WindowSeconds: p.WindowSeconds, Limit: p.Limit}}
	if err := checkLedgerJob(j); err != nil {
		return nil, ora.Invalid("rules."+r.ID+".predicate", "%v", err)
	}
	return []Job{j}, nil
}

func checkLedgerJob(j Job) error {
	known := false
	for _, k := range JobKinds {
		known = known || k == j.Kind
	}
	switch {
	case !known:
		return ora.Invalid("job.kind", "%q is not one of open-commitments, recent-actions, workspace-state, actor-history", j.Kind)
	case j.Kind != JobOpenCommitments && j.Params.WindowSeconds <= 0:
		return ora.Invalid("job.params.window_seconds", "required for %s", j.Kind)
	}
	return nil
}

// Observe runs one ledger job. The wave's own entries are left out, and so is
// anything created after the signal, so that a re-run reads the same records.
func (l Ledger) Observe(ctx context.Context, w Wave, j Job) ([]ora.Fact, error) {
	if err := checkLedgerJob(j); err != nil {
		return nil, err
	}
	asOf := j.Params.AsOf.UTC()
	var facts []ora.Fact
	switch j.Kind {
	case JobOpenCommitments:
		cs, err := l.Store.OpenCommitments(ctx, j.Params.Limit)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if c.OpenedAt.After(asOf) {
				continue
			}
			facts = append(facts, l.commitmentFact(c))
		}
	default:
		kind := map[JobKind]ora.EntryKind{
			JobRecentActions:  ora.KindExecutionEvidence,
			JobActorHistory:   ora.KindFinalVerdict,
			JobWorkspaceState: ora.KindSignalReceived,
		}[j.Kind]
		es, err := l.Store.Recent(ctx, kind, asOf.Add(-j.Params.Window()), asOf, j.Params.Limit+1)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			if e.SignalID == w.SignalID || len(facts) == j.Params.Limit {
				continue
			}
			fact, err := l.entryFact(j.Kind, e)
			if err != nil {
				return nil, err
			}
			facts = append(facts, fact)
		}
	}
	return facts, nil
}

// body returns a body inline when it is small, or a reference to it (digest
// and size) when it is not.
func (l Ledger) body(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	limit := l.InlineBodyBytes
	if limit == 0 {
		limit = 1024
	}
	if len(b) <= limit && json.Valid(b) {
		return b
	}
	return map[string]any{"body_digest": ora.Digest(b), "body_bytes": len(b)}
}

// payload returns a related signal's payload inline when small; a larger
// one is its reference (digest and size) with an excerpt: its scalar values
// as path=value pairs, shallow ones first, without links and node ids, cut to
// the inline limit.
func (l Ledger) payload(b json.RawMessage) any {
	if t := bytes.TrimSpace(b); len(t) == 0 || string(t) == "null" {
		return nil
	}
	v := l.body(b)
	ref, ok := v.(map[string]any)
	if !ok {
		return v
	}
	limit := l.InlineBodyBytes
	if limit == 0 {
		limit = 1024
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if dec.Decode(&doc) == nil {
		if ex := flatten(doc, limit); ex != "" {
			ref["excerpt"] = ex
		}
	}
	return ref
}

// leadKeys are the keys whose values say most about a payload in a few
// words: an object lists them first, in this order.
var leadKeys = map[string]int{"title": 6, "name": 5, "subject": 4, "summary": 3, "message": 2, "state": 1}

// flatten writes v's scalar leaves as "path=value" pairs, breadth first
// (within an object leadKeys first, then the keys sorted; the first 3 items
// of an array), skipping nulls, empty strings and keys naming links or node
// ids, until limit bytes.
func flatten(v any, limit int) string {
	type item struct {
		path string
		v    any
	}
	var b strings.Builder
	queue := []item{{"", v}}
	for len(queue) > 0 && b.Len() < limit {
		it := queue[0]
		queue = queue[1:]
		switch x := it.v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				if k == "url" || strings.HasSuffix(k, "_url") || k == "node_id" || k == "gravatar_id" {
					continue
				}
				keys = append(keys, k)
			}
			sort.Slice(keys, func(i, j int) bool {
				pi, pj := leadKeys[keys[i]], leadKeys[keys[j]]
				if pi != pj {
					return pi > pj
				}
				return keys[i] < keys[j]
			})
			for _, k := range keys {
				queue = append(queue, item{strings.TrimPrefix(it.path+"."+k, "."), x[k]})
			}
		case []any:
			for i, c := range x {
				if i == 3 {
					break
				}
				queue = append(queue, item{fmt.Sprintf("%s[%d]", it.path, i), c})
			}
		case nil:
		case string:
			if x != "" {
				fmt.Fprintf(&b, "%s=%s; ", it.path, x)
			}
		default:
			fmt.Fprintf(&b, "%s=%v; ", it.path, x)
		}
	}
	s := strings.TrimSuffix(b.String(), "; ")
	if len(s) > limit {
		i := limit
		for i > 0 && !utf8Start(s[i]) {
			i--
		}
		s = s[:i]
	}
	return s
}

func (l Ledger) commitmentFact(c ora.Commitment) ora.Fact {
	n, _ := json.Marshal(map[string]any{
		"id":               c.ID,
		"title":            c.Title,
		"status":           c.Status,
		"opened_at":        c.OpenedAt.UTC(),
		"origin_signal_id": c.SignalID,
		"body":             l.body(c.Body),
	})
	return ora.Fact{
		SourceRef:  "commitment:" + c.ID,
		Provenance: map[string]string{"store": "commitments", "commitment_id": c.ID, "version": fmt.Sprint(c.Version)},
		Normalized: n,
		DedupeKey:  "commitment:" + c.ID,
		CreatedAt:  c.OpenedAt.UTC(),
	}
}

// workspaceFact is the normalized fact of a recent signal; its fields are in
// the order of their JSON names.
type workspaceFact struct {
	DedupKey string `json:"dedup_key"`
	// Payload is the signal's payload, inline when small (see body): the
	// reasoner sees what related signals said, not only that they came.
	Payload   any        `json:"payload,omitempty"`
	SignalID  string     `json:"signal_id"`
	Source    ora.Source `json:"source"`
	Timestamp time.Time  `json:"timestamp"`
}

// entryFactBody is the normalized fact of a recent ledger entry; its fields
// are in the order of their JSON names.
type entryFactBody struct {
	AuthorType ora.AuthorType `json:"author_type"`
	Body       any            `json:"body"`
	CreatedAt  time.Time      `json:"created_at"`
	Kind       ora.EntryKind  `json:"kind"`
	Qualifier  string         `json:"qualifier"`
	SignalID   string         `json:"signal_id"`
}

func (l Ledger) entryFact(kind JobKind, e ora.Entry) (ora.Fact, error) {
	ref := fmt.Sprintf("ledger:%s/%s/%s", e.SignalID, e.Kind, e.Qualifier)
	key := factKey{kind, e.SignalID, e.Kind, e.Qualifier, e.Digest, e.AuthorType, e.CreatedAt.UnixNano(), l.InlineBodyBytes}
	n, ok := normalizedFacts.get(key)
	if !ok {
		var err error
		if n, err = l.normalize(kind, e); err != nil {
			return ora.Fact{}, err
		}
		normalizedFacts.put(key, n)
	}
	return ora.Fact{
		SourceRef: ref,
		Provenance: map[string]string{
			"store": "ledger", "signal_id": e.SignalID, "kind": string(e.Kind),
			"qualifier": e.Qualifier, "digest": e.Digest,
		},
		Normalized: n,
		DedupeKey:  ref,
		CreatedAt:  e.CreatedAt.UTC(),
	}, nil
}

// factKey is what a ledger entry's normalized fact is a function of: the
// job's kind, the entry's identity, digest, author and time, and the inline
// limit.
type factKey struct {
	job       JobKind
	signalID  string
	kind      ora.EntryKind
	qualifier string
	digest    string
	author    ora.AuthorType
	created   int64
	inline    int
}

// normalizedFacts keeps the normalized facts of recent ledger entries: each
// wave's ledger jobs read mostly the entries the waves before read (the
// last hour's signals, the last day's actions), and an entry never changes,
// so its fact is encoded once. At most normalizedFactsMax are kept; when
// full it starts again, empty. The bytes are shared: facts do not modify
// their Normalized.
var normalizedFacts = factCache{max: 8192}

type factCache struct {
	sync.Mutex
	max int
	m   map[factKey]json.RawMessage
}

func (c *factCache) get(k factKey) (json.RawMessage, bool) {
	if k.digest == "" {
		return nil, false
	}
	c.Lock()
	defer c.Unlock()
	n, ok := c.m[k]
	return n, ok
}

func (c *factCache) put(k factKey, n json.RawMessage) {
	if k.digest == "" {
		return
	}
	c.Lock()
	defer c.Unlock()
	if c.m == nil || len(c.m) >= c.max {
		c.m = make(map[factKey]json.RawMessage, 256)
	}
	c.m[k] = n
}

// normalize encodes the normalized fact of a ledger entry.
func (l Ledger) normalize(kind JobKind, e ora.Entry) (json.RawMessage, error) {
	// The normalized fact is encoded from a struct whose fields are in the
	// order of their names, which is what the map it replaces encoded to
	// (encoding/json sorts a map's keys) at a fraction of the cost.
	var normalized any
	if kind == JobWorkspaceState {
		var s ora.NormalizedSignal
		if err := json.Unmarshal(e.Body, &s); err != nil {
			return nil, ora.Invalid("signal", "stored signal %s is malformed: %v", e.SignalID, err)
		}
		normalized = workspaceFact{DedupKey: s.DedupKey, Payload: l.payload(s.Payload), SignalID: s.ID, Source: s.Source, Timestamp: s.Timestamp.UTC()}
	} else {
		normalized = entryFactBody{AuthorType: e.AuthorType, Body: l.body(e.Body), CreatedAt: e.CreatedAt.UTC(),
			Kind: e.Kind, Qualifier: e.Qualifier, SignalID: e.SignalID}
	}
	n, err := json.Marshal(normalized)
	if err != nil {
		return nil, ora.Errorf(ora.EINTERNAL, "encode fact: %v", err)
	}
	return n, nil
}
