package integration

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

// A watcher is told only of changes to nodes it may read, as ZooKeeper
// (with the fix for CVE-2024-23944) decides at delivery; the one-shot watch
// is used up all the same. The cases and their outcomes were found against
// ZooKeeper 3.8 and are compared with it in TestRealzkRaw.
func TestWatches_OnlyForReadersOfTheNode(t *testing.T) {
	srv := servertest.NewServer(t)
	owner := mustConnect(t, srv.ConnectString())
	require.NoError(t, owner.AddAuth("digest", []byte("o:o")))
	watcher := mustConnect(t, srv.ConnectString())
	ownerOnly := zk.DigestACL(zk.PermAll, "o", "o")
	readable := append(zk.WorldACL(zk.PermRead), ownerOnly...)

	// roundTrip makes the watcher's connection catch up: a reply follows
	// every notification queued before it.
	roundTrip := func() {
		t.Helper()
		_, _, err := watcher.Exists("/")
		require.NoError(t, err)
	}
	// quiet checks, after a round trip, that no event came.
	quiet := func(ch <-chan zk.Event, what string) {
		t.Helper()
		roundTrip()
		select {
		case ev := <-ch:
			t.Errorf("%s: got %v, want no event", what, ev)
		default:
		}
	}

	_, _, hidden, err := watcher.ExistsW("/hidden")
	require.NoError(t, err)
	_, _, shown, err := watcher.ExistsW("/shown")
	require.NoError(t, err)
	_, err = owner.Create("/hidden", nil, 0, ownerOnly)
	require.NoError(t, err)
	_, err = owner.Create("/shown", nil, 0, readable)
	require.NoError(t, err)
	roundTrip()
	assert.Equal(t, zk.EventNodeCreated, eventNow(t, shown, "NodeCreated of a readable node").Type)
	quiet(hidden, "NodeCreated of a node only its owner may read")

	_, _, data, err := watcher.GetW("/shown")
	require.NoError(t, err)
	_, err = owner.SetACL("/shown", ownerOnly, -1)
	require.NoError(t, err)
	_, err = owner.Set("/shown", []byte("x"), -1)
	require.NoError(t, err)
	quiet(data, "NodeDataChanged after the ACL took READ away")
	_, err = owner.SetACL("/shown", readable, -1)
	require.NoError(t, err)
	_, err = owner.Set("/shown", []byte("y"), -1)
	require.NoError(t, err)
	quiet(data, "the suppressed event used the watch up")

	// Child events are checked against the parent's ACL.
	_, _, kids, err := watcher.ChildrenW("/shown")
	require.NoError(t, err)
	_, err = owner.Create("/shown/secret", nil, 0, ownerOnly)
	require.NoError(t, err)
	roundTrip()
	assert.Equal(t, zk.EventNodeChildrenChanged, eventNow(t, kids, "NodeChildrenChanged of a readable parent").Type)
}
