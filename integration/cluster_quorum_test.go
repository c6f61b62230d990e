package integration

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
)

// TestClusterQuorumLoss kills two of three members, a follower and then the
// leader. The survivor finds its leader gone (its connections break) and
// no quorum to elect another, and does at once what a ZooKeeper follower
// does when its leader's connection breaks, not syncLimit ticks later: it
// drops its clients, so that they see Disconnected and try other servers,
// and refuses new ones at once, however often they come back. When a
// member returns and a leader is elected, the client gets its session
// back, with its ephemeral. (go-zookeeper's TestIntegration_NoQuorum
// checks the same against a real ensemble.) Durable members: an in-memory
// member restarted empty could not help elect a leader without the
// survivor's log (see server/member's vote guard).
func TestClusterQuorumLoss(t *testing.T) {
	// syncLimit 3s: far from what finding the leader gone takes.
	c := servertest.NewCluster(t, 3, servertest.WithDurable(),
		servertest.WithConfig(func(cfg *server.Config) { cfg.SyncLimit = 30 }))
	survivor := (c.Leader() + 1) % 3
	others := []int{(survivor + 1) % 3, (survivor + 2) % 3}
	client, rec := mustConnectInOrder(t, []string{c.Addr(survivor)}, 30*time.Second)
	_, err := client.Create("/eph", nil, zk.FlagEphemeral, openACL)
	require.NoError(t, err)
	id := client.SessionID()

	killed := time.Now()
	for _, i := range others {
		c.Kill(i)
	}
	rec.waitState(t, zk.StateDisconnected)
	lost := time.Since(killed)
	syncLimit := time.Duration(c.Server(survivor).Config().SyncLimit) * c.Server(survivor).Config().TickTime
	assert.Less(t, lost, syncLimit, "dropped at once, not after syncLimit ticks")
	assert.False(t, c.Server(survivor).Serving())

	// New clients are refused at once, without a reply, again and again.
	for range 3 {
		raw := dialRaw(t, c.Addr(survivor))
		raw.sendFrame(connectRequest().Append)
		start := time.Now()
		raw.expectClosed()
		assert.Less(t, time.Since(start), time.Second, "refused at once")
	}

	c.Restart(others[0])
	waitCondition(t, "the client back in its session", func() error {
		if client.State() != zk.StateHasSession {
			return errors.New("no session yet")
		}
		return nil
	})
	assert.Equal(t, id, client.SessionID(), "the same session")
	exists, _, err := client.Exists("/eph")
	require.NoError(t, err)
	assert.True(t, exists, "its ephemeral lived through the outage")
}
