package integration

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/raftstore/damage"
	"github.com/zkraft/zkraft/server/servertest"
)

// diskNodes is how many znodes the disk tests write before the damage, and
// diskSnapCount the snapshot interval, so that the damaged member holds
// snapshots and a log past the newest.
const (
	diskNodes     = 200
	diskSnapCount = 60
)

// newDiskCluster starts three durable members with short snapshot
// intervals and writes diskNodes znodes, /d/n-<i> holding "v-<i>".
func newDiskCluster(t *testing.T) (*servertest.Cluster, *zk.Conn) {
	t.Helper()
	c := servertest.NewCluster(t, 3, servertest.WithDurable(), servertest.WithConfig(func(cfg *server.Config) {
		cfg.SnapCount = diskSnapCount
	}))
	cl := mustConnect(t, c.ConnectString())
	mustCreateRetried(t, cl, "/d", nil)
	writeDiskNodes(t, cl, 0, diskNodes)
	return c, cl
}

// writeDiskNodes writes /d/n-<from> to /d/n-<to-1>, retrying a write whose
// connection was lost.
func writeDiskNodes(t *testing.T, cl *zk.Conn, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		mustCreateRetried(t, cl, fmt.Sprintf("/d/n-%d", i), []byte(fmt.Sprintf("v-%d", i)))
	}
}

// pastSnapshot writes until member i has a snapshot and its log holds a
// few entries past it (the ones its restart replays), but not so many that
// it takes another soon: writing on, or waiting for the snapshot it is due.
func pastSnapshot(t *testing.T, c *servertest.Cluster, cl *zk.Conn, i int) {
	t.Helper()
	deadline := time.Now().Add(2 * waitTimeout)
	for n := 0; time.Now().Before(deadline); {
		snap, _, ok := c.Server(i).LastSnapshot()
		last := c.Server(i).FSM().LastZxid()
		switch {
		case ok && last > snap+5 && last-snap < diskSnapCount-10:
			return
		case ok && last-snap >= diskSnapCount:
			time.Sleep(5 * time.Millisecond) // a snapshot is due: Raft checks every 250-500 ms
		default:
			mustCreateRetried(t, cl, fmt.Sprintf("/pad-%d-%d", i, n), []byte("p"))
			waitApplied(t, c, i, c.Server(c.Leader()).FSM().LastZxid())
			n++
		}
	}
	t.Fatalf("member %d: no snapshot with a few entries past it", i)
}

// requireDiskNodes checks, through member i after a sync, that /d/n-0 to
// /d/n-<n-1> hold exactly what was written.
func requireDiskNodes(t *testing.T, c *servertest.Cluster, i, n int) {
	t.Helper()
	cl := mustConnect(t, c.Addr(i))
	_, err := cl.Sync("/d")
	require.NoError(t, err)
	for j := range n {
		data, _, err := cl.Get(fmt.Sprintf("/d/n-%d", j))
		require.NoError(t, err, "member %d: /d/n-%d", i, j)
		require.Equal(t, fmt.Sprintf("v-%d", j), string(data), "member %d serves /d/n-%d as written", i, j)
	}
	kids, _, err := cl.Children("/d")
	require.NoError(t, err)
	assert.Len(t, kids, n, "member %d: no node more, none less", i)
}

// waitRepaired waits until member i serves, has joined a leader and is no
// longer getting back what it lost.
func waitRepaired(t *testing.T, c *servertest.Cluster, i int) {
	t.Helper()
	require.Eventually(t, func() bool {
		srv := c.Server(i)
		st := srv.RaftStatus()
		return srv.Serving() && st.Joined && !st.Repairing && st.AppliedIndex >= st.JoinCommitIndex
	}, 30*time.Second, 5*time.Millisecond, "member %d serves again, repaired", i)
}

// TestDiskDamage_OneMember: each kind of damage done to one stopped
// member's files, the leader's or a follower's: restarted, it serves again
// on its own, every acknowledged write there and nothing damaged served,
// and the cluster takes writes throughout.
func TestDiskDamage_OneMember(t *testing.T) {
	for _, kind := range damage.Kinds {
		for _, role := range []string{"follower", "leader"} {
			t.Run(string(kind)+"/"+role, func(t *testing.T) {
				c, cl := newDiskCluster(t)
				victim := c.Leader()
				if role == "follower" {
					victim = (victim + 1) % 3
				}
				// The last append spans sectors, so that a torn write of
				// it leaves part of it.
				pastSnapshot(t, c, cl, victim)
				mustCreateRetried(t, cl, "/big", bytes.Repeat([]byte("b"), 16<<10))
				waitApplied(t, c, victim, c.Server(c.Leader()).FSM().LastZxid())
				c.Kill(victim)
				what, err := damage.Apply(c.DataDir(victim), kind, rand.New(rand.NewPCG(uint64(len(kind)), 7)))
				require.NoError(t, err)
				t.Log(what)
				writeDiskNodes(t, cl, diskNodes, diskNodes+20) // while it is down
				c.Restart(victim)
				waitRepaired(t, c, victim)
				writeDiskNodes(t, cl, diskNodes+20, diskNodes+40)
				for i := range 3 {
					requireDiskNodes(t, c, i, diskNodes+40)
				}
				m := monitorOf(c.Server(victim))
				if kind == damage.TornWrite {
					assert.Positive(t, m["torn_write_count"], "a torn write is told as one")
					assert.Zero(t, m["corruption_detected_count"], "a torn write is not corruption")
				} else {
					assert.Positive(t, m["corruption_detected_count"], "the damage is detected")
				}
			})
		}
	}
}

// TestDiskDamage_TwoMembers: the same damage on both followers at once: the
// leader, which kept everything, brings both back.
func TestDiskDamage_TwoMembers(t *testing.T) {
	for _, kind := range []damage.Kind{damage.FlipEntry, damage.ZeroBlock, damage.Truncate, damage.Meta, damage.Vote} {
		t.Run(string(kind), func(t *testing.T) {
			c, cl := newDiskCluster(t)
			leader := c.Leader()
			for i := range 3 {
				if i != leader {
					pastSnapshot(t, c, cl, i)
				}
			}
			var victims []int
			for i := range 3 {
				if i != leader {
					c.Kill(i)
					_, err := damage.Apply(c.DataDir(i), kind, rand.New(rand.NewPCG(uint64(i), 7)))
					require.NoError(t, err)
					victims = append(victims, i)
				}
			}
			for _, i := range victims {
				c.Restart(i)
			}
			for _, i := range victims {
				waitRepaired(t, c, i)
			}
			writeDiskNodes(t, cl, diskNodes, diskNodes+20)
			for i := range 3 {
				requireDiskNodes(t, c, i, diskNodes+20)
			}
		})
	}
}

// TestDiskDamage_LostMemberCannotElectAStaleLeader: a follower that lost
// acknowledged entries (its log's end zeroed) and a follower that is behind
// must not elect each other while the only member that holds everything is
// down; once it is back, nothing acknowledged is missing.
func TestDiskDamage_LostMemberCannotElectAStaleLeader(t *testing.T) {
	c, cl := newDiskCluster(t)
	leader := c.Leader()
	damaged, behind := (leader+1)%3, (leader+2)%3
	c.Kill(behind)
	writeDiskNodes(t, cl, diskNodes, diskNodes+50) // acknowledged by the leader and damaged
	zxid := c.Server(leader).FSM().LastZxid()
	waitApplied(t, c, damaged, zxid)
	c.Kill(damaged)
	c.Kill(leader)
	_, err := damage.Apply(c.DataDir(damaged), damage.Truncate, rand.New(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	c.Restart(damaged)
	c.Restart(behind)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = c.WaitForLeader(ctx)
	require.Error(t, err, "no leader while the only complete log is down")

	c.Restart(leader)
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.WaitForLeader(ctx)
	require.NoError(t, err)
	for i := range 3 {
		waitRepaired(t, c, i)
		requireDiskNodes(t, c, i, diskNodes+50)
	}
}

// monitorOf returns a server's mntr counters and gauges by name.
func monitorOf(srv *server.Server) map[string]int64 {
	m := make(map[string]int64)
	for _, f := range srv.Monitor() {
		if v, ok := f.Value.(int64); ok {
			m[f.Name] = v
		}
	}
	return m
}
