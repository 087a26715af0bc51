package orient

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// EstimateTokens estimates the tokens a model spends on b: one token per four
// bytes, rounded up, at least one. It is the usual rule of thumb for English
// and JSON with byte-pair tokenizers; it errs high on ASCII-heavy JSON, which
// keeps the budget conservative.
func EstimateTokens(b []byte) int { return max(1, (len(b)+3)/4) }

// Base utilities by job kind, before the recency factor.
var baseUtility = map[JobKind]float64{
	JobOpenCommitments: 0.9,
	JobRecentActions:   0.7,
	JobActorHistory:    0.6,
	JobWorkspaceState:  0.5,
}

// RecencyHalfLife is the age at which a record's recency factor has fallen
// halfway from 1 to its floor of 0.5.
const RecencyHalfLife = 6 * time.Hour

// Utility scores a record: the base utility of its job kind (open commitments
// 0.9, recent actions 0.7, actor history 0.6, workspace state 0.5) times a
// recency factor 0.5 + 0.5 * 2^(-age / RecencyHalfLife), where age is how long
// before asOf the record was created (open commitments are not discounted:
// an old promise is still due). The result is rounded to six decimals so that
// it survives a JSON round trip unchanged.
func Utility(kind JobKind, created, asOf time.Time) float64 {
	u := baseUtility[kind]
	if kind != JobOpenCommitments {
		age := max(asOf.Sub(created), 0)
		u *= 0.5 + 0.5*math.Exp2(-float64(age)/float64(RecencyHalfLife))
	}
	return math.Round(u*1e6) / 1e6
}

// Fetcher runs observation jobs against the ledger and writes what they find
// as observed-fact entries.
type Fetcher struct {
	store Store
	o     Options
}

// NewFetcher returns a fetcher over store.
func NewFetcher(store Store, opts ...func(*Options)) *Fetcher {
	return &Fetcher{store: store, o: options(opts)}
}

// FactQualifier returns the qualifier (and fact id) of a job's i-th fact.
func FactQualifier(jobID string, i int) string { return fmt.Sprintf("%s/%05d", jobID, i) }

// batchAppender is a Store that writes a batch of entries in one
// transaction (the SQLite ledger does): Fetch writes a job's facts with one
// commit instead of one per fact.
type batchAppender interface {
	// AppendNew writes each entry whose identity is not stored yet and
	// leaves the others as they are, all at once. Errors: EINVALID (nothing
	// written), ETRANSIENT.
	AppendNew(ctx context.Context, entries []ora.Entry) (int, error)
}

// Fetch runs job for the wave of signalID and writes its facts, in order, as
// observed-fact entries qualified by FactQualifier. It returns how many facts
// the job yielded. Running it again is harmless: a fact already stored counts
// as written (the first write wins when a re-run read something different).
// Errors: EINVALID (bad signal id or job), ETRANSIENT, EINTERNAL.
func (f *Fetcher) Fetch(ctx context.Context, signalID string, job Job) (int, error) {
	if signalID == "" {
		return 0, ora.Invalid("signal_id", "required")
	}
	if err := job.Validate(); err != nil {
		return 0, fmt.Errorf("orient: fetch %s: %w", job.ID, err)
	}
	facts, err := f.Observe(ctx, signalID, job)
	if err != nil {
		return 0, fmt.Errorf("orient: fetch %s for %s: %w", job.ID, signalID, err)
	}
	entries := make([]ora.Entry, len(facts))
	for i, fact := range facts {
		e, err := ora.NewEntry(signalID, ora.KindObservedFact, fact.ID, fact)
		if err != nil {
			return 0, fmt.Errorf("orient: fetch %s: fact %s: %w", job.ID, fact.ID, err)
		}
		e.Meta = map[string]string{"job_id": job.ID, "job_kind": string(job.Kind)}
		entries[i] = e
	}
	if b, ok := f.store.(batchAppender); ok {
		if _, err := b.AppendNew(ctx, entries); err != nil {
			return 0, fmt.Errorf("orient: fetch %s: write facts: %w", job.ID, err)
		}
		return len(facts), nil
	}
	for _, e := range entries {
		if _, err := f.store.Append(ctx, e); err != nil {
			if _, stored := ora.Existing[ora.Entry](err); stored {
				continue // written by an earlier run
			}
			return 0, fmt.Errorf("orient: fetch %s: write fact %s: %w", job.ID, e.Qualifier, err)
		}
	}
	return len(facts), nil
}

// Observe runs job and returns its facts without writing them: normalized,
// attributed, scored and sized, with ids FactQualifier(job.ID, i). The wave's
// own entries are left out. Errors: EINVALID, ETRANSIENT.
func (f *Fetcher) Observe(ctx context.Context, signalID string, job Job) ([]ora.Fact, error) {
	if err := job.Validate(); err != nil {
		return nil, err
	}
	asOf := job.Params.AsOf.UTC()
	var facts []ora.Fact
	switch job.Kind {
	case JobOpenCommitments:
		cs, err := f.store.OpenCommitments(ctx, job.Params.Limit)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if c.OpenedAt.After(asOf) {
				continue // opened after the signal: a re-run must not see it
			}
			facts = append(facts, f.commitmentFact(c))
		}
	default:
		kind := map[JobKind]ora.EntryKind{
			JobRecentActions:  ora.KindExecutionEvidence,
			JobActorHistory:   ora.KindFinalVerdict,
			JobWorkspaceState: ora.KindSignalReceived,
		}[job.Kind]
		es, err := f.store.Recent(ctx, kind, asOf.Add(-job.Params.Window()), asOf, job.Params.Limit+1)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			if e.SignalID == signalID || len(facts) == job.Params.Limit {
				continue
			}
			fact, err := f.entryFact(job.Kind, e)
			if err != nil {
				return nil, err
			}
			facts = append(facts, fact)
		}
	}
	for i := range facts {
		facts[i].ID = FactQualifier(job.ID, i)
		facts[i].WaveID = signalID
		facts[i].SourceType = string(job.Kind)
		facts[i].Provenance["job_id"] = job.ID
		facts[i].Utility = Utility(job.Kind, facts[i].CreatedAt, asOf)
		facts[i].EstimatedTokens = 0
		b, err := json.Marshal(facts[i])
		if err != nil {
			return nil, ora.Errorf(ora.EINTERNAL, "encode fact: %v", err)
		}
		facts[i].EstimatedTokens = EstimateTokens(b)
	}
	return facts, nil
}

// body returns an entry or commitment body inline when it is small, or a
// reference to it (digest and size) when it is not.
func (f *Fetcher) body(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	if len(b) <= f.o.InlineBodyBytes && json.Valid(b) {
		return b
	}
	return map[string]any{"body_digest": ora.Digest(b), "body_bytes": len(b)}
}

func (f *Fetcher) commitmentFact(c ora.Commitment) ora.Fact {
	n, _ := json.Marshal(map[string]any{
		"id":               c.ID,
		"title":            c.Title,
		"status":           c.Status,
		"opened_at":        c.OpenedAt.UTC(),
		"origin_signal_id": c.SignalID,
		"body":             f.body(c.Body),
	})
	return ora.Fact{
		SourceRef:  "commitment:" + c.ID,
		Provenance: map[string]string{"store": "commitments", "commitment_id": c.ID, "version": fmt.Sprint(c.Version)},
		Normalized: n,
		DedupeKey:  "commitment:" + c.ID,
		CreatedAt:  c.OpenedAt.UTC(),
	}
}

func (f *Fetcher) entryFact(kind JobKind, e ora.Entry) (ora.Fact, error) {
	ref := fmt.Sprintf("ledger:%s/%s/%s", e.SignalID, e.Kind, e.Qualifier)
	var normalized map[string]any
	if kind == JobWorkspaceState {
		var s ora.NormalizedSignal
		if err := json.Unmarshal(e.Body, &s); err != nil {
			return ora.Fact{}, ora.Invalid("signal", "stored signal %s is malformed: %v", e.SignalID, err)
		}
		normalized = map[string]any{
			"signal_id": s.ID,
			"source":    s.Source,
			"timestamp": s.Timestamp.UTC(),
			"dedup_key": s.DedupKey,
		}
	} else {
		normalized = map[string]any{
			"signal_id":   e.SignalID,
			"kind":        e.Kind,
			"qualifier":   e.Qualifier,
			"author_type": e.AuthorType,
			"created_at":  e.CreatedAt.UTC(),
			"body":        f.body(e.Body),
		}
	}
	n, err := json.Marshal(normalized)
	if err != nil {
		return ora.Fact{}, ora.Errorf(ora.EINTERNAL, "encode fact: %v", err)
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
