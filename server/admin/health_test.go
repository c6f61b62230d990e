package admin_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server/admin"
	"github.com/zkraft/zkraft/server/servertest"
)

func TestHealth_Standalone(t *testing.T) {
	srv := servertest.NewServer(t)
	a := startAdmin(t, srv.Server)
	for _, path := range []string{"/livez", "/readyz"} {
		status, body := get(t, a.URL()+path)
		assert.Equal(t, http.StatusOK, status, path)
		assert.Equal(t, "ok\n", body, path)
	}
	require.NoError(t, srv.Close())
	for _, path := range []string{"/livez", "/readyz"} {
		status, body := get(t, a.URL()+path)
		assert.Equal(t, http.StatusServiceUnavailable, status, path)
		assert.Contains(t, body, "shut down", path)
	}
}

// TestHealth_ClusterElection cuts the leader off: it is no longer ready
// (while alive) once it knows no leader, the others are ready again once
// they have elected one, and all are ready once the cluster heals.
func TestHealth_ClusterElection(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leader, err := c.WaitForLeader(ctx)
	require.NoError(t, err)
	admins := make([]*admin.Admin, 3)
	for i := range admins {
		admins[i] = startAdmin(t, c.Server(i))
	}
	ready := func(i int) bool {
		status, _ := get(t, admins[i].URL()+"/readyz")
		return status == http.StatusOK
	}
	for i := range admins {
		waitFor(t, 10*time.Second, "member ready", func() bool { return ready(i) })
	}

	var others []int
	for i := range 3 {
		if i != leader {
			others = append(others, i)
		}
	}
	c.Partition([]int{leader}, others)
	waitFor(t, 20*time.Second, "the cut-off leader not ready", func() bool { return !ready(leader) })
	status, body := get(t, admins[leader].URL()+"/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.True(t, strings.HasPrefix(body, "not ready: "), body)
	status, _ = get(t, admins[leader].URL()+"/livez")
	assert.Equal(t, http.StatusOK, status, "a member without a leader is still alive")
	// Past syncLimit ticks it stops serving: commands that need a serving
	// member say so, as ZooKeeper's do; monitor still answers.
	waitFor(t, 20*time.Second, "the cut-off leader not serving", func() bool { return !c.Server(leader).Serving() })
	m, keys := command(t, admins[leader], "srvr")
	assert.Equal(t, []string{"command", "error"}, keys)
	assert.Equal(t, "srvr", m["command"], "the name asked for")
	assert.Equal(t, "This ZooKeeper instance is not currently serving requests", m["error"])
	m, _ = command(t, admins[leader], "monitor")
	assert.Nil(t, m["error"])
	for _, i := range others {
		waitFor(t, 20*time.Second, "a member of the majority ready under a new leader", func() bool { return ready(i) })
	}
	m, _ = command(t, admins[others[0]], "leader")
	assert.NotEqual(t, float64(leader+1), m["leader_id"], "a new leader")
	m, _ = command(t, admins[others[0]], "monitor")
	assert.GreaterOrEqual(t, m["looking_count"], 1.0, "it lost its leader")
	assert.GreaterOrEqual(t, m["cnt_election_time"], 2.0, "the first election and this one")

	c.Heal()
	for i := range admins {
		waitFor(t, 20*time.Second, "every member ready after healing", func() bool { return ready(i) })
	}
	m, _ = command(t, admins[leader], "monitor")
	assert.GreaterOrEqual(t, m["cnt_unavailable_time"], 2.0, "its start and the time it was cut off")
}

// TestHealth_RestartedMemberCatchesUp restarts a durable member that
// missed writes (its log ends where it stopped): once ready, it has applied
// at least what the cluster had committed before it came back.
func TestHealth_RestartedMemberCatchesUp(t *testing.T) {
	c := servertest.NewCluster(t, 3, servertest.WithDurable())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leader, err := c.WaitForLeader(ctx)
	require.NoError(t, err)
	behind := (leader + 1) % 3
	conn := connect(t, c.Addr(leader))
	for i := range 50 { // in the log it restarts with
		create(t, conn, "/before"+strconv.Itoa(i), nil)
	}
	c.Kill(behind)
	for i := range 200 {
		create(t, conn, "/n"+strconv.Itoa(i), make([]byte, 100))
	}
	committed := c.Server(leader).RaftStatus().CommitIndex
	c.Restart(behind)
	a := startAdmin(t, c.Server(behind))
	waitFor(t, 20*time.Second, "the restarted member ready", func() bool {
		status, _ := get(t, a.URL()+"/readyz")
		return status == http.StatusOK
	})
	st := c.Server(behind).RaftStatus()
	assert.True(t, st.Joined)
	assert.GreaterOrEqual(t, st.JoinCommitIndex, committed, "the cluster's commit index when it joined")
	assert.GreaterOrEqual(t, st.AppliedIndex, committed)
}

// create makes a node, again after a lost connection (a busy machine can
// cost a leader its lease): one that exists was made by a try whose reply
// was lost.
func create(t *testing.T, conn *zk.Conn, path string, data []byte) {
	t.Helper()
	waitFor(t, 20*time.Second, "create "+path, func() bool {
		_, err := conn.Create(path, data, 0, zk.WorldACL(zk.PermAll))
		switch {
		case err == nil, errors.Is(err, zk.ErrNodeExists):
			return true
		case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrSessionMoved):
			return false
		}
		t.Fatalf("create %s: %v", path, err)
		return false
	})
}
