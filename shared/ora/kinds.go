package ora

import (
	"context"
	"fmt"
	"slices"
)

// EntryReader reads a signal's entries (Ledger.Entries).
type EntryReader interface {
	Entries(ctx context.Context, signalID string) ([]Entry, error)
}

// KindReader is a ledger that reads a signal's entries of some kinds only,
// leaving the rest (a wave's observed facts and its packet, the bulk of its
// bytes) unread. EntriesOfKinds returns them in Entries' order; an empty
// result is not an error. Errors: ETRANSIENT.
type KindReader interface {
	EntriesOfKinds(ctx context.Context, signalID string, kinds ...EntryKind) ([]Entry, error)
}

// EntriesOfKinds returns the entries of signalID whose kind is one of kinds,
// in Entries' order: through l's own EntriesOfKinds when l is a KindReader,
// else by filtering Entries. Errors: ENOTFOUND when the signal has no entry
// of those kinds, ETRANSIENT.
func EntriesOfKinds(ctx context.Context, l EntryReader, signalID string, kinds ...EntryKind) ([]Entry, error) {
	var (
		out []Entry
		err error
	)
	if kr, ok := l.(KindReader); ok {
		out, err = kr.EntriesOfKinds(ctx, signalID, kinds...)
	} else {
		var all []Entry
		if all, err = l.Entries(ctx, signalID); err != nil && ErrorCode(err) != ENOTFOUND {
			return nil, err
		}
		for _, e := range all {
			if slices.Contains(kinds, e.Kind) {
				out = append(out, e)
			}
		}
		err = nil
	}
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("ledger: entries of %s: %w", signalID, Errorf(ENOTFOUND, "signal %q has no entries of kinds %v", signalID, kinds))
	}
	return out, nil
}
