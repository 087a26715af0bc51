package dynamo

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/ora"
)

// attrBodyRef names the attribute an entry item carries instead of "body"
// when its body is in the body store: the body's key there (ora.BodyKeyOf
// the entry).
const attrBodyRef = "body_ref"

// offload writes e's body to the body store and returns the item form of e:
// no body, which entryItemSharded encodes as a body_ref attribute.
func (l *Ledger) offload(ctx context.Context, e ora.Entry) (ora.Entry, error) {
	if err := l.bodies.PutBody(ctx, ora.BodyKeyOf(e), e.Body); err != nil {
		return ora.Entry{}, err
	}
	e.Body = nil
	return e, nil
}

// loadBodies reads back the bodies of entries stored by reference (their
// facts' bodies too: resolveFacts), at most
// loadParallel at once, each through the ledger's cache: a body is
// content-addressed, so the bytes under a digest never change and a process
// reads each at most once while it stays in the cache.
func (l *Ledger) loadBodies(ctx context.Context, entries []ora.Entry) error {
	var wg sync.WaitGroup
	errs := make([]error, len(entries))
	sem := make(chan struct{}, loadParallel)
	for i := range entries {
		if len(entries[i].Body) > 0 {
			continue
		}
		if b, ok := l.cache.get(entries[i].Digest); ok {
			entries[i].Body = b
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			b, err := ora.LoadBody(ctx, l.bodies, entries[i])
			if err != nil {
				errs[i] = err
				return
			}
			l.cache.put(entries[i].Digest, b)
			entries[i].Body = b
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return l.resolveFacts(ctx, entries)
}

// loadParallel is how many bodies one read loads from the body store at once.
const loadParallel = 8

// bodyCache keeps recently read bodies by digest, up to max bytes, evicting
// the oldest first.
type bodyCache struct {
	mu    sync.Mutex
	max   int
	size  int
	byKey map[string][]byte
	order []string
}

func newBodyCache(max int) *bodyCache { return &bodyCache{max: max, byKey: map[string][]byte{}} }

func (c *bodyCache) get(digest string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.byKey[digest]
	return b, ok
}

func (c *bodyCache) put(digest string, b []byte) {
	if len(b) > c.max { // a negative max keeps nothing
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[digest]; ok {
		return
	}
	for c.size+len(b) > c.max && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.size -= len(c.byKey[old])
		delete(c.byKey, old)
	}
	c.byKey[digest] = b
	c.order = append(c.order, digest)
	c.size += len(b)
}

// decodeEntryWithBody decodes one entry item and reads its body back when it
// is stored by reference.
func (l *Ledger) decodeEntryWithBody(ctx context.Context) func(map[string]types.AttributeValue) (ora.Entry, error) {
	return func(item map[string]types.AttributeValue) (ora.Entry, error) {
		e, err := decodeEntry(item)
		if err != nil {
			return ora.Entry{}, err
		}
		one := []ora.Entry{e}
		if err := l.loadBodies(ctx, one); err != nil {
			return ora.Entry{}, err
		}
		return one[0], nil
	}
}
