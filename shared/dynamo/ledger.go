package dynamo

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/ora"
)

var (
	_ ora.Ledger    = (*Ledger)(nil)
	_ ora.Debouncer = (*Ledger)(nil)
)

// Options tune a Ledger.
type Options struct {
	// Now returns the current time; tests replace it. Default time.Now.
	Now func() time.Time
	// Retention sets each kind's TTL (ExpiresAt) when an entry has none.
	// Default ora.DefaultRetention(); an empty map keeps everything.
	Retention ora.Retention
	// RecentShards is how many index partitions each kind's entries are
	// spread over (by signal id); Recent queries them all and merges.
	// Default DefaultRecentShards.
	RecentShards int
	// Bodies holds entry bodies over ora.MaxItemBytes by reference (the
	// stack's bucket, bodystore.FromEnv); nil refuses such entries.
	Bodies ora.BodyStore
	// Secrets are redacted from every entry at append. Optional.
	Secrets *ora.Secrets
	// OffloadAbove is the entry size above which the body of an offloadable
	// kind goes to Bodies even though it fits an item. The size is
	// ora.EntrySize of the entry as its item stores it: with its body
	// deflated when that applies (a body of 256 bytes or more that deflates
	// smaller), so a compressible body stays in its item while its
	// deflated bytes are under the threshold.
	// Default DefaultOffloadAbove; ora.MaxItemBytes offloads only what does
	// not fit.
	OffloadAbove int
	// BodyCacheBytes bounds the bodies read back kept in memory by digest.
	// Default DefaultBodyCacheBytes; negative keeps none (make cost counts
	// every read as a function with a cold cache makes it).
	BodyCacheBytes int
}

// DefaultBodyCacheBytes is the default bound of a Ledger's body cache.
const DefaultBodyCacheBytes = 16 << 20

// DefaultOffloadAbove stores offloadable bodies by reference when their
// entry's item would be over 4 KB as stored (the body deflated when that
// applies). A body of S KB kept in the item costs S write units once and S/4
// read units each time a stage reads the wave strongly consistent (about
// nine times a wave), and an observed fact's item is read again by the
// look-back of later waves; as an object it costs one S3 PUT ($0.005 per
// 1,000, the price of 8 write units) and at most one GET ($0.0004 per 1,000)
// per reading process, which caches it by content address. The threshold
// was 16 KB of uncompressed entry; measured on stored bytes (BenchmarkCost
// in shared/embedded), 4 KB leaves a busy wave's units and requests as they
// were and a light wave's price within $0.001 per 1,000 signals, where 16 KB
// keeps a busy wave's facts (7 KB deflated) in their items and costs it
// nearly 6x the read units. Small bodies (most signals, evidence, decisions) stay
// in their items, where reading them costs no extra request.
const DefaultOffloadAbove = 4 * 1024

// DefaultRecentShards spreads each indexed kind over 2 index partitions, so
// no one partition takes every write of a kind. Each wave writes one index
// item per indexed kind (its signal, its evidence, its verdict: about 2 KB
// each, and never over the offload threshold for signals and evidence), so one shard takes about 500 waves/s of DynamoDB's 1,000 write
// units per partition per second and two about 1,000, the order of the
// executions per second Step Functions Standard starts under its default
// StartExecution throttling quota (per account and region; check the
// account's). Each shard costs every Recent read one Query, so more shards
// buy calls before they buy throughput. Readers and writers must agree on the count:
// raising it on a live table hides older entries from Recent until they age
// out of its windows.
const DefaultRecentShards = 2

// Ledger is ora's ledger and debouncer on one DynamoDB table (the single-table
// design in the package doc).
type Ledger struct {
	client    Client
	table     string
	now       func() time.Time
	retention ora.Retention
	secrets   *ora.Secrets
	shards    int
	bodies    ora.BodyStore
	above     int
	cache     *bodyCache
	known     *knownFacts
}

// New returns a Ledger on the named table, which must look like
// LedgerTableInput's.
func New(client Client, table string, opts ...func(*Options)) *Ledger {
	o := Options{Now: time.Now, Retention: ora.DefaultRetention(), RecentShards: DefaultRecentShards}
	for _, f := range opts {
		f(&o)
	}
	if o.RecentShards < 1 {
		o.RecentShards = 1
	}
	if o.OffloadAbove <= 0 {
		o.OffloadAbove = DefaultOffloadAbove
	}
	if o.BodyCacheBytes == 0 {
		o.BodyCacheBytes = DefaultBodyCacheBytes
	}
	return &Ledger{client: client, table: table, now: o.Now, retention: o.Retention, secrets: o.Secrets, shards: o.RecentShards, bodies: o.Bodies,
		above: o.OffloadAbove, cache: newBodyCache(o.BodyCacheBytes), known: &knownFacts{off: o.BodyCacheBytes < 0}}
}

// Item kinds (the "type" attribute) and key prefixes.
const (
	typeEntry      = "entry"
	typeDecision   = "decision"
	typeCommitment = "commitment"
	typeDebounce   = "debounce"

	prefixSignal     = "SIGNAL#"
	prefixEntry      = "ENTRY#"
	prefixKind       = "KIND#"
	prefixDecision   = "DECISION#"
	prefixCommitment = "COMMITMENT#"
	prefixDebounce   = "DEBOUNCE#"
	skDecision       = "STATE"
	skCommitment     = "COMMITMENT"
	skDebounce       = "DEBOUNCE"
	openMarker       = "OPEN"
)

// maxBody keeps a pattern item under DynamoDB's 400 KB item limit, with room
// for the other attributes. (Ledger entries are checked by ora.SizeCheck.)
const maxBody = 380 * 1024

// timeLayout is a fixed-width UTC layout: its strings sort as the instants do,
// which the GSI sort keys rely on.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// attribute helpers
func sv(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func nv(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func getS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(item map[string]types.AttributeValue, name string) (int64, error) {
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("dynamo: attribute %s: %w", name, err)
	}
	return n, nil
}

func getTime(item map[string]types.AttributeValue, name string) (time.Time, error) {
	s := getS(item, name)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("dynamo: attribute %s: %w", name, err)
	}
	return t, nil
}

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrPK: sv(pk), AttrSK: sv(sk)}
}

// ttlSeconds is the TTL attribute for an expiry: epoch seconds, rounded up so
// DynamoDB never deletes an item before it expires.
func ttlSeconds(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

// prepare is prepareEntry with the ledger's retention applied.
func (l *Ledger) prepare(in ora.Entry, now time.Time) (ora.Entry, error) {
	e, err := prepareEntry(l.secrets.RedactEntry(in), now)
	if err != nil {
		return ora.Entry{}, err
	}
	return l.retention.Apply(e), nil
}

// prepareEntry is ora's Entry.Prepared plus what a DynamoDB item needs: a
// UTF-8 body (a string attribute). The item size limit is checked when the
// entry is written (ora.SizeCheck), where a large body may go to the body
// store.
func prepareEntry(e ora.Entry, now time.Time) (ora.Entry, error) {
	e, err := e.Prepared(now)
	if err != nil {
		return ora.Entry{}, err
	}
	if err := storableBody(e.Body); err != nil {
		return ora.Entry{}, err
	}
	return e, nil
}

// storableBody checks a JSON body can be a string attribute.
func storableBody(b []byte) error {
	if !utf8.Valid(b) {
		return ora.Invalid("body", "must be UTF-8")
	}
	return nil
}

func entryKey(signalID string, kind ora.EntryKind, qualifier string) map[string]types.AttributeValue {
	return key(prefixSignal+signalID, prefixEntry+string(kind)+"#"+qualifier)
}

// entryItem encodes an entry. The body is a string attribute holding the
// bytes as given, so the digest still holds when it is read back.
func entryItem(e ora.Entry) map[string]types.AttributeValue { return entryItemSharded(e, 1) }

// recentShard is the index partition of a signal's entries among shards.
func recentShard(signalID string, shards int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(signalID))
	return int(h.Sum32() % uint32(shards))
}

// recentPK is the index partition key of a kind's shard.
func recentPK(kind ora.EntryKind, shard int) string {
	return prefixKind + string(kind) + "#" + strconv.Itoa(shard)
}

// entryItemSharded encodes an entry; only kinds in ora.RecentKinds carry
// index keys, in the signal's shard.
func entryItemSharded(e ora.Entry, shards int) map[string]types.AttributeValue {
	return entryItemZ(e, shards, deflated(e.Body))
}

// entryItemZ is entryItemSharded with z, deflated(e.Body), already computed
// by the size rules (forms).
func entryItemZ(e ora.Entry, shards int, z []byte) map[string]types.AttributeValue {
	item := entryKey(e.SignalID, e.Kind, e.Qualifier)
	if e.Kind.Indexed() {
		item[AttrGSI1PK] = sv(recentPK(e.Kind, recentShard(e.SignalID, shards)))
		item[AttrGSI1SK] = sv(formatTime(e.CreatedAt) + "#" + e.SignalID + "#" + e.Qualifier)
	}
	// The signal, kind and qualifier are read back from the keys; a body
	// of compressMin bytes or more is stored deflated when that is smaller
	// (the digest covers the bytes as given, which decodeEntry restores):
	// an entry of a 30-byte payload then fits one write unit, and its index
	// item another, where it took two of each.
	item["type"] = sv(typeEntry)
	if !setBodyZ(item, e.Body, z) {
		item[attrBodyRef] = sv(ora.BodyKeyOf(e)) // the body store holds it
	}
	item["digest"] = sv(e.Digest)
	item["created_at"] = sv(formatTime(e.CreatedAt))
	if e.AuthorType != "" {
		item["author_type"] = sv(string(e.AuthorType))
	}
	if len(e.Meta) > 0 {
		m := make(map[string]types.AttributeValue, len(e.Meta))
		for k, v := range e.Meta {
			m[k] = sv(v)
		}
		item["meta"] = &types.AttributeValueMemberM{Value: m}
	}
	if e.ExpiresAt != nil {
		item["expires_at"] = sv(formatTime(*e.ExpiresAt))
		item[AttrTTL] = nv(ttlSeconds(*e.ExpiresAt))
	}
	return item
}

func decodeEntry(item map[string]types.AttributeValue) (ora.Entry, error) {
	e := ora.Entry{
		SignalID:   getS(item, "signal_id"),
		Kind:       ora.EntryKind(getS(item, "kind")),
		Qualifier:  getS(item, "qualifier"),
		AuthorType: ora.AuthorType(getS(item, "author_type")),
		Body:       json.RawMessage(getS(item, "body")),
		Digest:     getS(item, "digest"),
	}
	if e.SignalID == "" && e.Kind == "" {
		// Written without the copies of its keys (items written before
		// carry them): SIGNAL#<signal>, ENTRY#<kind>#<qualifier>.
		sk := strings.SplitN(getS(item, AttrSK), "#", 3)
		if len(sk) != 3 || sk[0]+"#" != prefixEntry {
			return ora.Entry{}, fmt.Errorf("entry item: sort key %q is not %s<kind>#<qualifier>", getS(item, AttrSK), prefixEntry)
		}
		e.SignalID = strings.TrimPrefix(getS(item, AttrPK), prefixSignal)
		e.Kind, e.Qualifier = ora.EntryKind(sk[1]), sk[2]
	}
	if _, ok := item[attrBodyZ]; ok {
		b, err := itemBody(item)
		if err != nil {
			return ora.Entry{}, fmt.Errorf("entry item %s/%s/%s: %w", e.SignalID, e.Kind, e.Qualifier, err)
		}
		e.Body = b
	}
	if m, ok := item["meta"].(*types.AttributeValueMemberM); ok && len(m.Value) > 0 {
		e.Meta = make(map[string]string, len(m.Value))
		for k := range m.Value {
			e.Meta[k] = getS(m.Value, k)
		}
	}
	var err error
	if e.CreatedAt, err = getTime(item, "created_at"); err != nil {
		return ora.Entry{}, err
	}
	if exp, err := getTime(item, "expires_at"); err != nil {
		return ora.Entry{}, err
	} else if !exp.IsZero() {
		e.ExpiresAt = &exp
	}
	return e, nil
}

// conflictWith decodes the item a failed condition found and returns the
// ECONFLICT error carrying it.
func conflictWith[T any](item map[string]types.AttributeValue, decode func(map[string]types.AttributeValue) (T, error), format string, args ...any) error {
	v, err := decode(item)
	if err != nil {
		return fmt.Errorf("decode the conflicting item: %w", err)
	}
	return ora.Conflict(v, format, args...)
}

// Append writes e once with a conditional put; see ora.Ledger.
func (l *Ledger) Append(ctx context.Context, in ora.Entry) (ora.Entry, error) {
	e, err := l.prepare(in, l.now())
	if err != nil {
		return ora.Entry{}, fmt.Errorf("ledger: append %s: %w", in.Kind, err)
	}
	items, off, zs, facts, err := l.forms([]ora.Entry{e})
	if err == nil {
		err = l.putFacts(ctx, facts)
	}
	if err != nil {
		return ora.Entry{}, fmt.Errorf("ledger: append %s: %w", e.Kind, err)
	}
	item := items[0]
	if off[0] {
		if item, err = l.offload(ctx, e); err != nil {
			return ora.Entry{}, fmt.Errorf("ledger: append %s: %w", e.Kind, err)
		}
	}
	_, err = l.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(l.table),
		Item:                                entryItemZ(item, l.shards, zs[0]),
		ConditionExpression:                 aws.String("attribute_not_exists(" + AttrPK + ")"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if _, item, ok := failedCondition(err); ok && len(item) > 0 {
		return ora.Entry{}, fmt.Errorf("ledger: append %s: %w", e.Kind,
			conflictWith(item, l.decodeEntryWithBody(ctx), "entry %s/%s/%q exists", e.SignalID, e.Kind, e.Qualifier))
	}
	if err != nil {
		return ora.Entry{}, fmt.Errorf("ledger: append %s: %w", e.Kind, translate(err))
	}
	return e, nil
}

// query runs a query to the end or until limit items (0: no limit) and
// decodes each item.
func query[T any](ctx context.Context, c Client, in *dynamodb.QueryInput, limit int, decode func(map[string]types.AttributeValue) (T, error)) ([]T, error) {
	var out []T
	for {
		if limit > 0 {
			in.Limit = aws.Int32(int32(min(limit-len(out), 1000)))
		}
		page, err := c.Query(ctx, in)
		if err != nil {
			return nil, translate(err)
		}
		for _, item := range page.Items {
			v, err := decode(item)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		if len(page.LastEvaluatedKey) == 0 || (limit > 0 && len(out) >= limit) {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// Entries returns a signal's entries in order (one strongly consistent query
// on the signal's partition, sorted in code); see ora.Ledger.
func (l *Ledger) Entries(ctx context.Context, signalID string) ([]ora.Entry, error) {
	return l.entries(ctx, signalID, nil)
}

// EntriesOfKinds returns a signal's entries of the given kinds in Entries'
// order (ora.KindReader): the same one query on the signal's partition (its
// other items are small: large bodies are references), but only the bodies
// of the kinds asked are read from the body store, so a stage that needs the
// decision does not fetch the wave's facts and packet. Errors: ENOTFOUND
// when there is no entry of those kinds, ETRANSIENT.
func (l *Ledger) EntriesOfKinds(ctx context.Context, signalID string, kinds ...ora.EntryKind) ([]ora.Entry, error) {
	if kinds == nil {
		kinds = []ora.EntryKind{}
	}
	return l.entries(ctx, signalID, kinds)
}

// entries reads a signal's partition; kinds, when not nil, keeps only those.
func (l *Ledger) entries(ctx context.Context, signalID string, kinds []ora.EntryKind) ([]ora.Entry, error) {
	out, err := query(ctx, l.client, &dynamodb.QueryInput{
		TableName:              aws.String(l.table),
		KeyConditionExpression: aws.String("#pk = :pk AND begins_with(#sk, :entry)"),
		ExpressionAttributeNames: map[string]string{
			"#pk": AttrPK, "#sk": AttrSK,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": sv(prefixSignal + signalID), ":entry": sv(prefixEntry),
		},
		ConsistentRead: aws.Bool(true),
	}, 0, decodeEntry)
	if err == nil && kinds != nil {
		out = slices.DeleteFunc(out, func(e ora.Entry) bool { return !slices.Contains(kinds, e.Kind) })
	}
	if err == nil {
		err = l.loadBodies(ctx, out)
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: entries of %s: %w", signalID, err)
	}
	if len(out) == 0 {
		if kinds != nil {
			return nil, fmt.Errorf("ledger: entries of %s: %w", signalID, ora.Errorf(ora.ENOTFOUND, "signal %q has no entries of kinds %v", signalID, kinds))
		}
		return nil, fmt.Errorf("ledger: entries of %s: %w", signalID, ora.Errorf(ora.ENOTFOUND, "signal %q has no entries", signalID))
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		if a.Kind.Rank() != b.Kind.Rank() {
			return a.Kind.Rank() < b.Kind.Rank()
		}
		return a.Qualifier < b.Qualifier
	})
	return out, nil
}

// Recent returns entries of one kind created in [from, to), newest first,
// through IndexRecent (eventually consistent); see ora.Ledger.
func (l *Ledger) Recent(ctx context.Context, kind ora.EntryKind, from, to time.Time, limit int) ([]ora.Entry, error) {
	switch {
	case kind.Rank() < 0:
		return nil, fmt.Errorf("ledger: recent %s: %w", kind, ora.Invalid("kind", "%q is not a ledger entry kind", kind))
	case to.Before(from):
		return nil, fmt.Errorf("ledger: recent %s: %w", kind, ora.Invalid("to", "%v is before from %v", to, from))
	case limit < 0:
		return nil, fmt.Errorf("ledger: recent %s: %w", kind, ora.Invalid("limit", "%d is negative", limit))
	case from.Year() < 1 || to.Year() > 9999:
		return nil, fmt.Errorf("ledger: recent %s: %w", kind, ora.Invalid("from", "the range must lie within the years 1..9999"))
	}
	if !kind.Indexed() {
		return nil, fmt.Errorf("ledger: recent %s: %w", kind, ora.Invalid("kind", "%q is not indexed by kind (ora.RecentKinds)", kind))
	}
	// Sort keys are <created_at>#..., so every key at instant to sorts after
	// the bare formatTime(to) and BETWEEN gives the half-open [from, to).
	// Each shard is queried (eventually consistent, as a GSI is) for up to
	// limit entries, in parallel; the newest limit of their union are the
	// answer.
	type result struct {
		items []ora.Entry
		err   error
	}
	results := make([]result, l.shards)
	var wg sync.WaitGroup
	for shard := 0; shard < l.shards; shard++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			items, err := query(ctx, l.client, &dynamodb.QueryInput{
				TableName:                aws.String(l.table),
				IndexName:                aws.String(IndexRecent),
				KeyConditionExpression:   aws.String("#pk = :pk AND #sk BETWEEN :from AND :to"),
				ExpressionAttributeNames: map[string]string{"#pk": AttrGSI1PK, "#sk": AttrGSI1SK},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":pk": sv(recentPK(kind, shard)), ":from": sv(formatTime(from)), ":to": sv(formatTime(to)),
				},
				ScanIndexForward: aws.Bool(false),
			}, limit, decodeEntry)
			results[shard] = result{items, err}
		}()
	}
	wg.Wait()
	var out []ora.Entry
	for _, r := range results {
		if r.err != nil {
			return nil, fmt.Errorf("ledger: recent %s: %w", kind, r.err)
		}
		out = append(out, r.items...)
	}
	sort.SliceStable(out, func(i, j int) bool { return recentKey(out[i]) > recentKey(out[j]) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	// Bodies stored by reference are read for the answer only, not for
	// the entries the limit cut.
	if err := l.loadBodies(ctx, out); err != nil {
		return nil, fmt.Errorf("ledger: recent %s: %w", kind, err)
	}
	return out, nil
}

// recentKey is an entry's index sort key: newest first is descending order.
func recentKey(e ora.Entry) string {
	return formatTime(e.CreatedAt) + "#" + e.SignalID + "#" + e.Qualifier
}

// decisionEntry builds the reasoner-decision entry for d.
func decisionEntry(d ora.ReasonerDecision, now time.Time) (ora.Entry, error) {
	if err := d.Validate(); err != nil {
		return ora.Entry{}, err
	}
	body, err := json.Marshal(d)
	if err != nil {
		return ora.Entry{}, ora.Invalid("decision", "cannot encode: %v", err)
	}
	return prepareEntry(ora.Entry{
		SignalID:   d.SignalID,
		Kind:       ora.KindReasonerDecision,
		Qualifier:  d.ID,
		AuthorType: d.AuthorType,
		Body:       body,
	}, now)
}

func decisionItem(st ora.DecisionState) map[string]types.AttributeValue {
	item := key(prefixDecision+st.DecisionID, skDecision)
	item["type"] = sv(typeDecision)
	item["decision_id"] = sv(st.DecisionID)
	item["signal_id"] = sv(st.SignalID)
	item["status"] = sv(string(st.Status))
	item["digest"] = sv(st.Digest)
	item["reason"] = sv(st.Reason)
	item["version"] = nv(int64(st.Version))
	item["updated_at"] = sv(formatTime(st.UpdatedAt))
	return item
}

func decodeDecision(item map[string]types.AttributeValue) (ora.DecisionState, error) {
	st := ora.DecisionState{
		DecisionID: getS(item, "decision_id"),
		SignalID:   getS(item, "signal_id"),
		Status:     ora.DecisionStatus(getS(item, "status")),
		Digest:     getS(item, "digest"),
		Reason:     getS(item, "reason"),
	}
	v, err := getN(item, "version")
	if err != nil {
		return ora.DecisionState{}, err
	}
	st.Version = int(v)
	if st.UpdatedAt, err = getTime(item, "updated_at"); err != nil {
		return ora.DecisionState{}, err
	}
	return st, nil
}

// RecordDecision writes the decision's entry and its status record in one
// TransactWriteItems, each put conditional on the item being new; see
// ora.Ledger.
func (l *Ledger) RecordDecision(ctx context.Context, d ora.ReasonerDecision) (ora.Entry, error) {
	e, err := decisionEntry(d, l.now())
	e = l.secrets.RedactEntry(e)
	var z []byte
	if err == nil {
		z = deflated(e.Body)
		_, err = storedSize(e, z, false, ora.MaxItemBytes) // a decision is never stored by reference
	}
	if err != nil {
		return ora.Entry{}, fmt.Errorf("ledger: record decision %s: %w", d.ID, err)
	}
	st := ora.DecisionState{
		DecisionID: d.ID, SignalID: d.SignalID, Status: ora.StatusDecided,
		Digest: e.Digest, Version: 1, UpdatedAt: e.CreatedAt,
	}
	put := func(item map[string]types.AttributeValue) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{
			TableName:                           aws.String(l.table),
			Item:                                item,
			ConditionExpression:                 aws.String("attribute_not_exists(" + AttrPK + ")"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}}
	}
	_, err = l.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{put(entryItemZ(e, l.shards, z)), put(decisionItem(st))},
	})
	if i, item, ok := failedCondition(err); ok && len(item) > 0 {
		if i == 0 {
			return ora.Entry{}, fmt.Errorf("ledger: record decision %s: %w", d.ID,
				conflictWith(item, decodeEntry, "entry %s/%s/%q exists", e.SignalID, e.Kind, e.Qualifier))
		}
		return ora.Entry{}, fmt.Errorf("ledger: record decision %s: %w", d.ID,
			conflictWith(item, decodeDecision, "decision %s exists", d.ID))
	}
	if err != nil {
		return ora.Entry{}, fmt.Errorf("ledger: record decision %s: %w", d.ID, translate(err))
	}
	return e, nil
}

// Decision returns a decision's status record (a strongly consistent read);
// see ora.Ledger.
func (l *Ledger) Decision(ctx context.Context, decisionID string) (ora.DecisionState, error) {
	out, err := l.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(l.table),
		Key:            key(prefixDecision+decisionID, skDecision),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return ora.DecisionState{}, fmt.Errorf("ledger: decision %s: %w", decisionID, translate(err))
	}
	if len(out.Item) == 0 {
		return ora.DecisionState{}, fmt.Errorf("ledger: decision %s: %w", decisionID, ora.Errorf(ora.ENOTFOUND, "decision %q not found", decisionID))
	}
	st, err := decodeDecision(out.Item)
	if err != nil {
		return ora.DecisionState{}, fmt.Errorf("ledger: decision %s: %w", decisionID, err)
	}
	return st, nil
}

// TransitionDecision moves a decision's status by an UpdateItem conditional
// on the expected old status; see ora.Ledger.
func (l *Ledger) TransitionDecision(ctx context.Context, decisionID string, from, to ora.DecisionStatus, reason string) (ora.DecisionState, error) {
	wrap := func(err error) error {
		return fmt.Errorf("ledger: transition decision %s %s -> %s: %w", decisionID, from, to, err)
	}
	if decisionID == "" {
		return ora.DecisionState{}, wrap(ora.Invalid("decision_id", "required"))
	}
	if !ora.CanTransition(from, to) {
		return ora.DecisionState{}, wrap(ora.Invalid("to", "%q -> %q is not an allowed transition", from, to))
	}
	out, err := l.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(l.table),
		Key:                      key(prefixDecision+decisionID, skDecision),
		UpdateExpression:         aws.String("SET #status = :to, #reason = :reason, #version = #version + :one, #updated = :now"),
		ConditionExpression:      aws.String("#status = :from"),
		ExpressionAttributeNames: map[string]string{"#status": "status", "#reason": "reason", "#version": "version", "#updated": "updated_at"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":to": sv(string(to)), ":from": sv(string(from)), ":reason": sv(reason), ":one": nv(1), ":now": sv(formatTime(l.now())),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if _, item, ok := failedCondition(err); ok {
		if len(item) == 0 {
			return ora.DecisionState{}, wrap(ora.Errorf(ora.ENOTFOUND, "decision %q not found", decisionID))
		}
		cur, derr := decodeDecision(item)
		if derr != nil {
			return ora.DecisionState{}, wrap(fmt.Errorf("decode the conflicting item: %w", derr))
		}
		return ora.DecisionState{}, wrap(ora.Conflict(cur, "decision is %s, not %s", cur.Status, from))
	}
	if err != nil {
		return ora.DecisionState{}, wrap(translate(err))
	}
	st, err := decodeDecision(out.Attributes)
	if err != nil {
		return ora.DecisionState{}, wrap(err)
	}
	return st, nil
}

// prepareCommitment is ora's Commitment.Opened plus the item's body checks.
func prepareCommitment(c ora.Commitment, now time.Time) (ora.Commitment, error) {
	c, err := c.Opened(now)
	if err != nil {
		return ora.Commitment{}, err
	}
	if err := storableBody(c.Body); err != nil {
		return ora.Commitment{}, err
	}
	return c, nil
}

func commitmentItem(c ora.Commitment, shards int) map[string]types.AttributeValue {
	item := key(prefixCommitment+c.ID, skCommitment)
	item["type"] = sv(typeCommitment)
	item["id"] = sv(c.ID)
	item["signal_id"] = sv(c.SignalID)
	item["title"] = sv(c.Title)
	item["status"] = sv(c.Status)
	item["opened_at"] = sv(formatTime(c.OpenedAt))
	item["version"] = nv(int64(c.Version))
	if len(c.Body) > 0 {
		item["body"] = sv(string(c.Body))
	}
	// Only open commitments carry the IndexOpen keys: the index is sparse.
	// They are spread over the index partitions by commitment id, as the
	// kind index spreads entries by signal id.
	item[AttrGSI2PK] = sv(openPK(recentShard(c.ID, shards)))
	item[AttrGSI2SK] = sv(formatTime(c.OpenedAt) + "#" + c.ID)
	return item
}

func decodeCommitment(item map[string]types.AttributeValue) (ora.Commitment, error) {
	c := ora.Commitment{
		ID:       getS(item, "id"),
		SignalID: getS(item, "signal_id"),
		Title:    getS(item, "title"),
		Status:   getS(item, "status"),
		ClosedBy: getS(item, "closed_by"),
	}
	if b := getS(item, "body"); b != "" {
		c.Body = json.RawMessage(b)
	}
	v, err := getN(item, "version")
	if err != nil {
		return ora.Commitment{}, err
	}
	c.Version = int(v)
	if c.OpenedAt, err = getTime(item, "opened_at"); err != nil {
		return ora.Commitment{}, err
	}
	if closed, err := getTime(item, "closed_at"); err != nil {
		return ora.Commitment{}, err
	} else if !closed.IsZero() {
		c.ClosedAt = &closed
	}
	return c, nil
}

// OpenCommitment stores c as open with a conditional put; see ora.Ledger.
func (l *Ledger) OpenCommitment(ctx context.Context, in ora.Commitment) (ora.Commitment, error) {
	c, err := prepareCommitment(in, l.now())
	if err != nil {
		return ora.Commitment{}, fmt.Errorf("ledger: open commitment %s: %w", in.ID, err)
	}
	_, err = l.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(l.table),
		Item:                                commitmentItem(c, l.shards),
		ConditionExpression:                 aws.String("attribute_not_exists(" + AttrPK + ")"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if _, item, ok := failedCondition(err); ok && len(item) > 0 {
		return ora.Commitment{}, fmt.Errorf("ledger: open commitment %s: %w", c.ID,
			conflictWith(item, decodeCommitment, "commitment exists"))
	}
	if err != nil {
		return ora.Commitment{}, fmt.Errorf("ledger: open commitment %s: %w", c.ID, translate(err))
	}
	return c, nil
}

// CloseCommitment closes an open commitment by an update conditional on its
// being open, which also drops it from IndexOpen; see ora.Ledger.
func (l *Ledger) CloseCommitment(ctx context.Context, id, closedBy string) (ora.Commitment, error) {
	if id == "" {
		return ora.Commitment{}, fmt.Errorf("ledger: close commitment: %w", ora.Invalid("id", "required"))
	}
	out, err := l.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(l.table),
		Key:                 key(prefixCommitment+id, skCommitment),
		UpdateExpression:    aws.String("SET #status = :closed, #closed_at = :now, #closed_by = :by, #version = #version + :one REMOVE #gpk, #gsk"),
		ConditionExpression: aws.String("#status = :open"),
		ExpressionAttributeNames: map[string]string{
			"#status": "status", "#closed_at": "closed_at", "#closed_by": "closed_by", "#version": "version",
			"#gpk": AttrGSI2PK, "#gsk": AttrGSI2SK,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":closed": sv(ora.CommitmentClosed), ":open": sv(ora.CommitmentOpen), ":now": sv(formatTime(l.now())),
			":by": sv(closedBy), ":one": nv(1),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if _, item, ok := failedCondition(err); ok {
		if len(item) == 0 {
			return ora.Commitment{}, fmt.Errorf("ledger: close commitment %s: %w", id, ora.Errorf(ora.ENOTFOUND, "commitment %q not found", id))
		}
		return ora.Commitment{}, fmt.Errorf("ledger: close commitment %s: %w", id,
			conflictWith(item, decodeCommitment, "commitment is not open"))
	}
	if err != nil {
		return ora.Commitment{}, fmt.Errorf("ledger: close commitment %s: %w", id, translate(err))
	}
	c, err := decodeCommitment(out.Attributes)
	if err != nil {
		return ora.Commitment{}, fmt.Errorf("ledger: close commitment %s: %w", id, err)
	}
	return c, nil
}

// OpenCommitments returns open commitments, oldest first, through the sparse
// IndexOpen (eventually consistent); see ora.Ledger.
func (l *Ledger) OpenCommitments(ctx context.Context, limit int) ([]ora.Commitment, error) {
	if limit < 0 {
		return nil, fmt.Errorf("ledger: open commitments: %w", ora.Invalid("limit", "%d is negative", limit))
	}
	// Each shard is queried for up to limit, in parallel; the oldest limit
	// of their union are the answer.
	type result struct {
		items []ora.Commitment
		err   error
	}
	results := make([]result, l.shards)
	var wg sync.WaitGroup
	for shard := 0; shard < l.shards; shard++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			items, err := query(ctx, l.client, &dynamodb.QueryInput{
				TableName:                 aws.String(l.table),
				IndexName:                 aws.String(IndexOpen),
				KeyConditionExpression:    aws.String("#pk = :open"),
				ExpressionAttributeNames:  map[string]string{"#pk": AttrGSI2PK},
				ExpressionAttributeValues: map[string]types.AttributeValue{":open": sv(openPK(shard))},
				ScanIndexForward:          aws.Bool(true),
			}, limit, decodeCommitment)
			results[shard] = result{items, err}
		}()
	}
	wg.Wait()
	var out []ora.Commitment
	for _, r := range results {
		if r.err != nil {
			return nil, fmt.Errorf("ledger: open commitments: %w", r.err)
		}
		out = append(out, r.items...)
	}
	key := func(c ora.Commitment) string { return formatTime(c.OpenedAt) + "#" + c.ID }
	sort.SliceStable(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// openPK is the IndexOpen partition key of a shard: shard 0 keeps the
// unsharded key, so commitments opened before the index was sharded are
// still listed.
func openPK(shard int) string {
	if shard == 0 {
		return openMarker
	}
	return openMarker + "#" + strconv.Itoa(shard)
}
