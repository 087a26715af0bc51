package sqlite

import (
	"context"

	"github.com/ora-runtime/ora/shared/ora"
)

// sizeChecked applies ora.SizeCheck to each prepared entry, before anything
// is written, and reports which bodies go to the body store. Errors: EINVALID
// naming the entry over the limit.
func (d *DB) sizeChecked(entries []ora.Entry) ([]bool, error) {
	off := make([]bool, len(entries))
	for i, e := range entries {
		o, err := ora.SizeCheck(e, d.bodies != nil)
		if err != nil {
			return nil, err
		}
		off[i] = o
	}
	return off, nil
}

// offload writes e's body to the body store and returns the row form of e:
// an empty body, which marks a body stored by reference under
// ora.BodyKeyOf(e) (a stored body is never empty: it is JSON).
func (d *DB) offload(ctx context.Context, e ora.Entry) (ora.Entry, error) {
	if err := d.bodies.PutBody(ctx, ora.BodyKeyOf(e), e.Body); err != nil {
		return ora.Entry{}, err
	}
	e.Body = []byte{}
	return e, nil
}

// loadBodies reads back the bodies of entries stored by reference.
func (d *DB) loadBodies(ctx context.Context, entries []ora.Entry) error {
	for i := range entries {
		if len(entries[i].Body) > 0 {
			continue
		}
		b, err := ora.LoadBody(ctx, d.bodies, entries[i])
		if err != nil {
			return err
		}
		entries[i].Body = b
	}
	return nil
}
