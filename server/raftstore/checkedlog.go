package raftstore

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/hashicorp/raft"
)

// ErrCorruptEntry is returned by StoreLogs for an entry whose checksum does
// not match it: it was damaged before it reached this member.
var ErrCorruptEntry = errors.New("raftstore: entry does not match its checksum")

// CheckedLog is the log store Raft sees on a durable member: it seals every
// entry it stores that carries no checksum yet (see Seal), refuses one whose
// checksum does not match, and checks every entry it reads. A damaged entry
// reads as raft.ErrLogNotFound, which makes a leader send a follower its
// snapshot instead of the entry; it is reported once (see Finding).
//
// It must be the outermost store: the entries Raft hands it are the ones
// Raft then sends and applies, so their checksum is set before any of that.
type CheckedLog struct {
	raft.LogStore
	report func(Finding)
	// Marks, when set, is the record whose high-water mark a deletion of
	// the log's end lowers first; SealedFrom the first index stored with a
	// checksum (an entry from there on without one is damaged). Set them
	// before the log is used.
	Marks      *VoteRecord
	SealedFrom uint64
	// Fetch, when set, gets an entry whole from elsewhere (a cluster's
	// leader) when this log's copy reads damaged: Raft stops the process
	// when it cannot read an entry it must apply.
	Fetch func(index uint64, l *raft.Log) error

	mu       sync.Mutex // guards reported
	reported map[uint64]bool
}

// NewCheckedLog wraps store; report is told of each damaged entry read,
// once per index.
func NewCheckedLog(store raft.LogStore, report func(Finding)) *CheckedLog {
	return &CheckedLog{LogStore: store, report: report, reported: make(map[uint64]bool)}
}

// StoreLog implements raft.LogStore.
func (c *CheckedLog) StoreLog(l *raft.Log) error { return c.StoreLogs([]*raft.Log{l}) }

// StoreLogs seals the entries that carry no checksum and stores them; it
// stores none if one of them does not match its checksum.
func (c *CheckedLog) StoreLogs(logs []*raft.Log) error {
	for _, l := range logs {
		if !Intact(l) {
			c.reportOnce(l.Index, Finding{Index: l.Index, Offset: -1, What: "an entry received does not match its checksum",
				Action: "refused; the leader sends it again"})
			return fmt.Errorf("store raft log entry %d: %w", l.Index, ErrCorruptEntry)
		}
		Seal(l)
	}
	return c.LogStore.StoreLogs(logs)
}

// GetLog implements raft.LogStore: a damaged entry, or one the store
// cannot decode, is fetched whole from elsewhere (Fetch), or else reads as
// raft.ErrLogNotFound.
func (c *CheckedLog) GetLog(index uint64, l *raft.Log) error {
	err := c.getLog(index, l)
	if err != raft.ErrLogNotFound || c.Fetch == nil || !c.damaged(index) {
		return err
	}
	var fetched raft.Log
	if c.Fetch(index, &fetched) != nil || fetched.Index != index || !Sealed(&fetched) || !Intact(&fetched) {
		return raft.ErrLogNotFound
	}
	*l = fetched
	return nil
}

// damaged reports whether the entry at index was read damaged.
func (c *CheckedLog) damaged(index uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reported[index]
}

func (c *CheckedLog) getLog(index uint64, l *raft.Log) error {
	err := ReadEntry(c.LogStore, index, l)
	switch {
	case errors.Is(err, raft.ErrLogNotFound):
		return raft.ErrLogNotFound // Raft compares with ==
	case err != nil:
		if IsCorrupt(err) {
			c.reportOnce(index, Finding{Index: index, Offset: -1, What: "the log store cannot read the entry: " + err.Error(),
				Action: "read as missing; a follower that needs it is sent a snapshot"})
			return raft.ErrLogNotFound
		}
		return err
	case l.Index != index || !IntactFrom(l, c.SealedFrom):
		c.reportOnce(index, Finding{Index: index, Offset: -1, What: "the entry does not match its checksum",
			Action: "read as missing; a follower that needs it is sent a snapshot"})
		return raft.ErrLogNotFound
	}
	return nil
}

// DeleteRange implements raft.LogStore: a deletion of the log's end (a
// conflicting suffix, or the whole log as a snapshot is installed) lowers
// the high-water mark first.
func (c *CheckedLog) DeleteRange(lo, hi uint64) error {
	last, err := c.LogStore.LastIndex()
	if c.Marks == nil || err != nil || hi < last {
		return c.LogStore.DeleteRange(lo, hi)
	}
	return c.Marks.LowerMark(lo, func() error { return c.LogStore.DeleteRange(lo, hi) })
}

func (c *CheckedLog) reportOnce(index uint64, f Finding) {
	c.mu.Lock()
	first := !c.reported[index]
	if first && len(c.reported) < maxReported {
		c.reported[index] = true
	}
	c.mu.Unlock()
	if first && c.report != nil {
		c.report(f)
	}
}

// ReadEntry reads the entry at index from store, turning a panic of the
// store's decoding (raft-wal's panics on a varint longer than 64 bits, bbolt
// on a damaged page) or a fault on a mapped file into an error wrapping
// ErrDamaged: a damaged entry must never stop the process.
func ReadEntry(store raft.LogStore, index uint64, l *raft.Log) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: reading entry %d: %v", ErrDamaged, index, r)
		}
	}()
	return store.GetLog(index, l)
}

// maxReported bounds the indexes a CheckedLog remembers having reported.
const maxReported = 1 << 16

// IsMonotonic passes the store's through: raft-wal refuses gaps between
// indexes, and Raft must know it to delete the whole log when it installs a
// snapshot.
func (c *CheckedLog) IsMonotonic() bool {
	m, ok := c.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}
