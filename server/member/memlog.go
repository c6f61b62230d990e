package member

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// logEntryOverhead is what an entry of the in-memory log is counted as
// costing besides its data. It costs less (its 40-byte record in logRuns and
// its running total here), but the figure also spaces snapshots, and stands
// for a node's share of a snapshot in logBudget.
const logEntryOverhead = 96

// memLog is an in-memory member's Raft log (logRuns) and stable store
// (raft's InmemStore, whose own log methods it hides), plus the bytes each
// entry holds, so that the log can be kept within a budget in
// bytes as well as in entries (tuneMemLog). Raft appends entries with
// consecutive indexes and deletes either a prefix (after a snapshot) or a
// suffix (a conflicting tail), so the sizes are kept as running totals over
// the indexes held.
type memLog struct {
	*raft.InmemStore // the stable store only
	entries          logRuns

	mu    sync.Mutex // guards first, base, cum and older
	first uint64     // the index of cum[0]
	base  int64      // the running total before first
	cum   []int64    // cum[i]: the running total up to index first+i, inclusive
	older struct {   // entries before a gap, left by a snapshot's restore
		lo, hi uint64
		bytes  int64
	}

	alarm atomic.Int64  // held bytes past which StoreLogs pokes grown
	grown chan struct{} // poked (never blocking) when the log passes alarm
}

var _ raft.LogStore = (*memLog)(nil)

func newMemLog() *memLog {
	m := &memLog{InmemStore: raft.NewInmemStore(), grown: make(chan struct{}, 1)}
	m.alarm.Store(math.MaxInt64)
	return m
}

func entryBytes(l *raft.Log) int64 {
	return int64(len(l.Data)+len(l.Extensions)) + logEntryOverhead
}

func (m *memLog) StoreLog(l *raft.Log) error { return m.StoreLogs([]*raft.Log{l}) }

func (m *memLog) FirstIndex() (uint64, error) { return m.entries.FirstIndex() }

func (m *memLog) LastIndex() (uint64, error) { return m.entries.LastIndex() }

func (m *memLog) GetLog(index uint64, out *raft.Log) error { return m.entries.GetLog(index, out) }

func (m *memLog) StoreLogs(logs []*raft.Log) error {
	if err := m.entries.StoreLogs(logs); err != nil {
		return err
	}
	m.mu.Lock()
	for _, l := range logs {
		m.add(l.Index, entryBytes(l))
	}
	held := m.heldLocked()
	m.mu.Unlock()
	if held > m.alarm.Load() {
		m.alarm.Store(math.MaxInt64) // until the tuner sets it again
		select {
		case m.grown <- struct{}{}:
		default:
		}
	}
	return nil
}

// add records the size of the entry at index, after the last one held (or
// in place of a tail from index on, which the store has just overwritten).
func (m *memLog) add(index uint64, size int64) {
	switch {
	case len(m.cum) == 0:
		m.first, m.base = index, 0
	case index < m.first:
		m.first, m.base, m.cum = index, 0, m.cum[:0]
	case index < m.first+uint64(len(m.cum)):
		m.cum = m.cum[:index-m.first]
	case index > m.first+uint64(len(m.cum)):
		// A gap: a follower that restored a snapshot appends after it,
		// while the store still holds the entries from before, until a
		// compaction deletes them with the next prefix.
		if m.older.bytes == 0 {
			m.older.lo = m.first
		}
		m.older.hi = m.first + uint64(len(m.cum)) - 1
		m.older.bytes += m.heldRunLocked()
		m.first, m.base, m.cum = index, 0, m.cum[:0]
	}
	total := m.base
	if len(m.cum) > 0 {
		total = m.cum[len(m.cum)-1]
	}
	m.cum = append(m.cum, total+size)
}

func (m *memLog) DeleteRange(lo, hi uint64) error {
	if err := m.entries.DeleteRange(lo, hi); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.older.bytes > 0 && lo <= m.older.lo && hi >= m.older.hi {
		m.older.bytes = 0
	}
	if len(m.cum) == 0 {
		return nil
	}
	last := m.first + uint64(len(m.cum)) - 1
	switch {
	case hi < m.first || lo > last:
	case lo <= m.first && hi >= last:
		m.cum = m.cum[:0]
	case lo <= m.first: // a prefix: compaction after a snapshot
		m.base = m.cum[hi-m.first]
		m.cum = m.cum[hi-m.first+1:]
		m.first = hi + 1
	case hi >= last: // a suffix: a tail that conflicted with the leader's
		m.cum = m.cum[:lo-m.first]
	default:
		return fmt.Errorf("delete log entries %d-%d: a hole inside %d-%d", lo, hi, m.first, last)
	}
	return nil
}

func (m *memLog) heldLocked() int64 { return m.older.bytes + m.heldRunLocked() }

// heldRunLocked returns the bytes of the entries from first on.
func (m *memLog) heldRunLocked() int64 {
	if len(m.cum) == 0 {
		return 0
	}
	return m.cum[len(m.cum)-1] - m.base
}

// held returns the bytes of every entry held.
func (m *memLog) held() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.heldLocked()
}

// bytesAfter returns the bytes of the entries held after index.
func (m *memLog) bytesAfter(index uint64) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.cum) == 0 {
		return 0
	}
	end := m.cum[len(m.cum)-1]
	switch {
	case index < m.older.lo && m.older.bytes > 0:
		return m.older.bytes + end - m.base
	case index < m.first:
		return end - m.base
	case index >= m.first+uint64(len(m.cum)):
		return 0
	default:
		return end - m.cum[index-m.first]
	}
}

// newestWithin returns how many of the newest entries held fit in budget
// bytes, or math.MaxUint64 when all of them do.
func (m *memLog) newestWithin(budget int64) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.cum)
	if n == 0 || m.heldLocked() <= budget {
		return math.MaxUint64
	}
	end := m.cum[n-1]
	// The oldest i such that the entries after i (i excluded) fit; the
	// entries i+1..n-1 are n-1-i.
	i := sort.Search(n, func(i int) bool { return end-m.cum[i] <= budget })
	return uint64(n - 1 - i)
}
