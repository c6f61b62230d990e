package member

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkraft/zkraft/server/raftstore"
)

// The scrub.
//
// A durable member reads back from its disk only what it needs: the log
// past its newest snapshot when it restarts, the entries a follower behind
// is sent, a snapshot when it restores or sends one. Damage anywhere else
// (the log behind the snapshot, older snapshots) would lie there unseen
// until the day it is needed. So the member re-reads all of it in the
// background, at a bounded rate (scrubRate bytes a second: a snapshot is
// read whole at once, then the scrub waits as long as reading its size at
// that rate takes), once every scrubInterval, straight from the disk (not
// the caches in front of it), and repairs what it finds:
//   - a damaged entry the newest snapshot holds: the log is dropped up to
//     it (a follower that needs what went is sent the snapshot);
//   - one past the snapshot that the member has applied: it takes a
//     snapshot first, then drops the log up to it (a restart would
//     otherwise stop there and need the leader);
//   - a damaged snapshot: moved aside, and a new one taken
//     (raftstore.CheckedSnapshots).

// Scrub defaults.
const (
	scrubRate     = 8 << 20 // bytes a second
	scrubInterval = time.Hour
	// scrubStart is how long after the start the first pass begins.
	scrubStart = time.Minute
)

// scrubber is a durable member's scrub state.
type scrubber struct {
	log   raftstore.Log               // the store itself, under the caches
	snaps *raftstore.CheckedSnapshots // Raft's snapshot store
	rate  int64                       // bytes a second
	every time.Duration
	first time.Duration
	// passes counts completed passes (tests wait on it).
	passes chan struct{}
}

// scrub runs the scrub until the member stops.
func (n *Node) scrub() {
	s := n.scrubber
	wait := s.first
	for {
		select {
		case <-time.After(wait):
		case <-n.quit:
			return
		}
		if err := n.scrubPass(); err != nil {
			if errors.Is(err, ErrClosed) {
				return
			}
			n.log.Warn("scrub", "err", err)
		}
		select {
		case s.passes <- struct{}{}:
		default:
		}
		wait = s.every
	}
}

// scrubPass re-reads the log up to what is applied, then the snapshots.
func (n *Node) scrubPass() error {
	s := n.scrubber
	r := n.raftNow()
	if r == nil {
		return nil
	}
	first, err := s.log.FirstIndex()
	if err != nil {
		return err
	}
	applied := r.AppliedIndex()
	pace := newPacer(s.rate)
	var l raft.Log
	for i := max(first, 1); i <= applied && first > 0; i++ {
		if n.stopping() {
			return ErrClosed
		}
		err := raftstore.ReadEntry(s.log, i, &l)
		switch {
		case errors.Is(err, raft.ErrLogNotFound):
			continue // dropped meanwhile (compaction)
		case err != nil && !raftstore.IsCorrupt(err):
			return err
		case err != nil || l.Index != i || !raftstore.Intact(&l):
			why := "the entry does not match its checksum"
			if err != nil {
				why = "the entry cannot be read: " + err.Error()
			}
			n.repairEntry(i, why)
			continue
		}
		pace.took(len(l.Data)+len(l.Extensions), n.quit)
	}
	list, err := s.snaps.List()
	if err != nil {
		return err
	}
	for _, meta := range list {
		if n.stopping() {
			return ErrClosed
		}
		s.snaps.Check(meta.ID) // reports and repairs what it finds
		pace.took(int(meta.Size), n.quit)
	}
	return nil
}

// repairEntry reports the damaged entry at index, which the member has
// applied, and drops the log up to it, once a snapshot holds it.
func (n *Node) repairEntry(index uint64, why string) {
	n.noteFinding(raftstore.Finding{Index: index, Offset: -1, What: why, Action: n.dropUpTo(index)})
}

// dropUpTo drops the log up to the damaged entry at index, which the member
// has applied, taking a snapshot first if none holds it yet, and says what
// it did.
func (n *Node) dropUpTo(index uint64) string {
	if n.stats.lastSnapIndex.Load() < index {
		if err := n.raftNow().Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
			return "left in place: no snapshot could be taken to hold it (" + err.Error() + ")"
		}
	}
	if n.stats.lastSnapIndex.Load() < index {
		return "left in place: no snapshot holds it yet"
	}
	first, err := n.raftLog.FirstIndex()
	if err == nil && first <= index {
		err = n.raftLog.DeleteRange(first, index)
	}
	if err != nil {
		return "left in place: the log could not be dropped up to it (" + err.Error() + ")"
	}
	return fmt.Sprintf("dropped the log up to index %d: a follower that needs it is sent the snapshot", index)
}

// snapshotDamaged takes a new snapshot in place of one found damaged: a
// leader first commits a barrier, so that there is something new to
// snapshot.
func (n *Node) snapshotDamaged() {
	n.goOwned("snapshot-damaged", func() {
		r := n.raftNow()
		if r == nil {
			return
		}
		if r.State() == raft.Leader {
			_ = n.barrier(n.cfg.RaftTimeout * 10).Error()
		}
		if err := r.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
			n.log.Warn("take a snapshot in place of a damaged one", "err", err)
		}
	})
}

// pacer keeps a reader to a rate in bytes a second.
type pacer struct {
	rate  int64
	start time.Time
	read  int64
}

func newPacer(rate int64) *pacer { return &pacer{rate: rate, start: time.Now()} }

// took notes n bytes read and waits, if ahead of the rate, until it is not
// (or quit closes).
func (p *pacer) took(n int, quit <-chan struct{}) {
	p.read += int64(n)
	ahead := time.Duration(float64(p.read)/float64(p.rate)*float64(time.Second)) - time.Since(p.start)
	if ahead < 10*time.Millisecond {
		return
	}
	select {
	case <-time.After(ahead):
	case <-quit:
	}
}
