package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
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

// logStores are the durable Raft log stores, each as a servertest option.
var logStores = []struct {
	name string
	opt  servertest.Option
}{
	{server.LogStoreBolt, func(c *server.Config) { c.LogStore = server.LogStoreBolt }},
	{server.LogStoreWAL, func(c *server.Config) { c.LogStore = server.LogStoreWAL }},
}

func TestClusterDurableRestart(t *testing.T) {
	for _, store := range logStores {
		t.Run(store.name, func(t *testing.T) { testClusterDurableRestart(t, store.opt) })
	}
}

func testClusterDurableRestart(t *testing.T, store servertest.Option) {
	c := servertest.NewCluster(t, 3, servertest.WithDurable(), store)
	cl := mustConnect(t, c.Addr(0))
	for i := range 50 { // a leader change under load costs a connection: retried
		require.NoError(t, retryOnConnLoss(func() error {
			_, err := cl.Create("/d-", []byte{byte(i)}, zk.FlagSequence, zk.WorldACL(zk.PermAll))
			return err
		}))
	}
	require.NoError(t, retryOnConnLoss(func() error {
		_, err := cl.Create("/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		if errors.Is(err, zk.ErrNodeExists) {
			return nil // a try whose connection was lost made it
		}
		return err
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := c.WaitForLeader(ctx)
	require.NoError(t, err)
	leader := c.Server(l)
	zxid, digest := leader.FSM().LastZxid(), leader.FSM().Digest()
	for i := range 3 { // every member has applied everything before the kill
		for c.Server(i).FSM().LastZxid() < zxid {
			require.NoError(t, ctx.Err())
			time.Sleep(5 * time.Millisecond)
		}
	}
	for i := range 3 {
		c.Kill(i)
	}
	for i := range 3 {
		c.Restart(i)
	}
	_, err = c.WaitForLeader(ctx)
	require.NoError(t, err)
	for i := range 3 {
		// Raft re-applies the durable log once the new leader commits.
		srv := c.Server(i)
		for srv.FSM().LastZxid() < zxid {
			require.NoError(t, ctx.Err())
			time.Sleep(5 * time.Millisecond)
		}
	}
	// The restarted cluster has the same tree (the session survived too,
	// so its ephemeral is still there).
	l, err = c.WaitForLeader(ctx)
	require.NoError(t, err)
	got := c.Server(l).FSM()
	assert.Equal(t, digest, got.Digest())
	assert.Equal(t, zxid, got.LastZxid(), "no write since the restart")
}

// /zookeeper/config lists the members on every member, as a ZooKeeper
// ensemble's does: "server.N=host:port1:port2:participant" lines in id
// order, then the version; not a logged write, so mzxid 0 and version -1.
// Each member sets it for itself (TestFSM_ConfigSurvivesRestore: and keeps
// it through a snapshot restore).
func TestCluster_ConfigNodeListsTheMembers(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	var want strings.Builder
	for _, p := range c.Server(0).Config().Servers {
		_, port1, _ := net.SplitHostPort(p.RaftAddr)
		_, port2, _ := net.SplitHostPort(p.ForwardAddr)
		fmt.Fprintf(&want, "server.%d=127.0.0.1:%s:%s:participant\n", p.ID, port1, port2)
	}
	want.WriteString("version=0")
	for i := range 3 {
		zc := mustConnect(t, c.Addr(i))
		data, stat, err := zc.Get("/zookeeper/config")
		require.NoError(t, err)
		assert.Equal(t, want.String(), string(data), "member %d", i+1)
		assert.Equal(t, int32(-1), stat.Version)
		assert.Zero(t, stat.Mzxid)
		assert.Equal(t, int32(len(want.String())), stat.DataLength)
	}
	// A member that restarts in memory catches up and still lists the
	// members.
	follower := (c.Leader() + 1) % 3
	zc := mustConnect(t, c.Addr(c.Leader()))
	for i := range 50 {
		_, err := zc.Create(fmt.Sprintf("/n%d", i), nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	c.Kill(follower)
	c.Restart(follower)
	zf := mustConnect(t, c.Addr(follower))
	_, err := zf.Sync("/")
	require.NoError(t, err)
	data, stat, err := zf.Get("/zookeeper/config")
	require.NoError(t, err)
	assert.Equal(t, want.String(), string(data))
	assert.Equal(t, int32(-1), stat.Version)
}
