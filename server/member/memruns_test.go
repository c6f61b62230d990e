package member

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// TestLogRuns_AgreesWithAMap drives logRuns through what Raft does to a log
// (appends, a conflicting tail replaced, compactions, a gap after a restored
// snapshot) and checks every index against a map of what should be held,
// and that the chunks no entry refers to any more are let go.
func TestLogRuns_AgreesWithAMap(t *testing.T) {
	// entry is what the log should hold at index in term: some with no
	// data, some with extensions, now and then one larger than a chunk.
	made := map[[2]uint64]raft.Log{}
	entry := func(index, term uint64) raft.Log {
		if l, ok := made[[2]uint64{index, term}]; ok {
			return l
		}
		l := raft.Log{Index: index, Term: term}
		switch {
		case index%7 == 0:
		case index%499 == 1:
			l.Data = bytes.Repeat([]byte{byte(index)}, maxLogChunk+int(index%3))
		case index%7 == 1:
			l.Data = bytes.Repeat([]byte{byte(index)}, 6000)
		default:
			l.Data = fmt.Appendf(nil, "%d in term %d", index, term)
		}
		if index%3 == 0 {
			l.Extensions = fmt.Appendf(nil, "ext %d", index)
		}
		made[[2]uint64{index, term}] = l
		return l
	}
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var s logRuns
		want := map[uint64]uint64{} // index -> term
		last := func() uint64 {
			var m uint64
			for i := range want {
				m = max(m, i)
			}
			return m
		}
		store := func(from uint64, n int, term uint64) {
			var logs []*raft.Log
			for i := range n {
				l := entry(from+uint64(i), term)
				logs = append(logs, &l)
			}
			require.NoError(t, s.StoreLogs(logs))
			for i := range want {
				if i >= from {
					delete(want, i)
				}
			}
			for _, l := range logs {
				want[l.Index] = l.Term
			}
		}
		del := func(lo, hi uint64) {
			require.NoError(t, s.DeleteRange(lo, hi))
			for i := lo; i <= hi; i++ {
				delete(want, i)
			}
		}
		for step := range 300 {
			term := uint64(step + 1)
			l := last()
			switch op := rng.IntN(10); {
			case op < 5: // append
				store(l+1, 1+rng.IntN(20), term)
			case op < 7 && l > 0: // a conflicting tail replaced
				from := l - uint64(rng.IntN(int(min(l, 10))))
				if rng.IntN(2) == 0 {
					del(from, l)
				}
				store(from, 1+rng.IntN(5), term)
			case op < 9 && l > 0: // compaction of a prefix
				first, err := s.FirstIndex()
				require.NoError(t, err)
				if first > 0 {
					del(first, first+uint64(rng.IntN(int(l-first+1))))
				}
			default: // a snapshot restored past the end: a gap
				store(l+2+uint64(rng.IntN(30)), 1+rng.IntN(5), term)
			}
			first, err := s.FirstIndex()
			require.NoError(t, err)
			lastGot, err := s.LastIndex()
			require.NoError(t, err)
			lo := uint64(0)
			for i := range want {
				if lo == 0 || i < lo {
					lo = i
				}
			}
			require.Equal(t, lo, first, "seed %d step %d: first index", seed, step)
			require.Equal(t, last(), lastGot, "seed %d step %d: last index", seed, step)
			if len(s.runs) > 0 {
				filling := s.bytes.base + uint64(max(len(s.bytes.chunks)-1, 0))
				require.Equal(t, min(s.runs[0].at(s.runs[0].first).chunk, filling), s.bytes.base,
					"seed %d step %d: the chunks before the oldest entry's are let go", seed, step)
			}
			for i := uint64(0); i <= lastGot+1; i++ {
				var got raft.Log
				err := s.GetLog(i, &got)
				if term, ok := want[i]; ok {
					require.NoError(t, err, "seed %d step %d: index %d", seed, step, i)
					require.Equal(t, entry(i, term), got)
				} else {
					require.ErrorIs(t, err, raft.ErrLogNotFound, "seed %d step %d: index %d", seed, step, i)
				}
			}
		}
	}
}

func TestLogRuns_RefusesAHoleAndNonConsecutiveEntries(t *testing.T) {
	var s logRuns
	require.NoError(t, s.StoreLogs([]*raft.Log{{Index: 1}, {Index: 2}, {Index: 3}}))
	require.ErrorContains(t, s.DeleteRange(2, 2), "a hole")
	require.ErrorContains(t, s.StoreLogs([]*raft.Log{{Index: 4}, {Index: 6}}), "follows")
	last, err := s.LastIndex()
	require.NoError(t, err)
	require.Equal(t, uint64(3), last, "nothing changed")
}

// TestLogRuns_KeepsCopies checks that the log holds its own copy of what it
// is given, and that what GetLog hands out stays as it was while the log
// goes on: later entries, a replaced tail and a compaction leave it alone.
func TestLogRuns_KeepsCopies(t *testing.T) {
	var s logRuns
	at := time.Unix(1700000000, 123456789)
	given := &raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("one"), Extensions: []byte("x"), AppendedAt: at}
	require.NoError(t, s.StoreLogs([]*raft.Log{given, {Index: 2, Term: 1, Data: []byte("two")}}))
	copy(given.Data, "ONE")
	var one, two raft.Log
	require.NoError(t, s.GetLog(1, &one))
	require.Equal(t, "one", string(one.Data), "a copy, not the caller's bytes")
	require.Equal(t, "x", string(one.Extensions))
	require.True(t, at.Equal(one.AppendedAt))
	require.NoError(t, s.GetLog(2, &two))
	_ = append(one.Data, "!!!"...) // a reader's append must not reach the next entry
	require.Equal(t, "x", string(one.Extensions))

	require.NoError(t, s.StoreLogs([]*raft.Log{{Index: 2, Term: 2, Data: []byte("TWO")}, {Index: 3, Term: 2, Data: []byte("three")}}))
	require.NoError(t, s.DeleteRange(1, 2))
	require.Equal(t, "one", string(one.Data))
	require.Equal(t, "two", string(two.Data), "a replaced entry's bytes are not reused")
	var three raft.Log
	require.NoError(t, s.GetLog(3, &three))
	require.Equal(t, "three", string(three.Data))
}

// TestLogRuns_CompactionLetsChunksGo checks that a compaction lets go the
// bytes of the entries it deletes, and that the log's chunks grow to
// maxLogChunk.
func TestLogRuns_CompactionLetsChunksGo(t *testing.T) {
	var s logRuns
	data := make([]byte, 1000)
	for i := range uint64(10000) {
		require.NoError(t, s.StoreLog(&raft.Log{Index: i + 1, Data: data}))
	}
	held := func() (n int) {
		for _, c := range s.bytes.chunks {
			n += cap(c)
		}
		return n
	}
	require.GreaterOrEqual(t, held(), 10000*1000)
	require.LessOrEqual(t, held(), 2*10000*1000)
	require.Equal(t, maxLogChunk, cap(s.bytes.chunks[len(s.bytes.chunks)-1]))
	require.NoError(t, s.DeleteRange(1, 9000))
	require.LessOrEqual(t, held(), 1000*1000+2*maxLogChunk, "about the last thousand entries' bytes")
	var l raft.Log
	require.NoError(t, s.GetLog(9001, &l))
	require.Len(t, l.Data, 1000)
	require.NoError(t, s.DeleteRange(9001, 10000))
	require.LessOrEqual(t, held(), maxLogChunk, "only the chunk being filled")
}

func BenchmarkLogStore_AppendCompact(b *testing.B) {
	stores := []struct {
		name string
		new  func() raft.LogStore
	}{
		{"runs", func() raft.LogStore { return &logRuns{} }},
		{"inmem", func() raft.LogStore { return raft.NewInmemStore() }},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			s := st.new()
			batch := make([]*raft.Log, 16)
			var next, first uint64 = 1, 1
			for b.Loop() {
				for i := range batch {
					batch[i] = &raft.Log{Index: next}
					next++
				}
				if err := s.StoreLogs(batch); err != nil {
					b.Fatal(err)
				}
				if next-first > 8192 { // compact as a snapshot would
					if err := s.DeleteRange(first, next-1025); err != nil {
						b.Fatal(err)
					}
					first = next - 1024
				}
			}
		})
	}
}
