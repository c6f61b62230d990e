package member

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkraft/zkraft/raftfsm"
)

// memSnapshotStore is an in-memory raft.SnapshotStore that keeps only the
// latest snapshot, and keeps it as the FSM's captured state rather than as
// bytes: the state is serialized only when the snapshot is opened, to send
// it to a follower or to restore from it. Snapshots of an in-memory member
// mostly exist so that Raft may drop its log, and are never opened.
type memSnapshotStore struct {
	mu     sync.Mutex // guards latest
	latest *memSnapshot
}

type memSnapshot struct {
	meta raft.SnapshotMeta
	kept raft.FSMSnapshot // the captured state, or nil when data holds bytes
	data []byte
}

var _ raft.SnapshotStore = (*memSnapshotStore)(nil)

func (m *memSnapshotStore) Create(version raft.SnapshotVersion, index, term uint64, conf raft.Configuration,
	confIndex uint64, _ raft.Transport) (raft.SnapshotSink, error) {
	meta := raft.SnapshotMeta{
		Version: version, ID: fmt.Sprintf("%d-%d-%d", term, index, time.Now().UnixMilli()),
		Index: index, Term: term, Configuration: conf, ConfigurationIndex: confIndex,
	}
	return &memSink{store: m, snap: &memSnapshot{meta: meta}}, nil
}

func (m *memSnapshotStore) List() ([]*raft.SnapshotMeta, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.latest == nil {
		return nil, nil
	}
	meta := m.latest.meta
	return []*raft.SnapshotMeta{&meta}, nil
}

// latestIndex returns the index of the latest snapshot, or 0.
func (m *memSnapshotStore) latestIndex() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.latest == nil {
		return 0
	}
	return m.latest.meta.Index
}

// Open returns the snapshot's bytes, serializing a kept state first.
func (m *memSnapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	m.mu.Lock()
	snap := m.latest
	m.mu.Unlock()
	if snap == nil || snap.meta.ID != id {
		return nil, nil, fmt.Errorf("open snapshot %s: no such snapshot", id)
	}
	data := snap.data
	if snap.kept != nil {
		var sink bufferSink
		if err := snap.kept.Persist(&sink); err != nil {
			return nil, nil, fmt.Errorf("serialize snapshot %s: %w", id, err)
		}
		data = sink.Bytes()
	}
	meta := snap.meta
	meta.Size = int64(len(data))
	return &meta, io.NopCloser(bytes.NewReader(data)), nil
}

// memSink collects a snapshot: bytes (one received from a leader) or a kept state.
type memSink struct {
	store  *memSnapshotStore
	snap   *memSnapshot
	buf    bytes.Buffer
	closed bool // Persist closes a sink, and Raft closes it again: once counts
}

var _ raftfsm.Keeper = (*memSink)(nil)

func (s *memSink) Write(p []byte) (int, error) { return s.buf.Write(p) }
func (s *memSink) ID() string                  { return s.snap.meta.ID }
func (s *memSink) Cancel() error               { return nil }
func (s *memSink) Keep(f raft.FSMSnapshot)     { s.snap.kept = f }

func (s *memSink) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.snap.kept == nil {
		s.snap.data = s.buf.Bytes()
		s.snap.meta.Size = int64(len(s.snap.data))
	}
	s.store.mu.Lock()
	old := s.store.latest
	s.store.latest = s.snap
	s.store.mu.Unlock()
	if old != nil && old.kept != nil {
		raftfsm.Discard(old.kept)
	}
	return nil
}

// bufferSink is a plain in-memory raft.SnapshotSink.
type bufferSink struct{ bytes.Buffer }

func (*bufferSink) ID() string    { return "buffer" }
func (*bufferSink) Cancel() error { return nil }
func (*bufferSink) Close() error  { return nil }
