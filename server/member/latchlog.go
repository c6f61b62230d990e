package member

import (
	"sync"

	"github.com/hashicorp/raft"
)

// latchedLog is a standalone durable server's log store: once a write to
// it failed, every later write fails with the same error, and the server
// stops serving clients (logBroken). A failed fsync may have dropped the
// pages it was to write, and a later one can succeed without them, so
// nothing is written after a failure; Raft, which steps down when a write
// fails, would otherwise stand again and go on writing. ZooKeeper exits on
// such a failure. A cluster member's overlapLog latches the same way.
type latchedLog struct {
	raft.LogStore
	onFail func() // called once, after the first failure

	mu  sync.Mutex
	err error
}

func (l *latchedLog) StoreLog(e *raft.Log) error {
	return l.StoreLogs([]*raft.Log{e})
}

func (l *latchedLog) StoreLogs(es []*raft.Log) error {
	return l.do(func() error { return l.LogStore.StoreLogs(es) })
}

func (l *latchedLog) DeleteRange(lo, hi uint64) error {
	return l.do(func() error { return l.LogStore.DeleteRange(lo, hi) })
}

// do runs a write, unless one failed before.
func (l *latchedLog) do(write func() error) error {
	l.mu.Lock()
	if l.err != nil {
		defer l.mu.Unlock()
		return l.err
	}
	err := write()
	l.err = err
	l.mu.Unlock()
	if err != nil && l.onFail != nil {
		l.onFail()
	}
	return err
}

// failed returns the error a write failed with, if one did.
func (l *latchedLog) failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// IsMonotonic passes the store's through (see logCache.IsMonotonic).
func (l *latchedLog) IsMonotonic() bool { return isMonotonic(l.LogStore) }
