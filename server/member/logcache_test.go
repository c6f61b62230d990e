package member

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingStore is a log store that counts the reads that reach it.
type countingStore struct {
	*raft.InmemStore
	reads int
}

func (s *countingStore) GetLog(index uint64, log *raft.Log) error {
	s.reads++
	return s.InmemStore.GetLog(index, log)
}

func TestLogCache_BoundedByEntriesAndBytes(t *testing.T) {
	tests := []struct {
		name       string
		maxEntries int
		maxBytes   int64
		store      [][2]uint64 // batches of indexes lo..hi, entry i holding i bytes
		deleteAll  bool
		cached     [2]uint64 // the indexes served from memory; none when lo > hi
	}{
		{"within both bounds", 8, 1 << 20, [][2]uint64{{1, 5}}, false, [2]uint64{1, 5}},
		{"the newest entries", 4, 1 << 20, [][2]uint64{{1, 3}, {4, 10}}, false, [2]uint64{7, 10}},
		{"the newest bytes", 8, sizes(8, 10), [][2]uint64{{1, 10}}, false, [2]uint64{8, 10}},
		{"entries larger than the bound", 8, sizes(100, 100) - 1, [][2]uint64{{1, 3}, {100, 100}}, false, [2]uint64{1, 0}},
		{"a gap starts afresh", 8, 1 << 20, [][2]uint64{{1, 5}, {20, 22}}, false, [2]uint64{20, 22}},
		{"a rewritten tail", 8, 1 << 20, [][2]uint64{{1, 5}, {3, 4}}, false, [2]uint64{3, 4}},
		{"nothing after a delete", 8, 1 << 20, [][2]uint64{{1, 5}}, true, [2]uint64{1, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := &countingStore{InmemStore: raft.NewInmemStore()}
			c := newLogCache(store, tc.maxEntries, tc.maxBytes)
			var first, last uint64 = 1 << 62, 0
			for _, b := range tc.store {
				var logs []*raft.Log
				for i := b[0]; i <= b[1]; i++ {
					logs = append(logs, &raft.Log{Index: i, Data: make([]byte, i)})
				}
				require.NoError(t, c.StoreLogs(logs))
				first, last = min(first, b[0]), max(last, b[1])
			}
			if tc.deleteAll {
				require.NoError(t, c.DeleteRange(1, 4))
				first = 5
			}
			for i := first; i <= last; i++ {
				var l raft.Log
				reads := store.reads
				if err := c.GetLog(i, &l); errors.Is(err, raft.ErrLogNotFound) {
					continue // a gap the store never held
				} else {
					require.NoError(t, err)
				}
				assert.Len(t, l.Data, int(i))
				fromMemory := store.reads == reads
				assert.Equal(t, tc.cached[0] <= i && i <= tc.cached[1], fromMemory, "entry %d served from memory", i)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			assert.LessOrEqual(t, c.bytes, tc.maxBytes)
			if tc.cached[0] <= tc.cached[1] {
				assert.Equal(t, sizes(tc.cached[0], tc.cached[1]), c.bytes)
			} else {
				assert.Zero(t, c.bytes)
			}
		})
	}
}
