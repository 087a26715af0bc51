package dynamo

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/ora"
)

// attrBodyRef names the attribute an entry item carries instead of "body"
// when its body is in the body store: the body's key there (ora.BodyKey of
// the entry's digest).
const attrBodyRef = "body_ref"

// sizeChecked applies ora.SizeCheck to each prepared entry, before anything
// is written, and reports which bodies go to the body store. Errors: EINVALID
// naming the entry over the limit.
func (l *Ledger) sizeChecked(entries []ora.Entry) ([]bool, error) {
	off := make([]bool, len(entries))
	for i, e := range entries {
		o, err := ora.SizeCheck(e, l.bodies != nil)
		if err != nil {
			return nil, err
		}
		off[i] = o
	}
	return off, nil
}

// offload writes e's body to the body store and returns the item form of e:
// no body, which entryItemSharded encodes as a body_ref attribute.
func (l *Ledger) offload(ctx context.Context, e ora.Entry) (ora.Entry, error) {
	if err := l.bodies.PutBody(ctx, ora.BodyKey(e.Digest), e.Body); err != nil {
		return ora.Entry{}, err
	}
	e.Body = nil
	return e, nil
}

// loadBodies reads back the bodies of entries stored by reference.
func (l *Ledger) loadBodies(ctx context.Context, entries []ora.Entry) error {
	for i := range entries {
		if len(entries[i].Body) > 0 {
			continue
		}
		b, err := ora.LoadBody(ctx, l.bodies, entries[i].Digest)
		if err != nil {
			return err
		}
		entries[i].Body = b
	}
	return nil
}

// decodeEntryWithBody decodes an entry item and reads its body back when it
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
