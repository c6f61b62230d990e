package server_test

import (
	"io"
	"log"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/server"
	"github.com/zkraft/zkraft/server/servertest"
)

func TestServer_Observe(t *testing.T) {
	srv := servertest.NewServer(t)
	var mu sync.Mutex
	var got []server.Change
	stop := srv.Observe(func(c server.Change) {
		mu.Lock()
		got = append(got, c)
		mu.Unlock()
	})
	conn, _, err := zk.Connect([]string{srv.ConnectString()}, 10*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)))
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Create("/a", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, err = conn.SetACL("/a", zk.WorldACL(zk.PermRead), -1)
	require.NoError(t, err)
	stop()
	stop() // idempotent
	_, err = conn.Create("/b", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 3, "the session, the create, the setACL; nothing after stop: %+v", got)
	assert.True(t, got[0].Sessions)
	assert.Empty(t, got[0].Paths)
	assert.Equal(t, []string{"/a", "/"}, got[1].Paths)
	assert.Equal(t, []string{"/a"}, got[2].Paths)
	assert.True(t, slices.IsSorted([]int64{got[0].Zxid, got[1].Zxid, got[2].Zxid}))
}

func TestServer_ClusterStandalone(t *testing.T) {
	srv := servertest.NewServer(t)
	// A fresh server may still be applying what its start committed: wait
	// for a view taken while nothing was applied.
	var v server.ClusterView
	require.Eventually(t, func() bool {
		before := srv.FSM().LastZxid()
		v = srv.Cluster()
		return len(v.Members) == 1 && v.Members[0].Applied == before && srv.FSM().LastZxid() == before && v.Members[0].Lag == 0
	}, 5*time.Second, time.Millisecond, "a view of a settled server")
	assert.Equal(t, v.Self, v.Leader)
	m := v.Members[0]
	assert.Equal(t, "standalone", m.Role)
	assert.Equal(t, srv.ConnectString(), m.Client)
}
