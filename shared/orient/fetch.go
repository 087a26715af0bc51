package orient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
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

// Fetcher runs observation jobs through their source families and writes
// what they find as observed-fact entries.
type Fetcher struct {
	store   Store
	o       Options
	sources map[string]Source
}

// NewFetcher returns a fetcher over store.
func NewFetcher(store Store, opts ...func(*Options)) *Fetcher {
	o := options(opts)
	return &Fetcher{store: store, o: o, sources: o.sources(store)}
}

// FactQualifier returns the id of a job's i-th fact.
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
// observed-fact entries (JobFacts, qualified by FactsQualifier). It returns how many facts
// the job yielded. Running it again is harmless: a fact already stored counts
// as written (the first write wins when a re-run read something different).
// A job of an outside family (objects, http) that fails or times out yields
// no facts and no error: the drop is counted (job_error, timeout) and the
// wave goes on; a ledger job's error is returned. Errors: EINVALID (bad signal
// id or job), ETRANSIENT, EINTERNAL.
func (f *Fetcher) Fetch(ctx context.Context, signalID string, job Job) (int, error) {
	return f.FetchBatch(ctx, signalID, []Job{job})
}

// FetchBatch runs the jobs one after the other, as Fetch does each, and
// writes all their facts at once (one transaction where the store batches
// writes): a Distributed Map child's batch. A bad job fails the batch before
// anything runs; a ledger job's error fails it before anything is written.
// It returns how many facts the jobs yielded. Errors: as Fetch.
func (f *Fetcher) FetchBatch(ctx context.Context, signalID string, jobs []Job) (int, error) {
	if signalID == "" {
		return 0, ora.Invalid("signal_id", "required")
	}
	for _, job := range jobs {
		if err := job.Validate(); err != nil {
			return 0, fmt.Errorf("orient: fetch %s: %w", job.ID, err)
		}
	}
	var entries []ora.Entry
	n := 0
	for _, job := range jobs {
		es, facts, err := f.observe(ctx, signalID, job)
		if err != nil {
			return 0, err
		}
		entries = append(entries, es...)
		n += facts
	}
	if err := f.write(ctx, entries); err != nil {
		return 0, err
	}
	return n, nil
}

// observe runs one job and returns its facts as entries, and how many facts
// they hold, counting the job's metrics; an outside family's failure is a
// counted drop, not an error.
func (f *Fetcher) observe(ctx context.Context, signalID string, job Job) ([]ora.Entry, int, error) {
	start := time.Now()
	facts, encs, err := f.observe1(ctx, signalID, job)
	status := "ok"
	switch {
	case err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		status = DropTimeout
	case err != nil:
		status = "error"
	}
	f.o.Metrics.Add(MetricObservationJobs, 1, "source", job.family(), "status", status)
	f.o.Metrics.Observe(MetricObservationLatency, float64(time.Since(start).Milliseconds()), "source", job.family())
	if err != nil {
		if status == DropTimeout {
			err = ora.Errorf(ora.ETRANSIENT, "job timed out after %d ms", job.TimeoutMS)
		}
		f.o.log(ctx, "fetch", logFields{WaveID: signalID, Result: job.ID, ErrorCode: ora.ErrorCode(err), Start: start})
		if job.family() != FamilyLedger && ctx.Err() == nil {
			// An outside source that fails or times out costs the wave its
			// facts, not the wave: the drop is counted and the wave goes on.
			reason := DropJobError
			if status == DropTimeout {
				reason = DropTimeout
			}
			f.o.Metrics.Add(MetricFactDrops, 1, "reason", reason)
			return nil, 0, nil
		}
		return nil, 0, fmt.Errorf("orient: fetch %s for %s: %w", job.ID, signalID, err)
	}
	es, err := packFacts(signalID, job, facts, encs)
	return es, len(facts), err
}

// maxFactsEntryBytes bounds the facts one observed-fact entry carries: a
// job's facts are written in as few entries as fit under it, well below the
// item limit (ora.MaxItemBytes), so no entry of facts is refused for size.
const maxFactsEntryBytes = 256 * 1024

// JobFacts is the body of an observed-fact entry: facts of one fetch job, in
// the job's order. A job's facts are one entry (or a few, each under
// maxFactsEntryBytes), qualified by FactsQualifier, not one entry per fact:
// a busy wave's ~150 facts are then a handful of ledger writes, and on
// DynamoDB a body above the ledger's offload threshold goes to the body
// store as one object. Each fact keeps its own id (FactQualifier).
type JobFacts struct {
	JobID   string     `json:"job_id"`
	JobKind JobKind    `json:"job_kind"`
	Part    int        `json:"part"`
	Facts   []ora.Fact `json:"facts"`
}

// FactsQualifier returns the qualifier of the part-th observed-fact entry of
// a job.
func FactsQualifier(jobID string, part int) string { return fmt.Sprintf("%s/facts-%03d", jobID, part) }

// encodedFact is a fact's encoding (json.Marshal's bytes) and whether every
// value in it decodes to itself (see digestWriter.inexact).
type encodedFact struct {
	b     []byte
	exact bool
}

// packFacts packs a job's facts into observed-fact entries of at most
// maxFactsEntryBytes each (a single fact over it is an entry of its own).
// Each fact is encoded once (digestWriter.fact, json.Marshal's bytes: the
// fetch step passes the encodings it sized the facts by in encs, one per
// fact; nil makes them) and a part's body is those encodings spliced into
// its JobFacts: the bytes json.Marshal(JobFacts) makes.
func packFacts(signalID string, job Job, facts []ora.Fact, encs []encodedFact) ([]ora.Entry, error) {
	var out []ora.Entry
	head, err := json.Marshal(struct {
		JobID   string  `json:"job_id"`
		JobKind JobKind `json:"job_kind"`
	}{job.ID, job.Kind})
	if err != nil {
		return nil, fmt.Errorf("orient: fetch %s: %w", job.ID, err)
	}
	head = head[:len(head)-1] // without its closing brace
	part, n, first := 0, 0, 0
	exact := true
	var body []byte
	start := func() {
		body = append(make([]byte, 0, 4096), head...)
		body = append(body, `,"part":`...)
		body = strconv.AppendInt(body, int64(part), 10)
		body = append(body, `,"facts":[`...)
		n = 0
	}
	flush := func() {
		if n == 0 {
			return
		}
		body = append(body, "]}"...)
		e := ora.NewEntryJSON(signalID, ora.KindObservedFact, FactsQualifier(job.ID, part), body)
		e.Meta = map[string]string{"job_id": job.ID, "job_kind": string(job.Kind), "facts": strconv.Itoa(n)}
		out = append(out, e)
		if exact {
			recentFacts.put(e.Digest, slices.Clip(facts[first:first+n]), len(body))
		}
		part++
		first += n
		exact = true
		start()
	}
	start()
	d := digestWriter{}
	for i := range facts {
		var fb []byte
		if encs != nil {
			fb = encs[i].b
			exact = exact && encs[i].exact
		} else {
			d.buf, d.inexact = d.buf[:0], false
			err = d.fact(&facts[i])
			fb = d.buf
			exact = exact && !d.inexact
		}
		if err != nil {
			return nil, fmt.Errorf("orient: fetch %s: fact %s: %w", job.ID, facts[i].ID, err)
		}
		if n > 0 && len(body)+len(fb)+2 > maxFactsEntryBytes {
			flush()
		}
		if n > 0 {
			body = append(body, ',')
		}
		body = append(body, fb...)
		n++
	}
	flush()
	return out, nil
}

// recentFacts keeps, by their entry's digest, the facts of the parts
// packFacts encoded most recently (at most 8 MB of their bodies): in ora
// dev the compile step reads back the parts the fetch step wrote a moment
// before, in the same process, and decoding them was a third of its CPU.
// Only parts whose every value decodes to itself are kept (see
// digestWriter.inexact), so a kept part's facts are what decoding its body
// gives. Facts handed out share their maps and bytes: callers do not
// modify them.
var recentFacts = recentCache[string, []ora.Fact]{max: 8 << 20}

// FactsOf decodes the observed facts among a wave's entries, each fact once
// (the first of an id wins: a re-run job may have written a part again with
// other boundaries). It reads both bodies an observed-fact entry has had: a
// JobFacts part, and a single ora.Fact (ledgers written before facts were
// grouped by job). Errors: EINVALID naming the malformed entry.
func FactsOf(entries []ora.Entry) ([]ora.Fact, error) {
	var facts []ora.Fact
	seen := map[string]bool{}
	add := func(f ora.Fact) {
		if !seen[f.ID] {
			seen[f.ID] = true
			facts = append(facts, f)
		}
	}
	for _, e := range entries {
		if e.Kind != ora.KindObservedFact {
			continue
		}
		if kept, ok := recentFacts.get(e.Digest); ok && e.Digest != "" {
			for _, f := range kept {
				add(f)
			}
			continue
		}
		// One decode reads both shapes: a JobFacts part fills Facts, an
		// older single fact the embedded Fact (a part has no fact_id, a
		// fact no facts).
		var body struct {
			Facts *[]ora.Fact `json:"facts"`
			ora.Fact
		}
		if err := json.Unmarshal(e.Body, &body); err != nil {
			return nil, ora.Invalid("fact", "stored facts %q of %s are malformed: %v", e.Qualifier, e.SignalID, err)
		}
		if body.Facts == nil {
			add(body.Fact)
			continue
		}
		for _, f := range *body.Facts {
			add(f)
		}
	}
	return facts, nil
}

// write stores the entries, each once: an entry already stored (an earlier
// run's) is left as it is.
func (f *Fetcher) write(ctx context.Context, entries []ora.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	if b, ok := f.store.(batchAppender); ok {
		if _, err := b.AppendNew(ctx, entries); err != nil {
			return fmt.Errorf("orient: fetch: write facts: %w", err)
		}
		return nil
	}
	for _, e := range entries {
		if _, err := f.store.Append(ctx, e); err != nil {
			if _, stored := ora.Existing[ora.Entry](err); stored {
				continue // written by an earlier run
			}
			return fmt.Errorf("orient: fetch: write fact %s: %w", e.Qualifier, err)
		}
	}
	return nil
}

// Observe runs job, within its timeout, and returns its facts without
// writing them: normalized, attributed, scored by the job's weights and sized,
// at most the job's limit, with ids FactQualifier(job.ID, i). Errors:
// EINVALID, ETRANSIENT.
func (f *Fetcher) Observe(ctx context.Context, signalID string, job Job) ([]ora.Fact, error) {
	facts, _, err := f.observe1(ctx, signalID, job)
	return facts, err
}

// tokensZero is how the encoding of a fact whose estimated tokens are 0
// ends, but for its created_at: the last field, a time string, after which
// the pattern cannot occur again.
const tokensZero = `,"estimated_tokens":0,"created_at":`

// observe1 is Observe returning also each fact's encoding: estimating a
// fact's tokens encodes it (with estimated_tokens 0), and that encoding with
// the estimate put in is the one its facts entry needs.
func (f *Fetcher) observe1(ctx context.Context, signalID string, job Job) ([]ora.Fact, []encodedFact, error) {
	if err := job.Validate(); err != nil {
		return nil, nil, err
	}
	src := f.sources[job.family()]
	if src == nil {
		return nil, nil, ora.Invalid("job.family", "%q is not a configured source family", job.family())
	}
	if job.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(job.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	asOf := job.Params.AsOf.UTC()
	facts, err := src.Observe(ctx, Wave{SignalID: signalID, AsOf: asOf}, job)
	if err != nil {
		return nil, nil, err
	}
	if len(facts) > job.Params.Limit {
		facts = facts[:job.Params.Limit]
	}
	w := weightsOf(job)
	var d digestWriter // json.Marshal's bytes, without its reflection
	encs := make([]encodedFact, len(facts))
	for i := range facts {
		facts[i].ID = FactQualifier(job.ID, i)
		facts[i].WaveID = signalID
		facts[i].SourceType = string(job.Kind)
		if job.family() != FamilyLedger {
			facts[i].SourceType = job.family()
		}
		facts[i].Band = job.Band
		f.o.guardProvenance(&facts[i])
		facts[i].Provenance["job_id"] = job.ID
		if job.Rule != "" {
			facts[i].Provenance["rule_id"] = job.Rule
		}
		if w.Risky(facts[i].Normalized) {
			facts[i].Provenance["risk"] = "high"
		}
		facts[i].Utility = w.Score(facts[i], asOf)
		facts[i].EstimatedTokens = 0
		d.buf, d.inexact = d.buf[:0], false
		if err := d.fact(&facts[i]); err != nil {
			return nil, nil, ora.Errorf(ora.EINTERNAL, "encode fact: %v", err)
		}
		tokens := EstimateTokens(d.buf)
		facts[i].EstimatedTokens = tokens
		at := bytes.LastIndex(d.buf, []byte(tokensZero))
		if at < 0 {
			return nil, nil, ora.Errorf(ora.EINTERNAL, "encode fact %s: no estimated_tokens field", facts[i].ID)
		}
		at += len(tokensZero) - len(`0,"created_at":`)
		b := make([]byte, 0, len(d.buf)+8)
		b = append(b, d.buf[:at]...)
		b = strconv.AppendInt(b, int64(tokens), 10)
		b = append(b, d.buf[at+1:]...)
		encs[i] = encodedFact{b: b, exact: !d.inexact}
	}
	return facts, encs, nil
}

// weightsOf returns the job's weights; a ledger job planned without them
// (by an older Plan) gets its kind's default.
func weightsOf(j Job) Weights {
	if j.Weights != nil {
		return *j.Weights
	}
	w := Weights{Priority: baseUtility[j.Kind]}
	if j.Kind != JobOpenCommitments {
		w.HalfLifeSeconds = int(RecencyHalfLife / time.Second)
	}
	return w
}
