package member

import (
	"sync"

	"github.com/hashicorp/raft"
)

// logCache keeps the newest entries of a durable member's Raft log in
// memory, so that sending them to followers does not read them back from
// disk: at most maxEntries entries and maxBytes bytes (raft.LogCache bounds
// only the entries, which at 1 MiB each would keep a gigabyte).
type logCache struct {
	raft.LogStore

	maxEntries int
	maxBytes   int64

	mu     sync.Mutex  // guards the rest
	ring   []*raft.Log // entry i at ring[i%maxEntries], for lo <= i <= hi
	lo, hi uint64      // the cached indexes; none when lo > hi
	bytes  int64
}

func newLogCache(store raft.LogStore, maxEntries int, maxBytes int64) *logCache {
	return &logCache{LogStore: store, maxEntries: maxEntries, maxBytes: maxBytes,
		ring: make([]*raft.Log, maxEntries), lo: 1}
}

func (c *logCache) GetLog(index uint64, log *raft.Log) error {
	c.mu.Lock()
	if c.lo <= index && index <= c.hi {
		*log = *c.ring[index%uint64(c.maxEntries)]
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	return c.LogStore.GetLog(index, log)
}

func (c *logCache) StoreLog(log *raft.Log) error { return c.StoreLogs([]*raft.Log{log}) }

func (c *logCache) StoreLogs(logs []*raft.Log) error {
	if err := c.LogStore.StoreLogs(logs); err != nil {
		c.clear()
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range logs {
		if l.Index != c.hi+1 || c.lo > c.hi {
			c.clearLocked()
			c.lo = l.Index
		}
		c.hi = l.Index
		slot := &c.ring[l.Index%uint64(c.maxEntries)]
		if *slot != nil && c.hi-c.lo >= uint64(c.maxEntries) {
			c.dropOldestLocked()
		}
		*slot = l
		c.bytes += entryBytes(l)
		for c.bytes > c.maxBytes && c.lo <= c.hi {
			c.dropOldestLocked()
		}
	}
	return nil
}

func (c *logCache) DeleteRange(lo, hi uint64) error {
	c.clear()
	return c.LogStore.DeleteRange(lo, hi)
}

func (c *logCache) dropOldestLocked() {
	slot := &c.ring[c.lo%uint64(c.maxEntries)]
	c.bytes -= entryBytes(*slot)
	*slot = nil
	c.lo++
}

func (c *logCache) clear() {
	c.mu.Lock()
	c.clearLocked()
	c.mu.Unlock()
}

func (c *logCache) clearLocked() {
	for c.lo <= c.hi {
		c.dropOldestLocked()
	}
	c.lo, c.hi = 1, 0
}

// IsMonotonic reports whether the store below refuses gaps between
// indexes (raft-wal does): Raft then deletes the whole log when it
// installs a snapshot. It must see through this wrapper.
func (c *logCache) IsMonotonic() bool { return isMonotonic(c.LogStore) }

func isMonotonic(s raft.LogStore) bool {
	m, ok := s.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}
