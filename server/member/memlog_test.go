package member

import (
	"math"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storeSized appends entries first..last to l, entry i holding i bytes of
// data.
func storeSized(t *testing.T, l *memLog, first, last uint64) {
	t.Helper()
	var logs []*raft.Log
	for i := first; i <= last; i++ {
		logs = append(logs, &raft.Log{Index: i, Data: make([]byte, i)})
	}
	require.NoError(t, l.StoreLogs(logs))
}

// sizes returns what entries lo..hi of storeSized take in the log.
func sizes(lo, hi uint64) int64 {
	var n int64
	for i := lo; i <= hi; i++ {
		n += int64(i) + logEntryOverhead
	}
	return n
}

func TestMemLog_CountsBytesHeld(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, l *memLog)
		lo, hi uint64 // the entries held after the change, none when lo > hi
	}{
		{"appended", func(t *testing.T, l *memLog) {}, 1, 10},
		{"a prefix deleted, as after a snapshot", func(t *testing.T, l *memLog) {
			require.NoError(t, l.DeleteRange(1, 4))
		}, 5, 10},
		{"a prefix deleted from before the first", func(t *testing.T, l *memLog) {
			require.NoError(t, l.DeleteRange(0, 2))
		}, 3, 10},
		{"a conflicting tail deleted and written again", func(t *testing.T, l *memLog) {
			require.NoError(t, l.DeleteRange(7, 10))
			storeSized(t, l, 7, 12)
		}, 1, 12},
		{"everything deleted, then a log from a snapshot's index", func(t *testing.T, l *memLog) {
			require.NoError(t, l.DeleteRange(1, 10))
			storeSized(t, l, 100, 101)
		}, 100, 101},
		{"all deleted", func(t *testing.T, l *memLog) {
			require.NoError(t, l.DeleteRange(1, 10))
		}, 1, 0},
		{"a range outside the log", func(t *testing.T, l *memLog) {
			require.NoError(t, l.DeleteRange(20, 30))
		}, 1, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newMemLog()
			storeSized(t, l, 1, 10)
			tc.change(t, l)
			if tc.lo > tc.hi {
				assert.Zero(t, l.held())
				assert.Equal(t, uint64(math.MaxUint64), l.newestWithin(0), "nothing held: no bound")
				return
			}
			assert.Equal(t, sizes(tc.lo, tc.hi), l.held())
			assert.Equal(t, sizes(tc.lo, tc.hi), l.bytesAfter(0), "after an index before the log")
			assert.Equal(t, sizes(tc.lo+2, tc.hi), l.bytesAfter(tc.lo+1))
			assert.Zero(t, l.bytesAfter(tc.hi))
			assert.Equal(t, uint64(math.MaxUint64), l.newestWithin(l.held()), "all fit in what they hold: no bound")
			assert.Equal(t, tc.hi-tc.lo, l.newestWithin(l.held()-1), "all but the oldest fit in a byte less")
			assert.Equal(t, uint64(1), l.newestWithin(sizes(tc.hi, tc.hi)), "the newest alone")
			assert.Zero(t, l.newestWithin(sizes(tc.hi, tc.hi)-1), "not even the newest")
			first, err := l.FirstIndex()
			require.NoError(t, err)
			assert.Equal(t, tc.lo, first, "the store agrees")
		})
	}
}

// A follower that restores a snapshot appends after it, while entries from
// before stay in the store until the next compaction deletes them.
func TestMemLog_CountsEntriesBeforeAGap(t *testing.T) {
	l := newMemLog()
	storeSized(t, l, 1, 10)
	storeSized(t, l, 50, 52)
	assert.Equal(t, sizes(1, 10)+sizes(50, 52), l.held())
	assert.Equal(t, sizes(1, 10)+sizes(50, 52), l.bytesAfter(0))
	assert.Equal(t, sizes(51, 52), l.bytesAfter(50), "after an index past the gap")
	storeSized(t, l, 53, 53)
	require.NoError(t, l.DeleteRange(1, 50))
	assert.Equal(t, sizes(51, 53), l.held(), "compacted past the gap")
	first, err := l.FirstIndex()
	require.NoError(t, err)
	assert.Equal(t, uint64(51), first, "the store agrees")
}

func TestMemLog_HoleIsAnError(t *testing.T) {
	l := newMemLog()
	storeSized(t, l, 1, 10)
	assert.ErrorContains(t, l.DeleteRange(3, 5), "a hole")
}

func TestMemLog_PokesWhenPastAlarm(t *testing.T) {
	l := newMemLog()
	storeSized(t, l, 1, 3)
	select {
	case <-l.grown:
		t.Fatal("poked with no alarm set")
	default:
	}
	l.alarm.Store(l.held() + sizes(4, 5))
	storeSized(t, l, 4, 5)
	select {
	case <-l.grown:
		t.Fatal("poked at the alarm, before passing it")
	default:
	}
	storeSized(t, l, 6, 6)
	<-l.grown // buffered: the poke is there
	storeSized(t, l, 7, 7)
	select {
	case <-l.grown:
		t.Fatal("poked again before the alarm was set again")
	default:
	}
}
