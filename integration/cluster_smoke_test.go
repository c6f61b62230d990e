package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/servertest"
)

func TestClusterSmoke(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	leader := c.Leader()
	require.GreaterOrEqual(t, leader, 0)
	follower := (leader + 1) % 3
	other := (leader + 2) % 3

	w := mustConnect(t, c.Addr(follower))
	_, err := w.Create("/x", []byte("via follower"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	data, _, err := w.Get("/x")
	require.NoError(t, err)
	assert.Equal(t, "via follower", string(data), "read your own write on a follower")

	r := mustConnect(t, c.Addr(other))
	_, err = r.Sync("/x")
	require.NoError(t, err)
	data, _, err = r.Get("/x")
	require.NoError(t, err)
	assert.Equal(t, "via follower", string(data))

	// Kill the leader: the others elect a new one and keep the data.
	c.Kill(leader)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	newLeader, err := c.WaitForLeader(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, leader, newLeader)
	// Members drop their clients while no leader is known, as ZooKeeper does
	// during an election; go-zookeeper reconnects by itself, and a request
	// caught in flight fails with a connection error, to be retried.
	require.NoError(t, retryOnConnLoss(func() error {
		_, err := w.Create("/y", nil, 0, zk.WorldACL(zk.PermAll))
		return err
	}))
	c.Restart(leader)
	_, err = c.WaitForLeader(ctx)
	require.NoError(t, err)
}

// retryOnConnLoss runs op until it succeeds or fails with something other
// than a lost connection, for at most 10s.
func retryOnConnLoss(op func() error) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := op()
		if !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrNoServer) || time.Now().After(deadline) {
			return err
		}
	}
}
