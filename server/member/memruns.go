package member

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

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
//
// The log holds no pointer the garbage collector must follow: an entry's
// fields are a fixed-size record (logEntry) and its bytes are copied into
// chunks (logArena). Keeping the *raft.Log Raft hands over would make the
// collector visit every entry held at every cycle, and on a leader each of
// those is part of its proposal's future, which it would keep alive too: a
// leader under a write load spent a seventh of its CPU collecting.
type logRuns struct {
	mu    sync.RWMutex // guards runs and bytes
	runs  []logRun     // in index order, with gaps between them
	bytes logArena
}

// logRun is entries first, first+1, ... (never empty), in blocks of
// logBlock: appending fills the last block, and a compaction lets go the
// blocks before the first entry, so that neither copies entries.
type logRun struct {
	first  uint64
	skip   int // entries of blocks[0] before first
	n      int // entries held
	blocks []*[logBlock]logEntry
}

const logBlock = 256

func (r *logRun) at(index uint64) *logEntry {
	k := r.skip + int(index-r.first)
	return &r.blocks[k/logBlock][k%logBlock]
}

func (r *logRun) push(e logEntry) {
	k := r.skip + r.n
	if k/logBlock == len(r.blocks) {
		r.blocks = append(r.blocks, new([logBlock]logEntry))
	}
	r.blocks[k/logBlock][k%logBlock] = e
	r.n++
}

// dropFirst drops the first m entries.
func (r *logRun) dropFirst(m int) {
	r.skip += m
	r.n -= m
	r.first += uint64(m)
	gone := r.skip / logBlock
	clear(r.blocks[:gone])
	r.blocks = r.blocks[gone:]
	r.skip %= logBlock
}

// keepFirst keeps the first m entries.
func (r *logRun) keepFirst(m int) {
	r.n = m
	blocks := (r.skip + m + logBlock - 1) / logBlock
	clear(r.blocks[blocks:])
	r.blocks = r.blocks[:blocks]
}

// logEntry is a raft.Log without its index (its place in the run) and with
// its data and extensions, one after the other, at off in the arena's chunk
// numbered chunk.
type logEntry struct {
	term     uint64
	appended int64 // AppendedAt in Unix nanoseconds; 0 for the zero time
	chunk    uint64
	off      uint32
	dataLen  uint32
	extLen   uint32
	typ      raft.LogType
}

var _ raft.LogStore = (*logRuns)(nil)

func (r *logRun) last() uint64 { return r.first + uint64(r.n) - 1 }

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

// GetLog sets out to the entry at index. Its Data and Extensions are
// read-only views of the log's bytes, which stay valid after the entry is
// deleted.
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
	e := s.runs[i].at(index)
	*out = raft.Log{Index: index, Term: e.term, Type: e.typ}
	if e.dataLen+e.extLen > 0 {
		c := s.bytes.chunk(e.chunk)
		end := e.off + e.dataLen
		if e.dataLen > 0 {
			out.Data = c[e.off:end:end]
		}
		if e.extLen > 0 {
			out.Extensions = c[end : end+e.extLen : end+e.extLen]
		}
	}
	if e.appended != 0 {
		out.AppendedAt = time.Unix(0, e.appended)
	}
	return nil
}

func (s *logRuns) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs keeps copies of logs, which have consecutive indexes. Entries
// held from the first of them on are replaced.
func (s *logRuns) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	for i, l := range logs {
		if i > 0 && l.Index != logs[0].Index+uint64(i) {
			return fmt.Errorf("store log entries: index %d follows %d", l.Index, logs[i-1].Index)
		}
		if len(l.Data) > math.MaxUint32/2 || len(l.Extensions) > math.MaxUint32/2 {
			return fmt.Errorf("store log entry %d: %d bytes of data, too large", l.Index, len(l.Data)+len(l.Extensions))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cutFromLocked(logs[0].Index)
	n := len(s.runs)
	if n == 0 || s.runs[n-1].last()+1 != logs[0].Index {
		s.runs = append(s.runs, logRun{first: logs[0].Index})
		n++
	}
	r := &s.runs[n-1]
	for _, l := range logs {
		e := logEntry{term: l.Term, typ: l.Type, dataLen: uint32(len(l.Data)), extLen: uint32(len(l.Extensions))}
		e.chunk, e.off = s.bytes.put(l.Data, l.Extensions)
		if !l.AppendedAt.IsZero() {
			e.appended = l.AppendedAt.UnixNano()
		}
		r.push(e)
	}
	s.releaseLocked()
	return nil
}

// cutFromLocked drops the entries from index on.
func (s *logRuns) cutFromLocked(index uint64) {
	for n := len(s.runs); n > 0 && s.runs[n-1].last() >= index; n = len(s.runs) {
		r := &s.runs[n-1]
		if r.first >= index {
			s.runs = s.runs[:n-1]
			continue
		}
		r.keepFirst(int(index - r.first))
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
			continue
		case lo <= r.first: // a prefix
			r.dropFirst(int(hi - r.first + 1))
		default: // a suffix
			r.keepFirst(int(lo - r.first))
		}
		kept = append(kept, r)
	}
	clear(s.runs[len(kept):])
	s.runs = kept
	s.releaseLocked()
	return nil
}

// releaseLocked lets go the chunks before the first entry's: entries take
// their bytes from chunks in index order, so no entry held refers to them.
func (s *logRuns) releaseLocked() {
	oldest := uint64(math.MaxUint64)
	if len(s.runs) > 0 {
		oldest = s.runs[0].at(s.runs[0].first).chunk
	}
	s.bytes.release(oldest)
}

// logArena holds the bytes of a log's entries in chunks that are only
// appended to: an entry's bytes are never overwritten, so the views GetLog
// hands out stay valid for as long as anyone holds them (the chunk with
// them), after their entry is deleted too. The chunks hold no pointers, so
// the garbage collector does not scan them. A chunk is numbered by the
// order it was made in; entries in index order have nondecreasing numbers.
type logArena struct {
	chunks [][]byte // chunks[i] is numbered base+i; the last is being filled
	base   uint64
}

const (
	minLogChunk = 4 << 10  // the first chunk; each next one twice the last,
	maxLogChunk = 32 << 10 // up to this (or one entry's size, if larger)
)

// put appends a and b and returns the chunk and offset where a starts.
// Nothing to put still gets the chunk being filled, so that numbers stay in
// index order.
func (a *logArena) put(x, y []byte) (uint64, uint32) {
	size := len(x) + len(y)
	last := len(a.chunks) - 1
	if size == 0 {
		return a.base + uint64(max(last, 0)), 0
	}
	if last < 0 || len(a.chunks[last])+size > cap(a.chunks[last]) {
		next := minLogChunk
		if last >= 0 {
			next = min(2*cap(a.chunks[last]), maxLogChunk)
		}
		a.chunks = append(a.chunks, make([]byte, 0, max(next, size)))
		last++
	}
	c := a.chunks[last]
	off := len(c)
	a.chunks[last] = append(append(c, x...), y...)
	return a.base + uint64(last), uint32(off)
}

func (a *logArena) chunk(n uint64) []byte { return a.chunks[n-a.base] }

// release drops the chunks numbered before oldest, except the one being
// filled.
func (a *logArena) release(oldest uint64) {
	drop := 0
	for drop < len(a.chunks)-1 && a.base+uint64(drop) < oldest {
		drop++
	}
	if drop > 0 {
		clear(a.chunks[:drop])
		a.chunks = a.chunks[drop:]
		a.base += uint64(drop)
	}
}
