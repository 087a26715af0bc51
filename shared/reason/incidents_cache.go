package reason

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
)

// DefaultIncidentsMaxAge is how long CachedIncidents serves incidents while
// the ledger's newest operator decision is unchanged.
const DefaultIncidentsMaxAge = 5 * time.Second

// CachedIncidents is an OperatorState that reads the incidents again only
// when the ledger's operator decisions moved on (its high-water mark: the
// decisions created at or after the newest one's time, read in one query
// of the few rows at the tail) or the incidents read are older than MaxAge:
// the kernel's read on every reasoning call costs that query while nothing
// was recorded, instead of 90 days of operator decisions. A newly recorded
// incident (or occurrence, resumption, classification) is seen by the next
// call after it is written; an operator decision created before the mark (a
// writer whose clock lags) within MaxAge. Safe for concurrent use: one
// caller reads while the others wait for its answer.
type CachedIncidents struct {
	state  OperatorState
	ledger RecentReader
	// MaxAge bounds how old the incidents served may be. Default
	// DefaultIncidentsMaxAge.
	MaxAge time.Duration
	now    func() time.Time

	mu   sync.Mutex
	mark string    // the operator decisions at or after high when read
	high time.Time // the newest operator decision's time when read
	at   time.Time // when read
	incs []operate.Incident
	sum  operate.Summary
}

// CacheIncidents returns state's incidents cached over ledger's operator
// decisions (see CachedIncidents); now is the clock (time.Now when nil).
func CacheIncidents(state OperatorState, ledger RecentReader, now func() time.Time) *CachedIncidents {
	if now == nil {
		now = time.Now
	}
	return &CachedIncidents{state: state, ledger: ledger, now: now}
}

// Incidents returns the incidents and their KPIs, read again when an
// operator decision was recorded since or the last read is older than
// MaxAge. Callers must not modify the slice. Errors: ETRANSIENT.
func (c *CachedIncidents) Incidents(ctx context.Context) ([]operate.Incident, operate.Summary, error) {
	t := c.now().UTC()
	c.mu.Lock()
	defer c.mu.Unlock()
	mark, high, err := c.tail(ctx, t, c.high)
	if err != nil {
		return nil, operate.Summary{}, fmt.Errorf("incidents: newest operator decisions: %w", err)
	}
	maxAge := c.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultIncidentsMaxAge
	}
	if !c.at.IsZero() && mark == c.mark && t.Sub(c.at) < maxAge && !t.Before(c.at) {
		return c.incs, c.sum, nil
	}
	incs, sum, err := c.state.Incidents(ctx)
	if err != nil {
		return nil, operate.Summary{}, err
	}
	c.mark, c.high, c.at, c.incs, c.sum = mark, high, t, incs, sum
	return incs, sum, nil
}

// tail names the operator decisions created at or after since (the newest
// one's time when since is zero): several may share the newest time, so the
// high-water mark is the set of them, and any decision recorded later joins
// it. It returns the set's key and the newest time in it.
func (c *CachedIncidents) tail(ctx context.Context, t, since time.Time) (string, time.Time, error) {
	to := t.Add(time.Hour)
	if since.IsZero() {
		newest, err := c.ledger.Recent(ctx, ora.KindOperatorDecision, t.Add(-operate.IncidentWindow), to, 1)
		if err != nil || len(newest) == 0 {
			return "", time.Time{}, err
		}
		since = newest[0].CreatedAt
	}
	es, err := c.ledger.Recent(ctx, ora.KindOperatorDecision, since, to, 0)
	if err != nil {
		return "", time.Time{}, err
	}
	keys := make([]string, 0, len(es))
	high := since
	for _, e := range es {
		keys = append(keys, e.SignalID+"\x00"+e.Qualifier+"\x00"+e.Digest)
		if e.CreatedAt.After(high) {
			high = e.CreatedAt
		}
	}
	slices.Sort(keys)
	return strings.Join(keys, "\x01"), high, nil
}

var _ OperatorState = (*CachedIncidents)(nil)
