package member

import (
	"errors"
	"slices"
	"sync"

	"github.com/hashicorp/raft"
)

// overlapLog lets a durable cluster member send and take new entries
// while it writes the ones before to its own disk, as a ZooKeeper leader
// sends a proposal while it logs it and a follower takes the next while
// it logs one. hashicorp/raft's leader writes its log before it
// replicates, and its follower writes a request's entries before it takes
// the next request: each round of writes was two fsyncs in a row, the
// leader's and then a follower's, each on Raft's own goroutine.
//
// StoreLogs hands the entries to a writer goroutine and returns at once;
// the entries are read from memory until they are on disk, and everything
// queued while a write is under way goes in the next append.
//
// On the leader, Raft then counts itself among those that hold the entries
// before its write is done, and commits an entry once enough followers
// hold it. So that nothing is applied, shown to a client or acknowledged
// before a majority has it on disk, what Raft calls committed goes no
// further until the leader's own write is done too:
//   - the leader's state machine waits for it (waitDurable, before each
//     batch is applied and its commit notices go out), and
//   - the commit index the leader sends its followers is capped at it
//     (capCommit, in every AppendEntries).
//
// On a follower, Raft answers an AppendEntries as soon as it stored the
// entries here; the transport sends an answer that says a request
// succeeded only once the request's entries are on disk (waitWritten), so
// an answer still says the entries are on this member's disk. A follower
// applies without waiting for its own disk what a leader said is
// committed: that is on a majority's disks already.
//
// An entry a member lost in a crash before its write was done had been
// acknowledged by no one, so a later leader may replace it, as with any
// entry not committed. Entries that change the cluster (a leader's first
// no-op, configurations) are written before StoreLogs returns: Raft decides
// on membership changes from its commit index, which counts the leader.
type overlapLog struct {
	store raft.LogStore // the durable store; only the writer writes to it

	mu      sync.Mutex
	pending []*raft.Log // consecutive entries accepted and not yet on disk
	queued  int         // the bytes of data in pending
	durable uint64      // the last entry on disk: all those before it are too
	// epoch counts the deletions that reached the log's end (a new leader
	// replacing entries, a snapshot installed): an answer waiting for
	// entries stored before one must not say they are here.
	epoch   uint64
	err     error         // a write failed: every later call fails with it
	changed chan struct{} // closed (and replaced) when durable or err changes
	closed  bool
	wake    chan struct{} // the writer has entries to write
	done    chan struct{} // the writer has ended
}

// errLogClosed is what a call after close gets.
var errLogClosed = errors.New("raft log closed")

// maxQueuedBytes bounds the data of the entries waiting for the writer:
// past it, StoreLogs waits for the disk (a follower catching up takes a
// leader's requests faster than its disk writes them).
const maxQueuedBytes = 64 << 20

// newOverlapLog returns the log over store, its writer started.
func newOverlapLog(store raft.LogStore) (*overlapLog, error) {
	last, err := store.LastIndex()
	if err != nil {
		return nil, err
	}
	l := &overlapLog{store: store, durable: last,
		changed: make(chan struct{}), wake: make(chan struct{}, 1), done: make(chan struct{})}
	go l.write()
	return l, nil
}

// write writes the pending entries, all those waiting at once in one
// append, until close.
func (l *overlapLog) write() {
	defer close(l.done)
	for range l.wake {
		for {
			l.mu.Lock()
			batch := l.pending
			l.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			err := l.store.StoreLogs(batch)
			l.mu.Lock()
			if err != nil {
				l.err = err
			} else {
				l.durable = batch[len(batch)-1].Index
				for _, e := range batch {
					l.queued -= len(e.Data)
				}
				// Entries accepted meanwhile follow batch in pending (whose
				// array batch shares).
				n := copy(l.pending, l.pending[len(batch):])
				clear(l.pending[n:])
				l.pending = l.pending[:n]
			}
			l.signalLocked()
			l.mu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

func (l *overlapLog) signalLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// waitDurable waits until the entry at index is on disk, and reports
// true. Once a write has failed it never will be: it then waits for stop
// (the member stopping) and reports false. Raft counts a batch it handed
// the state machine as applied whatever the state machine did, so a member
// must not go on applying, or snapshot (failed), past an entry it skipped.
// Without a failure it does not give up at stop: the writer runs until
// after Raft has shut down, and a snapshot must not miss a batch.
func (l *overlapLog) waitDurable(index uint64, stop <-chan struct{}) bool {
	if l.flushTo(index) == nil {
		return true
	}
	<-stop
	return false
}

// writeEpoch returns the current epoch, to hand waitWritten: taken before
// Raft handles an AppendEntries, so that a deletion after it is seen.
func (l *overlapLog) writeEpoch() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epoch
}

// written reports whether every entry up to index is on disk.
func (l *overlapLog) written(index uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.durable >= index
}

// waitWritten waits until every entry up to index is on disk and reports
// true, or reports false as soon as entries were deleted from the log's
// end since epoch was taken (the entries an answer would vouch for may be
// gone) or the member stops. It returns the error a write failed with.
func (l *overlapLog) waitWritten(index, epoch uint64, stop <-chan struct{}) (bool, error) {
	return l.wait(index, &epoch, stop)
}

// wait waits until every entry up to index is on disk (true), a write
// failed (its error), stop closes (ErrClosed) or, if epoch is set, the
// log's end was deleted since it was taken (false).
func (l *overlapLog) wait(index uint64, epoch *uint64, stop <-chan struct{}) (bool, error) {
	for {
		l.mu.Lock()
		written, gone, err, ch := l.durable >= index, epoch != nil && l.epoch != *epoch, l.err, l.changed
		l.mu.Unlock()
		switch {
		case gone:
			return false, nil
		case written:
			return true, nil
		case err != nil:
			return false, err
		}
		select {
		case <-ch:
		case <-stop:
			return false, ErrClosed
		}
	}
}

// failed returns the error a write failed with, if one did.
func (l *overlapLog) failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// capCommit returns the commit index a leader may tell its followers:
// no entry past its own disk's.
func (l *overlapLog) capCommit(commit uint64) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return min(commit, l.durable)
}

func (l *overlapLog) StoreLog(log *raft.Log) error { return l.StoreLogs([]*raft.Log{log}) }

// StoreLogs queues the entries for the writer and returns. It waits until
// they are on disk if they change the cluster (a no-op, a configuration),
// or if more than maxQueuedBytes wait for the writer.
func (l *overlapLog) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	wait := slices.ContainsFunc(logs, func(e *raft.Log) bool {
		return e.Type == raft.LogNoop || e.Type == raft.LogConfiguration
	})
	l.mu.Lock()
	if err := l.failedLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	if n := len(l.pending); n > 0 && logs[0].Index != l.pending[n-1].Index+1 {
		// Not after what is queued: a member that led, then restored a
		// snapshot past it. What is queued goes first.
		last := l.pending[n-1].Index
		l.mu.Unlock()
		if err := l.flushTo(last); err != nil {
			return err
		}
		l.mu.Lock()
		if err := l.failedLocked(); err != nil {
			l.mu.Unlock()
			return err
		}
	}
	l.pending = append(l.pending, logs...)
	for _, e := range logs {
		l.queued += len(e.Data)
	}
	wait = wait || l.queued > maxQueuedBytes
	select { // under mu: Close closes wake under it
	case l.wake <- struct{}{}:
	default:
	}
	l.mu.Unlock()
	if !wait {
		return nil
	}
	return l.flushTo(logs[len(logs)-1].Index)
}

func (l *overlapLog) failedLocked() error {
	if l.err != nil {
		return l.err
	}
	if l.closed {
		return errLogClosed
	}
	return nil
}

// flushTo waits until every entry up to index is on disk, or a write
// failed.
func (l *overlapLog) flushTo(index uint64) error {
	_, err := l.wait(index, nil, nil)
	return err
}

// pendingLocked returns the entry at index if it waits for the writer.
func (l *overlapLog) pendingLocked(index uint64) *raft.Log {
	if len(l.pending) == 0 {
		return nil
	}
	first := l.pending[0].Index
	if index < first || index-first >= uint64(len(l.pending)) {
		return nil
	}
	return l.pending[index-first]
}

func (l *overlapLog) GetLog(index uint64, log *raft.Log) error {
	l.mu.Lock()
	if e := l.pendingLocked(index); e != nil {
		*log = *e
		l.mu.Unlock()
		return nil
	}
	l.mu.Unlock()
	return l.store.GetLog(index, log)
}

func (l *overlapLog) FirstIndex() (uint64, error) {
	first, err := l.store.FirstIndex()
	if err != nil || first != 0 {
		return first, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) > 0 {
		return l.pending[0].Index, nil
	}
	// The writer may have stored the entries since the store was asked.
	return l.store.FirstIndex()
}

func (l *overlapLog) LastIndex() (uint64, error) {
	l.mu.Lock()
	if n := len(l.pending); n > 0 {
		last := l.pending[n-1].Index
		l.mu.Unlock()
		return last, nil
	}
	l.mu.Unlock()
	return l.store.LastIndex()
}

// DeleteRange deletes entries from the store. Raft deletes the oldest
// entries behind a snapshot (on disk long since), all of them when it
// installs a snapshot and, on a member that does not lead, a tail a new
// leader replaces: entries still pending are written first, so that
// nothing is written after its deletion. A deletion that reaches the log's
// end moves the epoch on (see waitWritten).
func (l *overlapLog) DeleteRange(lo, hi uint64) error {
	l.mu.Lock()
	waiting := len(l.pending) > 0 && hi >= l.pending[0].Index
	last := l.durable
	if n := len(l.pending); n > 0 {
		last = l.pending[n-1].Index
	}
	l.mu.Unlock()
	if waiting {
		if err := l.flushTo(last); err != nil {
			return err
		}
	}
	if err := l.store.DeleteRange(lo, hi); err != nil {
		return err
	}
	l.mu.Lock()
	if hi >= last {
		l.epoch++
		l.signalLocked()
	}
	if lo <= l.durable && l.durable <= hi {
		l.durable = lo - 1
	}
	l.mu.Unlock()
	return nil
}

// IsMonotonic passes the store's through (see logCache.IsMonotonic).
func (l *overlapLog) IsMonotonic() bool { return isMonotonic(l.store) }

// Close writes what is pending and stops the writer; the store stays open.
func (l *overlapLog) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.wake) // the writer writes what is pending, then ends
	l.mu.Unlock()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	l.signalLocked()
	return l.err
}
