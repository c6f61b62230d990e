package tree

import "testing"

// SetSnapshotPaused makes every Snapshot.WriteTo call f each time it has
// released the read lock between two chunks, until the test ends. Tests
// that set it must not run in parallel.
func SetSnapshotPaused(t testing.TB, f func()) {
	snapshotPaused = f
	t.Cleanup(func() { snapshotPaused = nil })
}

// OpenSnapshots returns how many snapshots of t are open.
func (t *Tree) OpenSnapshots() int { return len(t.open) }

// Preserved returns how many nodes s keeps as they were, or -1 once it ended.
func (s *Snapshot) Preserved() int {
	s.guard.RLock()
	defer s.guard.RUnlock()
	if s.ended {
		return -1
	}
	return len(s.pre)
}

// SnapshotChunk is how many nodes WriteTo reads under one hold of the lock.
const SnapshotChunk = snapshotChunk
