package member

import (
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// TestLogRuns_AgreesWithAMap drives logRuns through what Raft does to a log
// (appends, a conflicting tail replaced, compactions, a gap after a restored
// snapshot) and checks every index against a map of what should be held.
func TestLogRuns_AgreesWithAMap(t *testing.T) {
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
				logs = append(logs, &raft.Log{Index: from + uint64(i), Term: term})
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
			for i := uint64(0); i <= lastGot+1; i++ {
				var got raft.Log
				err := s.GetLog(i, &got)
				if term, ok := want[i]; ok {
					require.NoError(t, err, "seed %d step %d: index %d", seed, step, i)
					require.Equal(t, raft.Log{Index: i, Term: term}, got)
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

// TestLogRuns_CompactionLetsEntriesGo checks that a compacted entry is not
// kept alive by the slot it had.
func TestLogRuns_CompactionLetsEntriesGo(t *testing.T) {
	var s logRuns
	require.NoError(t, s.StoreLogs([]*raft.Log{{Index: 1}, {Index: 2}, {Index: 3}}))
	backing := s.runs[0].logs[:3]
	require.NoError(t, s.DeleteRange(1, 2))
	require.Nil(t, backing[0])
	require.Nil(t, backing[1])
	require.NotNil(t, backing[2])
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
