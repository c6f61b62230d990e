package member

import (
	"io"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/raftfsm"
	"github.com/zkraft/zkraft/tree"
)

// The in-memory store keeps the latest snapshot's state open, however
// often Raft closes its sink, until a newer one replaces it; the replaced
// one is discarded.
func TestMemSnapshotStore_KeepsTheLatestOpen(t *testing.T) {
	fsm := raftfsm.New(nil)
	store := &memSnapshotStore{}
	take := func(index uint64) (raft.FSMSnapshot, string) {
		t.Helper()
		snap, err := fsm.Snapshot()
		require.NoError(t, err)
		sink, err := store.Create(raft.SnapshotVersionMax, index, 1, raft.Configuration{}, 1, nil)
		require.NoError(t, err)
		require.NoError(t, snap.Persist(sink))
		require.NoError(t, sink.Close(), "Raft closes the sink after Persist")
		snap.Release()
		return snap, sink.ID()
	}
	open := func(id string) error {
		t.Helper()
		_, rc, err := store.Open(id)
		if err != nil {
			return err
		}
		defer rc.Close()
		return raftfsm.New(nil).Restore(io.NopCloser(rc))
	}

	first, firstID := take(10)
	require.NoError(t, open(firstID), "the latest opens after its sink was closed twice and released")
	require.NoError(t, open(firstID), "and again")

	_, secondID := take(20)
	require.NoError(t, open(secondID))
	assert.Error(t, open(firstID), "only the latest is kept")
	var sink bufferSink
	assert.ErrorIs(t, first.Persist(&sink), tree.ErrSnapshotClosed, "the replaced state was discarded")
}

// A kept snapshot's sink is closed twice (by Persist, then by Raft), and
// counted once.
func TestTimedSnapshots_CountsAKeptSnapshotOnce(t *testing.T) {
	stats := new(Stats)
	store := timedSnapshots{SnapshotStore: &memSnapshotStore{}, stats: stats}
	snap, err := raftfsm.New(nil).Snapshot()
	require.NoError(t, err)
	sink, err := store.Create(raft.SnapshotVersionMax, 10, 1, raft.Configuration{}, 1, nil)
	require.NoError(t, err)
	require.NoError(t, snap.Persist(sink))
	require.NoError(t, sink.Close())
	snap.Release()
	assert.Equal(t, int64(1), stats.Snapshots.Load())
}
