package member

import (
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/raftfsm"
)

// A standalone in-memory server's snapshot is kept by the in-memory store
// as the nothing it captured; opening it fails rather than handing anyone
// an empty tree as the state at its index.
func TestUnreadSnapshot_KeptEmptyAndNeverOpened(t *testing.T) {
	fsm := notifyingFSM{FSM: raftfsm.New(nil), committed: func(uint64, uint64) {}, unread: true}
	snap, err := fsm.Snapshot()
	require.NoError(t, err)
	assert.Equal(t, unreadSnapshot{}, snap, "nothing captured")

	store := &memSnapshotStore{}
	sink, err := store.Create(raft.SnapshotVersionMax, 10, 1, raft.Configuration{}, 1, nil)
	require.NoError(t, err)
	require.NoError(t, snap.Persist(sink))
	metas, err := store.List()
	require.NoError(t, err)
	require.Len(t, metas, 1)
	assert.Equal(t, uint64(10), metas[0].Index, "Raft may drop its log up to here")
	_, _, err = store.Open(metas[0].ID)
	assert.ErrorIs(t, err, errUnreadSnapshot)

	captured, err := notifyingFSM{FSM: raftfsm.New(nil), committed: func(uint64, uint64) {}}.Snapshot()
	require.NoError(t, err)
	assert.NotEqual(t, unreadSnapshot{}, captured, "a member that may send its snapshot captures the state")
}
