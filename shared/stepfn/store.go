package stepfn

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
)

// MemoryStore is a Store in memory: executions last as long as the process.
type MemoryStore struct {
	mu      sync.Mutex
	records map[string]ExecutionRecord
	history map[string]*memHistory
}

// memHistory holds events in chunks that never move, so appending never
// copies. One writer at a time appends (the engine, under its execution's
// lock, or the store, under its own): it fills the chunks, then counts the
// event in n, which publishes it. Readers read the first n events, taking
// mu only for the list of chunks, which mu guards: an execution appends
// without taking a lock of the history's.
type memHistory struct {
	mu     sync.Mutex
	chunks [][]storedEvent // each at its full length
	n      atomic.Int64    // the events written
	fill   int             // the events in the last chunk (the writer's)
}

// Sizes of history chunks, in events: the smallest first chunk, the largest
// first chunk (the engine sizes it to the last history of the same state
// machine), and the largest of the chunks after it.
const (
	historyFirstChunk = 32
	historyMaxFirst   = 4096
	historyMaxChunk   = 256
)

// add appends ev; the caller is the one writer.
func (h *memHistory) add(ev *storedEvent) {
	last := len(h.chunks) - 1
	if last < 0 || h.fill == len(h.chunks[last]) {
		size := historyFirstChunk
		if last >= 0 {
			size = min(2*len(h.chunks[last]), historyMaxChunk)
		}
		c := make([]storedEvent, size)
		h.mu.Lock()
		h.chunks = append(h.chunks, c)
		h.mu.Unlock()
		last++
		h.fill = 0
	}
	h.chunks[last][h.fill] = *ev
	h.fill++
	h.n.Add(1)
}

// addEvents appends evs; the caller is the one writer.
func (h *memHistory) addEvents(evs []HistoryEvent) {
	for _, ev := range evs {
		c := fullEvent(ev)
		h.add(&c)
	}
}

// each calls fn with every event written, in order.
func (h *memHistory) each(fn func(ev *storedEvent)) {
	n := h.n.Load() // first: the chunks read next hold these n events
	h.mu.Lock()
	chunks := h.chunks
	h.mu.Unlock()
	for _, c := range chunks {
		for i := range c {
			if n == 0 {
				return
			}
			fn(&c[i])
			n--
		}
	}
}

func (h *memHistory) all() []HistoryEvent {
	out := make([]HistoryEvent, 0, h.n.Load())
	h.each(func(ev *storedEvent) { out = append(out, ev.expand(int64(len(out)+1))) })
	return out
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{records: map[string]ExecutionRecord{}, history: map[string]*memHistory{}}
}

// CreateExecution stores a new execution; ErrExists when the ARN is taken.
func (s *MemoryStore) CreateExecution(_ context.Context, rec ExecutionRecord, events []HistoryEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.records[rec.ExecutionArn]; ok {
		return fmt.Errorf("stepfn: create execution %s: %w", rec.ExecutionArn, ErrExists)
	}
	s.records[rec.ExecutionArn] = rec
	h := &memHistory{}
	h.addEvents(events)
	s.history[rec.ExecutionArn] = h
	return nil
}

// SaveExecution replaces the record and appends events; ErrNotFound for an unknown ARN.
func (s *MemoryStore) SaveExecution(_ context.Context, rec ExecutionRecord, events []HistoryEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.records[rec.ExecutionArn]; !ok {
		return fmt.Errorf("stepfn: save execution %s: %w", rec.ExecutionArn, ErrNotFound)
	}
	s.records[rec.ExecutionArn] = rec
	s.history[rec.ExecutionArn].addEvents(events)
	return nil
}

// GetExecution returns the record; ErrNotFound for an unknown ARN.
func (s *MemoryStore) GetExecution(_ context.Context, execArn string) (ExecutionRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.records[execArn]
	if !ok {
		return ExecutionRecord{}, fmt.Errorf("stepfn: get execution %s: %w", execArn, ErrNotFound)
	}
	return rec, nil
}

// RunningExecutions returns the RUNNING records, by ARN.
func (s *MemoryStore) RunningExecutions(_ context.Context) ([]ExecutionRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ExecutionRecord
	for _, r := range s.records {
		if r.Status == StatusRunning {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ExecutionArn < out[j].ExecutionArn })
	return out, nil
}

// History returns a copy of the events; ErrNotFound for an unknown ARN.
func (s *MemoryStore) History(_ context.Context, execArn string) ([]HistoryEvent, error) {
	s.mu.Lock()
	h, ok := s.history[execArn]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("stepfn: history %s: %w", execArn, ErrNotFound)
	}
	return h.all(), nil
}

// createRunning is CreateExecution for the engine, with the first event as
// the engine keeps it and room for size events before the history grows.
func (s *MemoryStore) createRunning(rec ExecutionRecord, first storedEvent, size int) (*memHistory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.records[rec.ExecutionArn]; ok {
		return nil, fmt.Errorf("stepfn: create execution %s: %w", rec.ExecutionArn, ErrExists)
	}
	s.records[rec.ExecutionArn] = rec
	h := &memHistory{chunks: [][]storedEvent{make([]storedEvent, size)}}
	h.add(&first)
	s.history[rec.ExecutionArn] = h
	return h, nil
}

// historyOf returns the stored history of an execution, to which the engine
// appends the events of a RUNNING execution directly; nil for an unknown ARN.
func (s *MemoryStore) historyOf(execArn string) *memHistory {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.history[execArn]
}
