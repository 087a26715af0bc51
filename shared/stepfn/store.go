package stepfn

import (
	"context"
	"fmt"
	"sort"
	"sync"
)

// MemoryStore is a Store in memory: executions last as long as the process.
type MemoryStore struct {
	mu      sync.Mutex
	records map[string]ExecutionRecord
	history map[string]*memHistory
}

// memHistory holds events in fixed-size chunks, so appending never copies.
type memHistory struct {
	chunks [][]storedEvent
	n      int
}

const historyChunk = 64

func (h *memHistory) add(evs ...HistoryEvent) {
	for _, ev := range evs {
		if len(h.chunks) == 0 || len(h.chunks[len(h.chunks)-1]) == historyChunk {
			h.chunks = append(h.chunks, make([]storedEvent, 0, historyChunk))
		}
		last := len(h.chunks) - 1
		h.chunks[last] = append(h.chunks[last], compactEvent(ev))
		h.n++
	}
}

func (h *memHistory) all() []HistoryEvent {
	out := make([]HistoryEvent, 0, h.n)
	for _, c := range h.chunks {
		for _, ev := range c {
			out = append(out, ev.expand())
		}
	}
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
	h.add(events...)
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
	s.history[rec.ExecutionArn].add(events...)
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
	defer s.mu.Unlock()
	h, ok := s.history[execArn]
	if !ok {
		return nil, fmt.Errorf("stepfn: history %s: %w", execArn, ErrNotFound)
	}
	return h.all(), nil
}

// appendEvent appends one event to a stored execution's history; false for an
// unknown ARN.
func (s *MemoryStore) appendEvent(execArn string, ev HistoryEvent) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.history[execArn]
	if !ok {
		return false
	}
	h.add(ev)
	return true
}
