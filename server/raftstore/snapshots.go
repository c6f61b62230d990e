package raftstore

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"sync"

	"github.com/hashicorp/raft"
)

// CheckedSnapshots is Raft's file snapshot store with what a snapshot
// damaged while the member runs needs. Raft checks a snapshot's CRC as it
// opens it (to send it to a follower, or to restore it): one that fails is
// reported, moved aside so that it is never offered again, and damaged is
// called, for the member to take a new one (a leader would otherwise send
// an older snapshot, followed by entries its log no longer holds).
type CheckedSnapshots struct {
	*raft.FileSnapshotStore
	dataDir string
	report  func(Finding)
	damaged func()

	mu  sync.Mutex // serializes moving snapshots aside
	ids map[string]bool
}

// NewCheckedSnapshots wraps store, whose snapshots are under dataDir.
func NewCheckedSnapshots(store *raft.FileSnapshotStore, dataDir string, report func(Finding), damaged func()) *CheckedSnapshots {
	return &CheckedSnapshots{FileSnapshotStore: store, dataDir: dataDir, report: report, damaged: damaged, ids: make(map[string]bool)}
}

// Open opens snapshot id, reading it whole to check its CRC.
func (s *CheckedSnapshots) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := s.FileSnapshotStore.Open(id)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && isDamage(err) {
		s.setAside(id, err)
	}
	return meta, rc, err
}

// Check opens snapshot id and reads it whole, as Open does, and closes it:
// a scrub of the snapshot. It reports whether it read whole.
func (s *CheckedSnapshots) Check(id string) bool {
	_, rc, err := s.Open(id)
	if err != nil {
		return false
	}
	rc.Close()
	return true
}

// setAside reports snapshot id damaged and moves it aside, once.
func (s *CheckedSnapshots) setAside(id string, why error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids[id] {
		return
	}
	s.ids[id] = true
	dir := filepath.Join(s.dataDir, snapshotsDir, id)
	f := Finding{File: dir, Offset: -1, What: "the snapshot does not read whole: " + why.Error(),
		Action: "moved aside; the member takes a new snapshot"}
	to, err := quarantineInto(dir, filepath.Join(s.dataDir, DamagedDir))
	if err != nil {
		f.Action = "cannot move it aside (" + err.Error() + "); the member takes a new snapshot"
	} else {
		f.Action = "moved to " + to + "; the member takes a new snapshot"
	}
	if s.report != nil {
		s.report(f)
	}
	if s.damaged != nil {
		s.damaged()
	}
}
