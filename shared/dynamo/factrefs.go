package dynamo

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/factref"
	"github.com/ora-runtime/ora/shared/ora"
)

// Facts by reference (shared/factref). An observed-fact or
// orientation-packet entry whose item would hold its body inline keeps each
// fact's normalized body (of at least factref.MinBytes) once, in a fact-body
// item keyed by the body's sha256, and its own body with references in their
// place; reading puts the bodies back byte for byte and checks the entry's
// digest. An entry whose body goes to the body store anyway (over
// OffloadAbove even with its facts by reference) keeps its body whole there.
//
//	type       PK              SK     attributes
//	fact-body  FACT#<sha256>   BODY   body, ttl (absent: kept)
//
// Bodies are keyed by their digest, so their writes spread over partitions
// as the digests do (no hot key). A body is written before the entries that
// refer to it, in BatchWriteItem calls of up to 25 (billed one unit per KB,
// where a transaction bills two), and only when it is not stored yet with a
// TTL at least as late as theirs: the process remembers what it wrote, and
// asks DynamoDB (one BatchGetItem per 100 digests) about the rest. A body's
// TTL is the latest TTL of the entries that need it, rounded up to the day,
// so the many waves of a day that share a body move its TTL once. (The
// puts are not conditional: two processes that write one body at once with
// TTLs on different days leave the later write's, which may be the earlier
// day; retention is the same for both kinds by default, so they agree.)
const (
	typeFactBody = "fact-body"
	prefixFact   = "FACT#"
	skFactBody   = "BODY"
)

// factPut is a fact body to store and the TTL it needs (0: kept).
type factPut struct {
	factref.Body
	ttl int64
}

// factTTL is the TTL a fact body of e needs: e's, rounded up to the day; 0
// when e is kept.
func factTTL(e ora.Entry) int64 {
	if e.ExpiresAt == nil {
		return 0
	}
	const day = 24 * 60 * 60
	return (ttlSeconds(*e.ExpiresAt) + day - 1) / day * day
}

// later reports whether TTL a keeps a body at least as long as b needs.
func later(a, b int64) bool { return a == 0 || (b != 0 && a >= b) }

// forms applies the size rules (ora.SizeCheckAbove with OffloadAbove) to
// each prepared entry as its item stores it (storedSize: the deflated body
// when deflation applies), before anything is written, and returns the form
// its item holds: its facts by reference when that keeps the item inline
// (the bodies to put first are in facts), else the entry itself, whose body
// goes to the body store when off says so. zs holds each item's deflated
// body (nil: stored as text, or offloaded), for entryItemZ. Errors:
// EINVALID naming the entry over the limit.
func (l *Ledger) forms(entries []ora.Entry) (items []ora.Entry, off []bool, zs [][]byte, facts []factPut, err error) {
	items = make([]ora.Entry, len(entries))
	off = make([]bool, len(entries))
	zs = make([][]byte, len(entries))
	for i, e := range entries {
		items[i] = e
		if row, bodies := factref.Split(e.Kind, e.Body); len(bodies) > 0 {
			r := e
			r.Body = row
			z := deflated(row)
			if o, err := storedSize(r, z, l.bodies != nil, l.above); err == nil && !o {
				items[i], zs[i] = r, z
				ttl := factTTL(e)
				for _, b := range bodies {
					facts = append(facts, factPut{b, ttl})
				}
				continue
			}
		}
		z := deflated(e.Body)
		if off[i], err = storedSize(e, z, l.bodies != nil, l.above); err != nil {
			return nil, nil, nil, nil, err
		}
		if !off[i] {
			zs[i] = z
		}
	}
	return items, off, zs, facts, nil
}

func factKey(digest string) map[string]types.AttributeValue {
	return key(prefixFact+digest, skFactBody)
}

// putFacts stores the fact bodies not stored yet with the TTL they need.
func (l *Ledger) putFacts(ctx context.Context, facts []factPut) error {
	if len(facts) == 0 {
		return nil
	}
	need := map[string]factPut{}
	var order []string
	for _, f := range facts {
		have, ok := need[f.Digest]
		switch {
		case !ok:
			order = append(order, f.Digest)
			need[f.Digest] = f
		case !later(have.ttl, f.ttl):
			need[f.Digest] = f
		}
	}
	ask := order[:0:0]
	for _, d := range order {
		if !l.known.holds(d, need[d].ttl) {
			ask = append(ask, d)
		}
	}
	// Those stored with a TTL late enough need no write. An eventually
	// consistent read that misses a body just written costs a second
	// write of the same bytes, nothing else.
	stored := map[string]int64{}
	for start := 0; start < len(ask); start += batchGetMax {
		chunk := ask[start:min(start+batchGetMax, len(ask))]
		keys := make([]map[string]types.AttributeValue, len(chunk))
		for i, d := range chunk {
			keys[i] = factKey(d)
		}
		err := l.batchGetAttrs(ctx, keys, false, []string{AttrPK, AttrTTL}, func(item map[string]types.AttributeValue) {
			ttl, _ := getN(item, AttrTTL)
			stored[getS(item, AttrPK)[len(prefixFact):]] = ttl
		})
		if err != nil {
			return fmt.Errorf("fact bodies: %w", err)
		}
	}
	var writes []types.WriteRequest
	var wrote []factPut
	for _, d := range ask {
		f := need[d]
		if ttl, ok := stored[d]; ok && later(ttl, f.ttl) {
			l.known.note(d, ttl)
			continue
		}
		item := factKey(d)
		item["type"] = sv(typeFactBody)
		setBody(item, f.Bytes)
		if f.ttl != 0 {
			item[AttrTTL] = nv(f.ttl)
		}
		writes = append(writes, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
		wrote = append(wrote, f)
	}
	for start := 0; start < len(writes); start += batchWriteMax {
		if err := l.batchWrite(ctx, writes[start:min(start+batchWriteMax, len(writes))]); err != nil {
			return fmt.Errorf("fact bodies: %w", err)
		}
	}
	for _, f := range wrote {
		l.known.note(f.Digest, f.ttl)
	}
	return nil
}

// resolveFacts puts back the fact bodies of the entries stored by
// reference and checks each entry's digest. Errors: EINTERNAL naming the
// digest of a body that is not stored (expired or never written), or an
// entry whose resolved body does not match its digest; ETRANSIENT.
func (l *Ledger) resolveFacts(ctx context.Context, entries []ora.Entry) error {
	bodies := map[string][]byte{}
	var ask []string
	for _, e := range entries {
		if !factref.HasRefs(e.Body) {
			continue
		}
		for _, d := range factref.Digests(e.Body) {
			if _, ok := bodies[d]; ok {
				continue
			}
			b, _ := l.cache.get(d)
			bodies[d] = b
			if b == nil {
				ask = append(ask, d)
			}
		}
	}
	// A body never changes once written, so an eventually consistent read
	// (half the read units) finds it unless it was written a moment ago;
	// the ones it misses are read again strongly consistent.
	for _, consistent := range []bool{false, true} {
		for start := 0; start < len(ask); start += batchGetMax {
			chunk := ask[start:min(start+batchGetMax, len(ask))]
			keys := make([]map[string]types.AttributeValue, len(chunk))
			for i, d := range chunk {
				keys[i] = factKey(d)
			}
			var berr error
			err := l.batchGetAttrs(ctx, keys, consistent, []string{AttrPK, "body", attrBodyZ}, func(item map[string]types.AttributeValue) {
				d := getS(item, AttrPK)[len(prefixFact):]
				b, err := itemBody(item)
				if err != nil {
					berr = fmt.Errorf("fact body %s: %w", d, err)
					return
				}
				bodies[d] = b
				l.cache.put(d, b)
			})
			if err == nil {
				err = berr
			}
			if err != nil {
				return fmt.Errorf("fact bodies: %w", err)
			}
		}
		ask = slices.DeleteFunc(ask, func(d string) bool { return bodies[d] != nil })
	}
	for i, e := range entries {
		if !factref.HasRefs(e.Body) {
			continue
		}
		out, missing := factref.Join(e.Body, func(d string) []byte { return bodies[d] })
		if missing != "" {
			return ora.Errorf(ora.EINTERNAL, "entry %s/%s/%q: fact body %s is not stored (expired or never written)",
				e.SignalID, e.Kind, e.Qualifier, missing)
		}
		if ora.Digest(out) != e.Digest {
			return ora.Errorf(ora.EINTERNAL, "entry %s/%s/%q: its body put together from its fact bodies does not match its digest",
				e.SignalID, e.Kind, e.Qualifier)
		}
		entries[i].Body = out
	}
	return nil
}

// knownFacts remembers, per fact body this process stored or found stored,
// the TTL it has, so a body every wave refers to is asked about once; off
// (a negative BodyCacheBytes) remembers nothing. Bounded: when full it
// starts again, empty.
type knownFacts struct {
	mu  sync.Mutex
	off bool
	ttl map[string]int64
}

// knownFactsMax bounds knownFacts.
const knownFactsMax = 1 << 16

func (k *knownFacts) holds(digest string, ttl int64) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	have, ok := k.ttl[digest]
	return ok && later(have, ttl)
}

func (k *knownFacts) note(digest string, ttl int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.off {
		return
	}
	if k.ttl == nil || len(k.ttl) >= knownFactsMax {
		k.ttl = map[string]int64{}
	}
	if have, ok := k.ttl[digest]; !ok || !later(have, ttl) {
		k.ttl[digest] = ttl
	}
}
