package member

import (
	"fmt"
	"sort"
	"sync"

	"github.com/hashicorp/raft"
)

// logRuns holds an in-memory Raft log as runs of consecutive entries in
// slices. Raft appends entries with consecutive indexes, deletes a prefix
// after a snapshot and a suffix that conflicts with the leader's, so a map
// keyed by index (raft.InmemStore's) costs a hash insert, a delete and now
// and then a rehash of the whole table for each entry, where a slice costs
// an append. There is more than one run only after a follower restored a
// snapshot past its log's end: it then appends after a gap while holding the
// entries before it, until a compaction deletes them.
type logRuns struct {
	mu   sync.RWMutex // guards runs
	runs []logRun     // in index order, with gaps between them
}

// logRun is entries first, first+1, ... in logs (never empty).
type logRun struct {
	first uint64
	logs  []*raft.Log
}

var _ raft.LogStore = (*logRuns)(nil)

func (r *logRun) last() uint64 { return r.first + uint64(len(r.logs)) - 1 }

func (s *logRuns) FirstIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.runs) == 0 {
		return 0, nil
	}
	return s.runs[0].first, nil
}

func (s *logRuns) LastIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.runs) == 0 {
		return 0, nil
	}
	return s.runs[len(s.runs)-1].last(), nil
}

func (s *logRuns) GetLog(index uint64, out *raft.Log) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	// The run holding index, if any, is the last one starting at or before it.
	i := len(s.runs) - 1
	if i > 0 {
		i = sort.Search(len(s.runs), func(i int) bool { return s.runs[i].first > index }) - 1
	}
	if i < 0 || index < s.runs[i].first || index > s.runs[i].last() {
		return raft.ErrLogNotFound
	}
	*out = *s.runs[i].logs[index-s.runs[i].first]
	return nil
}

func (s *logRuns) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs keeps logs, which have consecutive indexes. Entries held from
// the first of them on are replaced.
func (s *logRuns) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	for i := 1; i < len(logs); i++ {
		if logs[i].Index != logs[0].Index+uint64(i) {
			return fmt.Errorf("store log entries: index %d follows %d", logs[i].Index, logs[i-1].Index)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cutFromLocked(logs[0].Index)
	if n := len(s.runs); n > 0 && s.runs[n-1].last()+1 == logs[0].Index {
		s.runs[n-1].logs = append(s.runs[n-1].logs, logs...)
		return nil
	}
	s.runs = append(s.runs, logRun{first: logs[0].Index, logs: append([]*raft.Log(nil), logs...)})
	return nil
}

// cutFromLocked drops the entries from index on.
func (s *logRuns) cutFromLocked(index uint64) {
	for n := len(s.runs); n > 0 && s.runs[n-1].last() >= index; n = len(s.runs) {
		r := &s.runs[n-1]
		if r.first >= index {
			clear(r.logs)
			s.runs = s.runs[:n-1]
			continue
		}
		keep := index - r.first
		clear(r.logs[keep:])
		r.logs = r.logs[:keep]
	}
}

// DeleteRange drops entries lo to hi. It may drop whole runs and cut one
// from either end, but it refuses to leave a hole inside a run, which Raft
// never asks for.
func (s *logRuns) DeleteRange(lo, hi uint64) error {
	if lo > hi {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.runs {
		if lo > r.first && hi < r.last() {
			return fmt.Errorf("delete log entries %d-%d: a hole inside %d-%d", lo, hi, r.first, r.last())
		}
	}
	kept := s.runs[:0]
	for _, r := range s.runs {
		switch {
		case hi < r.first || lo > r.last(): // untouched
		case lo <= r.first && hi >= r.last(): // all of it
			clear(r.logs)
			continue
		case lo <= r.first: // a prefix: the slots go, so the entries can
			n := hi - r.first + 1
			clear(r.logs[:n])
			r.logs, r.first = r.logs[n:], hi+1
		default: // a suffix
			n := lo - r.first
			clear(r.logs[n:])
			r.logs = r.logs[:n]
		}
		kept = append(kept, r)
	}
	clear(s.runs[len(kept):])
	s.runs = kept
	return nil
}
