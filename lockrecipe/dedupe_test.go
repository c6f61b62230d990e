package lockrecipe

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

// TestContender_DeletesLateDuplicates plays the cluster case in which a
// create whose reply was lost lands after the listing that looked for it,
// so that the attempt made a second node: the duplicate before the holder
// acquires is deleted by the wait, the one after by the release.
func TestContender_DeletesLateDuplicates(t *testing.T) {
	srv := servertest.NewServer(t)
	conn, _, err := zk.Connect([]string{srv.ConnectString()}, 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	q := newQueue(conn, "/dedupe", mutexKey, nil)
	c := newContender(&q)
	require.NoError(t, c.create(ctx, mutexName, nil))
	c.uncertain = true // as after a lost reply
	go c.guard()
	duplicate := func() string {
		p, err := conn.Create(childPath(q.dir, c.prefix+mutexName), nil, zk.FlagEphemeralSequential, q.opts.acl)
		require.NoError(t, err)
		return p
	}
	first := duplicate()
	require.NoError(t, c.await(ctx, mutexKey, exclusive, true))
	ok, _, err := conn.Exists(first)
	require.NoError(t, err)
	assert.False(t, ok, "the wait deleted the duplicate")

	duplicate()
	require.NoError(t, c.release())
	names, _, err := conn.Children(q.dir)
	require.NoError(t, err)
	assert.Empty(t, names, "the release deleted the late duplicate")
}
