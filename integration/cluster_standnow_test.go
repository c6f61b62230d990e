package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
)

// TestClusterFollowersStandWhenTheLeaderIsGone: when the leader's process
// goes, its connections break, and a follower that then cannot reach it
// stands for election at once, as a ZooKeeper follower goes LOOKING,
// instead of waiting out Raft's heartbeat timeout. With a Raft timeout of
// 5s no follower's own timer can fire within 5s of the kill (Raft draws it
// between one and two timeouts), so a leader elected sooner was elected by
// the broken connections.
func TestClusterFollowersStandWhenTheLeaderIsGone(t *testing.T) {
	const raftTimeout = 5 * time.Second
	c := servertest.NewCluster(t, 3, servertest.WithConfig(func(cfg *server.Config) { cfg.RaftTimeout = raftTimeout }))
	old := c.Leader()
	killed := time.Now()
	c.Kill(old)
	ctx, cancel := context.WithTimeout(context.Background(), 2*raftTimeout)
	defer cancel()
	leader, err := c.WaitForLeader(ctx)
	elapsed := time.Since(killed)
	if assert.NoError(t, err, "no new leader") {
		assert.Less(t, elapsed, raftTimeout, "elected before any follower's heartbeat timeout passed")
	}
	t.Logf("new leader %d elected %v after the kill", leader+1, elapsed.Round(time.Millisecond))
}
